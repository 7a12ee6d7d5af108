//! Serving the router on a socket of its own (`earshot serve`), with what a server facing real
//! clients needs and `axum::serve` leaves out: a time limit on a connection's first bytes (whichever
//! protocol it will speak) and on request headers, caps on the size and count of request headers, on
//! connections and on the streams of one HTTP/2 connection, and a shutdown that drains live
//! conversations for a bounded time.
//!
//! The caps that hold a server's capacity, together: at most `max_connections` connections (over it,
//! `503 server_busy` and closed), of which at most `max_connections_per_address` from one client address
//! (over it, `429 too_many_connections` and closed: [`crate::address_slots`]); each must show its protocol within `header_timeout` (the first bytes
//! of an HTTP/1 request, or HTTP/2's whole 24-byte preface), else it is closed unanswered; an HTTP/2
//! connection carries at most `max_streams_per_connection` requests at once (more are refused by
//! HTTP/2's own flow, `REFUSED_STREAM`); a connection with no request in flight for `idle_timeout` is
//! closed, HTTP/1 keep-alive and HTTP/2 alike, and so is one whose responses have held a frame their client
//! did not take for `write_timeout` with nothing else on it moving ([`crate::idle`]); IPv6 callers are
//! counted against the per-address cap by their `/64` (`ipv6_prefix`); and the gateway speaks at most
//! `max_conversations` at once whatever the connections (over it, `503 server_busy` with `Retry-After`).
//!
//! Written on hyper-util's connection builder and graceful-shutdown watcher (the pieces `axum::serve`
//! is made of), because axum's own server offers no header timeout and no connection cap. The body's
//! time limit and its declared length are checked in the `/v1/speak` handler, where the error can be
//! the API's JSON. On Lambda none of this applies: the function URL front end owns the connection.
//!
//! Shutdown, on SIGTERM or SIGINT alike: stop accepting; let live conversations finish for up to the
//! drain time; then end each that is left with a retryable `shutting_down` error; then exit, waiting
//! at most a short grace for clients that do not read.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::address_slots::AddressSlots;
use crate::idle::{BusyBody, IdleWatch};

/// Limits of the socket server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerLimits {
    /// The longest a client may take to send a request's headers (a slow client holds a connection
    /// for no longer).
    pub header_timeout: Duration,
    /// Connections open at once; any more are answered 503 and closed.
    pub max_connections: usize,
    /// Connections open at once from one client address (0: no cap); any more are answered 429 and closed.
    pub max_connections_per_address: usize,
    /// Requests one HTTP/2 connection may have open at once.
    pub max_streams_per_connection: u32,
    /// The most bytes of request headers (names and values) a request may carry, and the most header
    /// fields; over either it is answered 431 with the API's JSON error. Common servers cap headers
    /// at 8 to 16 KiB. Far over the cap (see [`HARD_HEADER_BYTES`]) hyper stops reading and answers a
    /// bare 431 itself.
    pub max_header_bytes: usize,
    /// The most header fields a request may carry; over it the request is answered 431.
    pub max_headers: usize,
    /// How long a connection may stay open with no request in flight (a keep-alive HTTP/1 connection,
    /// an HTTP/2 connection with no stream): past it, it is closed and its slot given back.
    pub idle_timeout: Duration,
    /// How long a response may hold a frame its client does not take (an HTTP/2 window left at zero, an
    /// HTTP/1 client that never reads) with nothing else on its connection moving: past it, the connection is
    /// closed and its slot given back ([`crate::idle`]).
    pub write_timeout: Duration,
    /// IPv6 callers are counted against the per-address cap by this many leading bits of their address (a
    /// /64 is one subscriber's: a caller with a /64 has 2^64 addresses); IPv4 callers by their whole address.
    pub ipv6_prefix: u8,
    /// Where a closed connection's metric line goes (`None`: no line).
    pub metrics_namespace: Option<String>,
    /// The proxies whose forwarding headers name the caller ([`crate::trusted_proxies`]); their own
    /// connections are not held to one address's cap.
    pub trusted_proxies: crate::trusted_proxies::TrustedProxies,
    /// On shutdown, how long live conversations may go on before they are ended.
    pub drain: Duration,
    /// After the drain, how long the server waits for the ended streams to reach their clients.
    pub grace: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(5),
            max_connections: 512,
            max_connections_per_address: 32,
            max_streams_per_connection: 16,
            max_header_bytes: 16 * 1024,
            max_headers: 100,
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            ipv6_prefix: 64,
            metrics_namespace: None,
            trusted_proxies: crate::trusted_proxies::TrustedProxies::default(),
            drain: Duration::from_secs(5),
            grace: Duration::from_secs(2),
        }
    }
}

