//! Which web pages may reach a gateway that asks for no credentials (`earshot serve` without
//! `--auth token`): only its own names, so that a page elsewhere on the web cannot use a browser as a
//! way in.
//!
//! Two attacks need no credentials when the gateway asks for none. A page on another site posts to
//! `http://127.0.0.1:8787/v1/speak`: a `text/plain` or form POST is a "simple" request that browsers
//! send without a CORS preflight, so it reaches the gateway (the page cannot read the answer, but the
//! gateway spends upstream). Browsers name that page in `Origin`, so an `Origin` whose host is not
//! one of the gateway's names is refused (`403 origin_not_allowed`). A DNS-rebinding page is
//! same-origin from the browser's view (its name now points at 127.0.0.1) and can read `/healthz`
//! too; its requests carry its own name in `Host`, so a `Host` that is not one of the gateway's
//! names is refused (`403 host_not_allowed`). Tools that are not browsers (curl, the SDKs) send no
//! `Origin` and the name they dialled in `Host`, so they are served as before.
//!
//! The names allowed: the loopback names (`localhost` and its subdomains, `127.0.0.1` and the rest of
//! 127/8, `[::1]`), the address the server is bound to, and any given with `--allowed-hosts`; `*` turns
//! the check off. See the Fetch standard's CORS protocol (<https://fetch.spec.whatwg.org/#http-cors-protocol>)
//! and RFC 6454 (the `Origin` header).

use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;

/// The names a gateway answers to when it asks for no credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// Every name (`--allowed-hosts '*'`): the operator has put something else in front.
    Any,
    /// The loopback names and these (lower case, without a port).
    Names(Vec<String>),
}

impl AllowedHosts {
    /// The loopback names and `extra` (`*` among them: any name).
    pub fn loopback_and(extra: &[String]) -> AllowedHosts {
        if extra.iter().any(|h| h.trim() == "*") {
            return AllowedHosts::Any;
        }
        AllowedHosts::Names(extra.iter().map(|h| normalise(h)).filter(|h| !h.is_empty()).collect())
    }

    /// Whether `host` (a `Host` value or an origin's host, with or without a port) is one of the names.
    pub fn allows(&self, host: &str) -> bool {
        let name = normalise(strip_port(host));
        match self {
            AllowedHosts::Any => true,
            AllowedHosts::Names(names) => is_loopback(&name) || names.contains(&name),
        }
    }
}

fn normalise(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// `host:port` → `host`; `[::1]:8787` → `[::1]`; a bare IPv6 literal in brackets stays whole.
fn strip_port(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_loopback(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost") || name == "[::1]" || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host of an `Origin` value (`scheme://host[:port]`); `None` for `null` or anything else.
fn origin_host(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// The middleware: refuses a request whose `Host` (HTTP/1) or authority (HTTP/2), or whose `Origin`,
/// names a host the gateway does not answer to.
pub async fn check(allowed: AllowedHosts, request: Request, next: Next) -> Response {
    let host =
        request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_string).or_else(|| request.uri().authority().map(|a| a.to_string()));
    if let Some(host) = host.filter(|h| !allowed.allows(h)) {
        let message = format!(
            "this gateway asks for no credentials and answers only to its own names, not `{}`: call it by one of them, or start it with --allowed-hosts (or --auth token)",
            strip_port(&host)
        );
        return ApiError::forbidden("host_not_allowed", message).into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        if !origin_host(origin).is_some_and(|h| allowed.allows(h)) {
            let message = format!(
                "this gateway asks for no credentials and takes no request from a page at `{origin}`: serve the page from one of its names, or start it with --allowed-hosts (or --auth token)"
            );
            return ApiError::forbidden("origin_not_allowed", message).into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_the_ones_given_are_allowed_with_any_port() {
        let allowed = AllowedHosts::loopback_and(&["Speech.Example.com".into(), "10.0.0.5".into()]);
        for host in [
            "localhost",
            "localhost:8787",
            "app.localhost:3000",
            "127.0.0.1:8787",
            "127.1.2.3",
            "[::1]:8787",
            "[::1]",
            "speech.example.com",
            "10.0.0.5:80",
            "LOCALHOST.",
        ] {
            assert!(allowed.allows(host), "{host}");
        }
        for host in ["rebind.example", "localhost.example.com", "127.0.0.1.nip.io", "[::2]:8787", "10.0.0.6", "speech.example.com.evil"] {
            assert!(!allowed.allows(host), "{host}");
        }
        assert!(AllowedHosts::loopback_and(&["*".into()]).allows("anything.example"));
    }

    #[test]
    fn an_origins_host_is_read_from_its_scheme_and_authority() {
        assert_eq!(origin_host("http://127.0.0.1:8787"), Some("127.0.0.1:8787"));
        assert_eq!(origin_host("https://evil.example"), Some("evil.example"));
        assert_eq!(origin_host("null"), None);
    }
}
