//! A scripted in-process HTTP server for fault injection: it answers the
//! n-th connection with the n-th scripted reply and records every request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A status and a JSON (or any) body.
    Status(u16, String),
    /// Wait, then reply.
    After(Duration, Box<Reply>),
    /// A status whose JSON body echoes the request's headers and path, as
    /// some servers do in their 401 answers.
    EchoHeaders(u16),
}

impl Reply {
    pub fn ok(body: impl Into<String>) -> Self {
        Reply::Status(200, body.into())
    }
    /// An OpenAI chat completion whose message content is `content`.
    pub fn openai(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
        });
        Reply::ok(body.to_string())
    }
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }
}

pub struct FakeServer {
    pub url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl FakeServer {
    pub fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(script);
        let next = Arc::new(AtomicUsize::new(0));
        let rec = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let n = next.fetch_add(1, Ordering::SeqCst);
                let reply = script.get(n).cloned().unwrap_or(Reply::Status(599, "script exhausted".into()));
                let rec = rec.clone();
                std::thread::spawn(move || serve(stream, reply, rec));
            }
        });
        FakeServer { url, received }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, reply: Reply, rec: Arc<Mutex<Vec<Received>>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let echo = serde_json::json!({
        "error": "unauthorized",
        "path": path,
        "headers": headers.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
    })
    .to_string();
    rec.lock().unwrap().push(Received { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() });
    let mut reply = reply;
    if let Reply::EchoHeaders(status) = reply {
        reply = Reply::Status(status, echo);
    }
    while let Reply::After(d, inner) = reply {
        std::thread::sleep(d);
        reply = *inner;
    }
    if let Reply::Status(status, body) = reply {
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.flush();
    }
}
