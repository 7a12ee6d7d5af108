//! Upstream text made fit for a log: every URL's query and anything shaped like a key replaced.
//!
//! An upstream's message can carry a secret: an agent's URL with its `?key=`, an agent service's body
//! ("Incorrect API key provided: sk-…"), a header echoed back. Such text is never sent to a client
//! (the gateway replaces it: its `client_error` module), and every log site that writes it passes it
//! through [`redact`] first, whichever crate it is in (a failover, a health check, a backend that
//! cannot be used).

/// `text` with every URL's query and anything shaped like a secret replaced, for the log: key-shaped
/// words (`sk-…`, `key=…`, `token=…`, a JWT, an AWS access key id) and the word after an
/// authentication scheme (`Bearer`, `Basic`, `Authorization:`), whatever it looks like.
pub fn redact(text: &str) -> String {
    let mut after_scheme = false;
    text.split(' ')
        .map(|word| {
            let lower = word.to_ascii_lowercase();
            let bare = lower.trim_matches(|c: char| !c.is_ascii_alphanumeric());
            let secret_follows = matches!(bare, "bearer" | "basic" | "authorization" | "x-api-key" | "api-key");
            let redacted = if word.contains("://") {
                redact_url(word)
            } else if (after_scheme && !word.is_empty() && !matches!(bare, "bearer" | "basic")) || looks_like_a_secret(word, &lower) {
                "[redacted]".to_string()
            } else {
                word.to_string()
            };
            if !word.is_empty() {
                after_scheme = secret_follows;
            }
            redacted
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A URL with what may hold a secret replaced: the user and password before `@`, and the query.
fn redact_url(word: &str) -> String {
    let scheme_end = word.find("://").map_or(0, |at| at + 3);
    let (head, rest) = word.split_at(scheme_end);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => format!("[redacted]@{}", &rest[at + 1..]),
        None => rest.to_string(),
    };
    match rest.find('?') {
        Some(q) => format!("{head}{}?[redacted]", &rest[..q]),
        None => format!("{head}{rest}"),
    }
}

fn looks_like_a_secret(word: &str, lower: &str) -> bool {
    let trimmed = word.trim_matches(|c: char| "\"'`,;()[]{}<>".contains(c));
    lower.contains("sk-")
        || lower.contains("key=")
        || lower.contains("token=")
        || lower.contains("secret=")
        || lower.contains("signature=")
        || trimmed.starts_with("eyJ") && trimmed.matches('.').count() >= 2
        || (trimmed.starts_with("AKIA") || trimmed.starts_with("ASIA")) && trimmed.len() >= 16
        || lower.starts_with("bearer") && word.len() > 6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whatever_follows_an_authentication_scheme_is_redacted_in_the_log() {
        let logged = redact(
            "sent Authorization: Bearer abc.def-plain and Basic dXNlcjpwYXNz; x-api-key: hunter2 (token eyJhbGciOi.eyJzdWIi.sig) by AKIAIOSFODNN7EXAMPLE",
        );
        for secret in ["abc.def-plain", "dXNlcjpwYXNz", "hunter2", "eyJhbGciOi", "AKIAIOSFODNN7EXAMPLE"] {
            assert!(!logged.contains(secret), "{secret} in {logged}");
        }
        assert!(logged.starts_with("sent Authorization: Bearer [redacted] and Basic [redacted]"), "{logged}");
        assert_eq!(redact("a plain message, nothing to hide"), "a plain message, nothing to hide");
    }

    #[test]
    fn a_urls_user_and_password_are_redacted_with_its_query() {
        assert_eq!(redact("ws://user:hunter2@kokoro:8080/ws?key=x failed"), "ws://[redacted]@kokoro:8080/ws?[redacted] failed");
        assert_eq!(redact("https://agent.example.com/a@b"), "https://agent.example.com/a@b", "an @ in the path is not a password");
        assert_eq!(redact("http://127.0.0.1:8080/ping"), "http://127.0.0.1:8080/ping");
    }

    #[test]
    fn the_log_keeps_the_story_without_the_secrets() {
        let logged = redact("GET https://agent.example.com/x?key=s3cret failed: Incorrect API key provided: sk-abcd1234 with key=zzz");
        assert!(logged.contains("https://agent.example.com/x?[redacted]"), "{logged}");
        for secret in ["s3cret", "sk-abcd1234", "zzz"] {
            assert!(!logged.contains(secret), "{secret} in {logged}");
        }
    }
}
