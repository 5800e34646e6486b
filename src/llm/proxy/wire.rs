//! The proxy's HTTP/1.1, on `std::net` alone: one request per connection
//! (every answer says `Connection: close`), a body only with
//! `Content-Length` (no chunked uploads), `Expect: 100-continue` honoured.
//! Reading a request is bounded: its head by [`MAX_HEAD_BYTES`], its body
//! by the proxy's `max_request_bytes`, the whole read by one deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Most bytes of a request line and headers.
pub(super) const MAX_HEAD_BYTES: usize = 64 << 10;
/// Most bytes of an oversized body read (and dropped) after a 413, so the
/// client, still sending, reads the answer instead of a reset connection.
const MAX_DRAIN_BYTES: u64 = 64 << 20;
/// How long that drain may take.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// A request as read.
#[derive(Debug)]
pub(super) struct Request {
    pub method: String,
    /// Without its query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why no request was read.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The client closed the connection before sending anything.
    Closed,
    /// Not HTTP/1.x as the proxy takes it (400).
    Bad(String),
    /// A body without `Content-Length` (411).
    LengthRequired,
    /// `Content-Length` above the limit (413); the declared length.
    TooLarge(u64),
    /// The request did not arrive within the read timeout (408).
    TimedOut,
}

/// A reader that gives up at `deadline`.
struct Deadline<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request read timeout"));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf).map_err(|e| match e.kind() {
            // A socket read timeout surfaces as WouldBlock on Unix.
            std::io::ErrorKind::WouldBlock => std::io::Error::new(std::io::ErrorKind::TimedOut, "request read timeout"),
            _ => e,
        })
    }
}

fn io_error(e: std::io::Error) -> ReadError {
    match e.kind() {
        std::io::ErrorKind::TimedOut => ReadError::TimedOut,
        _ => ReadError::Bad(format!("reading the request: {e}")),
    }
}

/// Reads one request from `stream` within `timeout`, its body at most `max_body` bytes.
pub(super) fn read_request(stream: &TcpStream, max_body: u64, timeout: Duration) -> Result<Request, ReadError> {
    let mut reader = BufReader::new(Deadline { stream, deadline: Instant::now() + timeout });
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = (&mut reader)
            .take((MAX_HEAD_BYTES + 1 - head.len().min(MAX_HEAD_BYTES)) as u64)
            .read_until(b'\n', &mut line)
            .map_err(io_error)?;
        if n == 0 {
            return if head.is_empty() { Err(ReadError::Closed) } else { Err(ReadError::Bad("the request head ends early".into())) };
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD_BYTES {
            return Err(ReadError::Bad(format!("request line and headers longer than {MAX_HEAD_BYTES} bytes")));
        }
        if !line.ends_with(b"\n") {
            return Err(ReadError::Bad("the request head ends early".into()));
        }
        if line == b"\r\n" || line == b"\n" {
            if head.len() == line.len() {
                // Blank lines before a request line are allowed (RFC 9112 2.2).
                head.clear();
                continue;
            }
            break;
        }
    }
    let head = String::from_utf8(head).map_err(|_| ReadError::Bad("request head is not UTF-8".into()))?;
    let mut lines = head.split('\n').map(|l| l.trim_end_matches('\r'));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(ReadError::Bad(format!("malformed request line {:?}", crate::http::excerpt(request_line, 80))));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(ReadError::Bad(format!("unsupported protocol {:?} (HTTP/1.1 or HTTP/1.0)", crate::http::excerpt(version, 20))));
    }
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((k, v)) = line.split_once(':') else {
            return Err(ReadError::Bad(format!("malformed header line {:?}", crate::http::excerpt(line, 80))));
        };
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut req =
        Request { method: method.to_string(), path: target.split('?').next().unwrap_or_default().to_string(), headers, body: Vec::new() };
    if req.header("transfer-encoding").is_some() {
        return Err(ReadError::LengthRequired);
    }
    let length = match req.header("content-length") {
        None if req.method == "POST" => return Err(ReadError::LengthRequired),
        None => 0,
        Some(v) => {
            v.parse::<u64>().map_err(|_| ReadError::Bad(format!("Content-Length {:?} is not a number", crate::http::excerpt(v, 30))))?
        }
    };
    if length > max_body {
        return Err(ReadError::TooLarge(length));
    }
    if length > 0 && req.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        let mut w = stream;
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").map_err(io_error)?;
    }
    (&mut reader).take(length).read_to_end(&mut req.body).map_err(io_error)?;
    if (req.body.len() as u64) < length {
        return Err(ReadError::Bad(format!("the body ends after {} of its {length} bytes", req.body.len())));
    }
    Ok(req)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// Writes a JSON answer and closes the connection.
pub(super) fn write_response(stream: &TcpStream, status: u16, body: &str) {
    let mut w = stream;
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    // A client gone away is nothing the proxy can tell it about.
    let _ = w.write_all(head.as_bytes()).and_then(|()| w.write_all(body.as_bytes())).and_then(|()| w.flush());
}

/// After answering an oversized request: stop writing and read (bounded)
/// what the client still sends, so closing does not reset the connection
/// before the client has read the answer.
pub(super) fn drain(stream: &TcpStream, declared: u64) {
    let _ = stream.shutdown(Shutdown::Write);
    let mut reader = Deadline { stream, deadline: Instant::now() + DRAIN_TIMEOUT };
    let _ = std::io::copy(&mut (&mut reader).take(declared.min(MAX_DRAIN_BYTES)), &mut std::io::sink());
}
