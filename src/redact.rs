//! Keeping credentials out of what memform writes and prints: the API key
//! (`MEMFORM_LLM_API_KEY`), bearer tokens, and the user:password part of
//! a server URL (`http://user:key@host`).

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// `url` without its userinfo: `http://user:key@host/p` → `http://[redacted]@host/p`.
pub fn url(url: &str) -> String {
    match userinfo(url) {
        Some(info) => url.replacen(&format!("{info}@"), &format!("{REDACTED}@"), 1),
        None => url.to_string(),
    }
}

/// The `user:password` part of `url`, if it has one.
pub fn userinfo(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let at = authority.rfind('@')?;
    Some(&authority[..at]).filter(|s| !s.is_empty())
}

/// `text` with the userinfo of every URL in it replaced, wherever it
/// stands (a config value, a `--set llm_url=…` argument, an error message):
/// `run --set llm_url=http://u:k@h` → `run --set llm_url=http://[redacted]@h`.
/// A URL's authority ends at `/`, `?`, `#`, whitespace, a quote or `>`.
pub fn urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(|c: char| "/?#\"'<>`".contains(c) || c.is_whitespace()).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) if at > 0 && &authority[..at] != REDACTED => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Serialises a URL without its userinfo (for a config value, so `run.json`,
/// the report and every comparison of configs never hold the password).
pub fn serialize_url<S: serde::Serializer>(u: &str, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&url(u))
}

/// This process's command line as the lock file records it: arguments
/// with whitespace quoted, bytes that are not UTF-8 shown as U+FFFD, and
/// the userinfo of every URL in it replaced ([`urls_in`]).
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args_os()
        .map(|a| {
            let a = urls_in(&a.to_string_lossy());
            if a.contains(char::is_whitespace) { format!("{a:?}") } else { a }
        })
        .collect();
    args.join(" ")
}

/// `text` with every occurrence of each secret (and of each secret's
/// password half, for `user:password`), the userinfo of every URL
/// ([`urls_in`]) and every bearer token replaced. Secrets shorter than 4
/// characters are left (they would mangle text).
pub fn text(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    let mut all: Vec<&str> = Vec::new();
    for s in secrets {
        all.push(s);
        if let Some((_, password)) = s.split_once(':') {
            all.push(password);
        }
    }
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for s in all.into_iter().filter(|s| s.trim().len() >= 4) {
        out = out.replace(s, REDACTED);
    }
    bearer(&urls_in(&out))
}

/// Every `Bearer <token>` (any case) with the token replaced.
fn bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut from = 0;
    while let Some(i) = lower[from..].find("bearer ").map(|i| i + from) {
        let start = i + "bearer ".len();
        let token_len = text[start..].find(|c: char| c.is_whitespace() || "\"',;\\".contains(c)).unwrap_or(text.len() - start);
        if token_len > 0 && &text[start..start + token_len] != REDACTED {
            out.push_str(&text[last..start]);
            out.push_str(REDACTED);
            last = start + token_len;
        }
        from = start + token_len.max(1).min(text.len() - start);
        if from >= text.len() {
            break;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// The environment variable the LLM client's API key is read from
/// (`llm::API_KEY_ENV`).
pub const LLM_API_KEY_ENV: &str = "MEMFORM_LLM_API_KEY";

/// The secrets this process knows from its environment: the API key and
/// the userinfo of `MEMFORM_LLM_URL`.
pub fn env_secrets() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(k) = std::env::var(LLM_API_KEY_ENV) {
        out.push(k.trim().to_string());
    }
    if let Ok(u) = std::env::var("MEMFORM_LLM_URL")
        && let Some(info) = userinfo(&u)
    {
        out.push(info.to_string());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// [`text`] with [`env_secrets`]: what the CLI applies to every line it prints.
pub fn scrub(message: &str) -> String {
    let secrets = env_secrets();
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    text(message, &refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo() {
        assert_eq!(url("http://user:sk-123@host:8/v1"), "http://[redacted]@host:8/v1");
        assert_eq!(url("https://h.example/a@b"), "https://h.example/a@b", "an @ in the path is not userinfo");
        assert_eq!(url("http://127.0.0.1:8765"), "http://127.0.0.1:8765");
        assert_eq!(userinfo("http://u:p@h"), Some("u:p"));
        assert_eq!(userinfo("no scheme"), None);
    }

    #[test]
    fn every_url_in_a_text_loses_its_userinfo() {
        let t = "run --set llm_url=http://user:KEY-1@host:8/v1 --set x=\"https://TOKEN@h\" ftp://h/p@q mailto:a@b http://[redacted]@h";
        let r = urls_in(t);
        assert!(!r.contains("KEY-1") && !r.contains("TOKEN") && !r.contains("user:"), "{r}");
        assert!(r.contains("llm_url=http://[redacted]@host:8/v1"), "{r}");
        assert!(r.contains("\"https://[redacted]@h\""), "{r}");
        assert!(r.contains("ftp://h/p@q mailto:a@b http://[redacted]@h"), "an @ after the authority, or no scheme: kept: {r}");
        assert_eq!(urls_in("no urls here, ünïcode ://"), "no urls here, ünïcode ://");
        assert!(!text("error: http://u:pw@h: refused", &[]).contains("pw"));
    }

    #[test]
    fn secrets_and_bearer_tokens_are_replaced() {
        let t = r#"{"headers":{"authorization":"Bearer sk-live-XYZ","x":"u:pw-9999"}} bearer abc. BEARER "#;
        let r = text(t, &["sk-live-XYZ", "u:pw-9999"]);
        assert!(!r.contains("sk-live-XYZ") && !r.contains("pw-9999") && !r.contains("abc."), "{r}");
        assert!(r.contains("Bearer [redacted]") && r.contains("bearer [redacted]"), "{r}");
        assert_eq!(text("plain words", &["ab"]), "plain words");
        assert_eq!(text("ünïcode bearer", &[]), "ünïcode bearer");
    }
}
