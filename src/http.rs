//! The one HTTP exchange both model boundaries (`llm` and `embed`) send
//! through: POST a JSON body, read the answer, and sort transport failures
//! into a timeout (worth retrying), an unreachable server, or anything else.
//! Retry policy and error types stay with each caller.

/// Longest wait between two attempts: the doubling backoff stops here, so
/// a run's sleeping is bounded by the retry count (at most 10, see
/// `config::BOUNDS`) times this.
pub(crate) const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(60);

/// What one POST came to.
pub(crate) enum Exchange {
    /// The server answered, with any status.
    Answered { status: u16, body: String },
    /// No answer within the agent's timeout.
    TimedOut,
    /// No connection at all (refused, reset, unresolvable host, bad URL).
    Unreachable(String),
    /// Any other transport failure.
    Failed(String),
}

/// POSTs `payload` as JSON to `url`, with a bearer token when `api_key` is
/// set, reading at most `body_limit` bytes of the answer.
pub(crate) fn post_json(agent: &ureq::Agent, url: &str, payload: &str, api_key: Option<&str>, body_limit: u64) -> Exchange {
    let mut call = agent.post(url).header("Content-Type", "application/json");
    if let Some(key) = api_key {
        call = call.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = match call.send(payload) {
        Ok(r) => r,
        Err(e) => return classify(e),
    };
    let status = response.status().as_u16();
    match response.body_mut().with_config().limit(body_limit).read_to_string() {
        Ok(body) => Exchange::Answered { status, body },
        Err(e) => classify(e),
    }
}

fn classify(e: ureq::Error) -> Exchange {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Timeout(_) => Exchange::TimedOut,
        ureq::Error::Io(io) if io.kind() == ErrorKind::TimedOut => Exchange::TimedOut,
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::NotConnected
                    | ErrorKind::AddrNotAvailable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
            ) =>
        {
            Exchange::Unreachable(io.to_string())
        }
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed | ureq::Error::BadUri(_) => Exchange::Unreachable(e.to_string()),
        other => Exchange::Failed(other.to_string()),
    }
}

/// At most `max_chars` characters of an answer body, for error messages.
pub(crate) fn excerpt(text: &str, max_chars: usize) -> String {
    let t: String = text.chars().take(max_chars).collect();
    if t.len() < text.len() { format!("{t}…") } else { t }
}
