//! An adapter process: started with its command (split at whitespace, no
//! shell), fed one request line at a time and read one reply line each,
//! under a time limit per reply and a size limit per line. A crash, a hang,
//! an over-long or malformed line is an error (one line, with the end of the
//! adapter's stderr); the process is killed when its [`Adapter`] is dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::protocol::{Reply, Request, parse_reply};

/// Lines of the adapter's stderr kept for an error message.
const STDERR_LINES: usize = 5;
/// Characters kept of each.
const STDERR_CHARS: usize = 300;

enum Line {
    Text(String),
    TooLong,
    Eof,
    Failed(String),
}

/// A running adapter.
pub struct Adapter {
    command: String,
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    from_child: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    timeout: Duration,
    max_bytes: u64,
}

/// How to start an adapter.
pub struct Spawn<'a> {
    pub command: &'a str,
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    pub max_bytes: u64,
    /// The working directory (the adapter's own data directory's parent is the run's build directory).
    pub cwd: Option<&'a Path>,
}

impl Adapter {
    /// Starts the adapter; an error names the command.
    pub fn start(s: &Spawn<'_>) -> std::result::Result<Adapter, String> {
        let mut words = s.command.split_whitespace();
        let program = words.next().ok_or_else(|| "no adapter command (external.adapter, --adapter CMD)".to_string())?;
        let mut cmd = Command::new(program);
        cmd.args(words).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in s.env {
            cmd.env(k, v);
        }
        if let Some(d) = s.cwd {
            cmd.current_dir(d);
        }
        let mut child = cmd.spawn().map_err(|e| format!("start adapter `{}`: {e}", s.command))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("start adapter `{}`: no pipes", s.command));
        };
        let (to_child, requests) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            let mut stdin = stdin;
            for line in requests {
                if stdin.write_all(&line).and_then(|_| stdin.flush()).is_err() {
                    break;
                }
            }
        });
        let (send, from_child) = mpsc::channel();
        let max = s.max_bytes;
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                let line = match r.by_ref().take(max + 1).read_until(b'\n', &mut buf) {
                    Ok(0) => Line::Eof,
                    Ok(_) if buf.last() != Some(&b'\n') && buf.len() as u64 > max => Line::TooLong,
                    Ok(_) => {
                        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                            buf.pop();
                        }
                        Line::Text(String::from_utf8_lossy(&buf).into_owned())
                    }
                    Err(e) => Line::Failed(e.to_string()),
                };
                let last = !matches!(line, Line::Text(_));
                if send.send(line).is_err() || last {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = tail.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                let mut t = keep.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == STDERR_LINES {
                    t.pop_front();
                }
                t.push_back(line.chars().take(STDERR_CHARS).collect());
            }
        });
        Ok(Adapter {
            command: s.command.to_string(),
            child,
            to_child: Some(to_child),
            from_child,
            stderr: tail,
            timeout: s.timeout,
            max_bytes: s.max_bytes,
        })
    }

    /// The end of the adapter's stderr, for an error message.
    fn stderr_tail(&self) -> String {
        // The stderr reader may still be draining what a crash wrote.
        std::thread::sleep(Duration::from_millis(50));
        let t = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if t.is_empty() { String::new() } else { format!("; its stderr ends: {}", t.iter().cloned().collect::<Vec<_>>().join(" | ")) }
    }

    /// The exit status, waiting a little for it.
    fn exit_status(&mut self) -> String {
        let since = Instant::now();
        while since.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.to_string();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        "still running".into()
    }

    /// Sends `request` and reads its reply (checked by [`parse_reply`]).
    pub fn call(&mut self, request: &Request<'_>) -> std::result::Result<Reply, String> {
        let op = request.op();
        let mut line = serde_json::to_vec(request).map_err(|e| format!("serialise {op}: {e}"))?;
        line.push(b'\n');
        let sent = self.to_child.as_ref().is_some_and(|tx| tx.send(line).is_ok());
        if !sent {
            let status = self.exit_status();
            return Err(format!("adapter `{}` is gone ({status}) before {op}{}", self.command, self.stderr_tail()));
        }
        match self.from_child.recv_timeout(self.timeout) {
            Ok(Line::Text(text)) => parse_reply(op, &text).map_err(|e| format!("adapter `{}`: {e}", self.command)),
            Ok(Line::TooLong) => {
                self.kill();
                Err(format!("adapter `{}`: its reply to {op} is longer than external.max_reply_bytes = {}", self.command, self.max_bytes))
            }
            Ok(Line::Failed(e)) => Err(format!("adapter `{}`: read its reply to {op}: {e}", self.command)),
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                Err(format!("adapter `{}` exited ({status}) without replying to {op}{}", self.command, self.stderr_tail()))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(format!(
                    "adapter `{}` did not reply to {op} within external.reply_timeout_s = {} s; it was killed{}",
                    self.command,
                    self.timeout.as_secs(),
                    self.stderr_tail()
                ))
            }
        }
    }

    /// Closes its stdin and waits for it to exit (killed past the time limit).
    pub fn finish(mut self) -> std::result::Result<(), String> {
        self.to_child = None;
        let since = Instant::now();
        while since.elapsed() < self.timeout {
            match self.child.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(s)) => return Err(format!("adapter `{}` exited ({s}) after end{}", self.command, self.stderr_tail())),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("adapter `{}`: wait: {e}", self.command)),
            }
        }
        self.kill();
        Err(format!("adapter `{}` did not exit within external.reply_timeout_s after end; it was killed", self.command))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.to_child = None;
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}