/// How much of a request's head hyper buffers at most: beyond it no byte more is read. Four times the
/// default cap, so that a request a little over the cap still gets the JSON answer.
pub const HARD_HEADER_BYTES: usize = 64 * 1024;

/// The 431 answer for a request whose headers are over the caps, or `None` when they are within them.
fn oversized_headers(headers: &hyper::HeaderMap, limits: &ServerLimits) -> Option<axum::response::Response> {
    let count = headers.len();
    let bytes: usize = headers.iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
    let message = if count > limits.max_headers {
        format!("the request has {count} header fields; the limit is {}", limits.max_headers)
    } else if bytes > limits.max_header_bytes {
        format!("the request's headers are {bytes} bytes; the limit is {} bytes", limits.max_header_bytes)
    } else {
        return None;
    };
    Some(axum::response::IntoResponse::into_response(crate::api_error::ApiError::headers_too_large(message)))
}

/// What over-the-cap connections get before they are closed.
fn busy_response() -> Vec<u8> {
    refusal("503 Service Unavailable", r#"{"error":{"code":"server_busy","message":"too many connections are open; retry shortly","retryable":true}}"#)
}

/// What a connection over its address's cap gets before it is closed.
fn too_many_from_address() -> Vec<u8> {
    refusal(
        "429 Too Many Requests",
        r#"{"error":{"code":"too_many_connections","message":"too many connections are open from your address; close one or retry shortly","retryable":true}}"#,
    )
}

/// A whole HTTP/1.1 answer that closes the connection, written before any request is read.
fn refusal(status: &str, body: &str) -> Vec<u8> {
    let head = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n", body.len());
    [head.as_bytes(), body.as_bytes()].concat()
}

/// Serves `router` on `listener` until `signal` completes, then shuts down as the module says:
/// `conversations` is fired when the drain time is over (the gateway's `shutdown` token).
#[allow(clippy::disallowed_methods)] // each connection's task (and each refusal): drained by the graceful-shutdown watcher before the tracker is waited for
pub async fn serve(listener: TcpListener, router: Router, limits: ServerLimits, signal: impl Future<Output = ()>, conversations: CancellationToken) {
    let builder = Arc::new(connection_builder(&limits));
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let per_address = AddressSlots::new(limits.max_connections_per_address).ipv6_prefix(limits.ipv6_prefix);
    tokio::pin!(signal);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, for example: wait a moment rather than spin.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut signal => break,
        };
        tune_for_audio(&stream);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, busy_response()));
            continue;
        };
        // A trusted proxy carries many callers: its connections are not held to one address's cap.
        let address_slot = match limits.trusted_proxies.contains(peer.ip()) {
            true => None,
            false => match per_address.take(peer.ip()) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(address = %peer.ip(), "a connection over its address's cap: refused");
                    tokio::spawn(refuse(stream, too_many_from_address()));
                    continue;
                }
            },
        };
        let slot = (slot, address_slot);
        let router = router.clone();
        let header_limits = limits.clone();
        let idle = IdleWatch::default();
        let requests = idle.clone();
        let (trusted, ipv6_prefix) = (limits.trusted_proxies.clone(), limits.ipv6_prefix);
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // The caller: the peer, or the address a trusted proxy in front names (crate::trusted_proxies).
            let caller = crate::owner::CallerAddress(crate::address_slots::caller_of(trusted.caller(peer.ip(), request.headers()), ipv6_prefix));
            request.extensions_mut().insert(caller);
            let busy = requests.busy();
            let refused = oversized_headers(request.headers(), &header_limits);
            let mut router = router.clone();
            async move {
                let response = match refused {
                    Some(response) => Ok(response),
                    None => router.call(request.map(Body::new)).await,
                };
                // The request stays in flight until its body has been sent (or the client is gone).
                response.map(|r| r.map(|body| Body::new(BusyBody::new(body, busy))))
            }
        });
        let (builder, watcher, first_bytes, idle_limit, write_limit) =
            (builder.clone(), graceful.watcher(), limits.header_timeout, limits.idle_timeout, limits.write_timeout);
        let namespace = limits.metrics_namespace.clone();
        tokio::spawn(async move {
            // A connection that sends nothing, or half of HTTP/2's preface, does not keep its slot.
            if !matches!(tokio::time::timeout(first_bytes, shows_its_protocol(&stream)).await, Ok(true)) {
                tracing::debug!("a connection showed no protocol within {first_bytes:?}: closed");
                drop(slot);
                return;
            }
            let connection = builder.serve_connection(TokioIo::new(stream), service).into_owned();
            tokio::select! {
                ended = watcher.watch(connection) => if let Err(e) = ended {
                    tracing::debug!("connection ended: {e}");
                },
                _ = idle.idle_for(idle_limit) => tracing::debug!("a connection had no request for {idle_limit:?}: closed"),
                _ = idle.stalled_for(write_limit) => {
                    tracing::info!(address = %peer.ip(), "a response made no write progress for {write_limit:?} (its client took nothing): connection closed, its slot free");
                    if let Some(namespace) = &namespace {
                        crate::metrics::log_connection_closed("write_stalled", namespace);
                    }
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    drain(graceful, &limits, conversations).await;
}

/// hyper's connection builder for both protocols, within the server's limits.
fn connection_builder(limits: &ServerLimits) -> auto::Builder<StreamExecutor> {
    let mut builder = auto::Builder::new(StreamExecutor { write_limit: limits.write_timeout });
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(HARD_HEADER_BYTES)
        .max_headers(limits.max_headers.saturating_mul(2).max(100));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(HARD_HEADER_BYTES as u32)
        .max_concurrent_streams(limits.max_streams_per_connection.max(1))
        // A peer that is gone (not merely quiet) is found by its unanswered ping.
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(10));
    builder
}

/// Runs each HTTP/2 stream hyper hands it as a task of its own under the write deadline: a stream whose
/// response holds a frame its client has not taken for `write_limit` ends there, and hyper's stream
/// dropped is reset (`RST_STREAM`, CANCEL), whatever its siblings on the connection do. The stream's body
/// finds its watch through [`crate::idle::watching_stream`]. Written here because hyper offers no
/// per-stream write deadline; its executor is the one place every stream's task passes through.
#[derive(Clone, Copy, Debug)]
pub struct StreamExecutor {
    write_limit: Duration,
}

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[allow(clippy::disallowed_methods)] // a connection's HTTP/2 streams: they end with their connection, which the server drains
    fn execute(&self, stream: F) {
        let limit = self.write_limit;
        tokio::spawn(crate::idle::watching_stream(stream, limit));
    }
}

/// An accepted socket set for audio.
fn tune_for_audio(stream: &tokio::net::TcpStream) {
    // Audio goes out in small writes the moment it exists: none may wait on the ACK of the one
    // before (Nagle's algorithm against the client's delayed ACK is up to 40 ms a write).
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    // What the kernel holds for a client that does not read is bounded, so that such a client
    // meets the client read limit (`client_read_timeout`) within seconds of its last read, not
    // after megabytes of audio (Linux grows a socket's send buffer to `tcp_wmem`'s maximum, 4 MiB
    // by default, unless it is set). Audio is about 48 KB a second: a fixed buffer is ample.
    if let Err(e) = socket2::SockRef::from(stream).set_send_buffer_size(SEND_BUFFER_BYTES) {
        tracing::debug!("cannot set SO_SNDBUF: {e}");
    }
}

/// No new connections: live conversations have the drain time to finish, then `conversations` is fired
/// and their clients have the grace to read their last message.
async fn drain(graceful: GracefulShutdown, limits: &ServerLimits, conversations: CancellationToken) {
    tracing::info!("shutting down: no new connections; live conversations have {} s to finish", limits.drain.as_secs_f64());
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    if tokio::time::timeout(limits.drain, &mut drained).await.is_ok() {
        tracing::info!("every conversation finished");
        return;
    }
    tracing::info!("drain time over: ending the conversations still live");
    conversations.cancel();
    if tokio::time::timeout(limits.grace, &mut drained).await.is_err() {
        tracing::warn!("some clients did not read their last message within {} s; closing", limits.grace.as_secs_f64());
    }
}

/// Each accepted socket's send buffer (Linux doubles it for its own bookkeeping): over two seconds
/// of 24 kHz audio, and room for a far client's bandwidth-delay product at audio rates.
const SEND_BUFFER_BYTES: usize = 128 << 10;

/// HTTP/2's connection preface (RFC 9113, section 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Waits until a connection's first bytes say which protocol it speaks: they depart from HTTP/2's
/// preface (an HTTP/1 request, whose headers then have hyper's own time limit), or hold it whole.
/// `false` when the peer closes first. Reads nothing: hyper reads the same bytes after.
async fn shows_its_protocol(stream: &tokio::net::TcpStream) -> bool {
    let mut head = [0u8; H2_PREFACE.len()];
    loop {
        match stream.peek(&mut head).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if n == H2_PREFACE.len() || head[..n] != H2_PREFACE[..n] => return true,
            // Part of the preface: peeking again would return at once, so wait a moment for the rest.
            Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Answers a connection over a cap and closes it, without waiting on a slow client. What the client sent
/// meanwhile is read and dropped before the socket closes (a lingering close): closing with its request
/// unread would reset the connection, and the reset can destroy the answer before the client reads it.
async fn refuse(mut stream: tokio::net::TcpStream, answer: Vec<u8>) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// Completes on the first SIGTERM or SIGINT (what container runtimes, systemd and ECS send, and what
/// Ctrl-C sends), naming it.
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
            tracing::warn!("cannot listen for signals; stop with SIGKILL");
            return std::future::pending().await;
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!("{name} received");
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::{busy_response, oversized_headers, too_many_from_address, ServerLimits};
    use hyper::header::{HeaderName, HeaderValue};

    #[test]
    fn headers_over_either_cap_are_431_with_the_json_error() {
        let limits = ServerLimits { max_header_bytes: 100, max_headers: 3, ..ServerLimits::default() };
        let mut headers = hyper::HeaderMap::new();
        headers.insert("x-a", HeaderValue::from_static("1"));
        assert!(oversized_headers(&headers, &limits).is_none());
        headers.insert("x-big", HeaderValue::from_str(&"b".repeat(95)).unwrap());
        let response = oversized_headers(&headers, &limits).expect("over the byte cap");
        assert_eq!(response.status().as_u16(), 431);
        let mut many = hyper::HeaderMap::new();
        for i in 0..4 {
            many.insert(HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap(), HeaderValue::from_static("1"));
        }
        assert_eq!(oversized_headers(&many, &limits).map(|r| r.status().as_u16()), Some(431));
    }

    #[test]
    fn the_refusals_declare_their_length() {
        for (bytes, status, code) in [(busy_response(), "503", "server_busy"), (too_many_from_address(), "429", "too_many_connections")] {
            let text = std::str::from_utf8(&bytes).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
            assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
            let json: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(json["error"]["code"], code);
        }
    }
}
