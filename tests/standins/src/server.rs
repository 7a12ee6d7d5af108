//! The stand-ins' HTTPS server: TLS with ALPN (h2 and HTTP/1.1), routing by path as AWS does for
//! these operations, a check that requests are SigV4-signed for the right service, and errors in the
//! shape the SDKs read (`x-amzn-errortype` and a JSON body).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::{agentcore, bedrock, polly, sagemaker, tls};

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What the stand-ins voice and how fast they answer.
#[derive(Debug, Clone)]
pub struct StandInsConfig {
    /// The Kokoro container's base URL (`http://127.0.0.1:8080`).
    pub kokoro_url: String,
    /// The Kokoro voice pack that voices the Polly stand-in, so the two arms sound different.
    pub polly_voice: String,
    /// The Bedrock stand-in's pace.
    pub tokens_per_second: f64,
    /// Polly closes a stream after this long without input.
    pub polly_idle_timeout: std::time::Duration,
    /// Polly ends a stream this long after it opened (10 minutes).
    pub polly_max_duration: std::time::Duration,
    /// How the Polly stand-in paces and cuts the audio it sends (tests of a client that must not
    /// depend on timing).
    pub polly_delivery: PollyDelivery,
}

/// How the Polly stand-in delivers an utterance's audio. Polly documents none of this (only that audio
/// comes as `AudioEvent`s of some bytes each), so a client must cope with any of it.
#[derive(Debug, Clone, Default)]
pub struct PollyDelivery {
    /// A silence this long after an utterance's first chunk (longer than any quiet-period guess).
    pub stall: Option<std::time::Duration>,
    /// Cut each chunk into pieces of odd length (an `AudioEvent` need not hold whole samples).
    pub odd_chunks: bool,
    /// Hold an utterance's audio and send it all at once when it is complete.
    pub burst: bool,
}

/// One utterance the Polly stand-in voiced: the text of a flush, and every byte of audio it sent for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spoken {
    pub text: String,
    pub audio: Vec<u8>,
}

impl Default for StandInsConfig {
    fn default() -> Self {
        StandInsConfig {
            kokoro_url: "http://127.0.0.1:8080".into(),
            polly_voice: "jm_kumo".into(),
            tokens_per_second: 30.0,
            polly_idle_timeout: std::time::Duration::from_secs(5),
            polly_max_duration: std::time::Duration::from_secs(600),
            polly_delivery: PollyDelivery::default(),
        }
    }
}

/// Counters a test can read.
#[derive(Debug, Default)]
pub struct Stats {
    pub polly_streams: AtomicU64,
    /// Polly streams open now (a stream ends when its session does: closed, failed, or reset by the client).
    pub polly_streams_live: AtomicU64,
    /// Text events of white space only (keep-alives).
    pub polly_keep_alives: AtomicU64,
    pub polly_idle_closes: AtomicU64,
    /// Streams ended because they reached the maximum duration.
    pub polly_max_duration_closes: AtomicU64,
    /// Every utterance voiced, in the order its text was flushed.
    pub polly_spoken: std::sync::Mutex<Vec<Spoken>>,
    /// Every `TextEvent` sent as SSML (`TextType` `ssml`), as sent, in order.
    pub polly_ssml: std::sync::Mutex<Vec<String>>,
    pub sagemaker_streams: AtomicU64,
    /// `synthesize` messages a `draining-…` endpoint's stream was sent after it said `draining`.
    pub sagemaker_after_draining: AtomicU64,
    /// Every `synthesize` message carried to the container through SageMaker, as JSON (its text, voice
    /// and language), in order.
    pub sagemaker_synthesize: std::sync::Mutex<Vec<serde_json::Value>>,
    /// The production variant the last SageMaker request addressed, if any.
    pub last_target_variant: std::sync::Mutex<Option<String>>,
    /// The `VoiceId` of the last Polly stream.
    pub last_polly_voice: std::sync::Mutex<Option<String>>,
    /// The PCM rate (`SampleRate`) the last Polly stream asked for.
    pub last_polly_rate: std::sync::Mutex<Option<u32>>,
    pub bedrock_calls: AtomicU64,
    /// Each `InvokeAgentRuntime`: its runtime session id and its payload.
    pub agentcore_calls: std::sync::Mutex<Vec<(String, serde_json::Value)>>,
}

impl Stats {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

pub struct State {
    pub config: StandInsConfig,
    pub stats: Arc<Stats>,
}

impl State {
    pub fn kokoro_ws_url(&self) -> String {
        let base = self.config.kokoro_url.trim_end_matches('/');
        format!("{}/invocations-bidirectional-stream", base.replacen("http://", "ws://", 1))
    }
}

/// Running stand-ins.
pub struct StandIns {
    /// `https://127.0.0.1:PORT`, the endpoint override for every SDK client.
    pub url: String,
    pub addr: SocketAddr,
    /// The certificate clients must trust.
    pub cert_pem: String,
    pub stats: Arc<Stats>,
}

/// Starts the stand-ins on `port` (0: a free port) in the current runtime.
pub async fn start(config: StandInsConfig, port: u16) -> std::io::Result<StandIns> {
    let tls = tls::self_signed();
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let stats = Arc::new(Stats::default());
    let state = Arc::new(State { config, stats: stats.clone() });
    let acceptor = TlsAcceptor::from(tls.server.clone());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let acceptor = acceptor.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(route(req, state).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Ok(StandIns { url: format!("https://127.0.0.1:{}", addr.port()), addr, cert_pem: tls.cert_pem, stats })
}

async fn route(req: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let path = req.uri().path().to_string();
    // The health probes' control-plane calls: Polly's DescribeVoices (REST, GET) and SageMaker's
    // DescribeEndpoint (JSON 1.1, by X-Amz-Target).
    if req.method() == hyper::Method::GET && path == "/v1/voices" {
        if let Err(message) = check_signature(&req, "polly") {
            return error(StatusCode::FORBIDDEN, "InvalidSignatureException", &message);
        }
        return polly::describe_voices();
    }
    let target = req.headers().get("x-amz-target").and_then(|v| v.to_str().ok()).map(str::to_string);
    if req.method() == hyper::Method::POST && path == "/" && target.as_deref() == Some("SageMaker.DescribeEndpoint") {
        if let Err(message) = check_signature(&req, "sagemaker") {
            return error(StatusCode::FORBIDDEN, "InvalidSignatureException", &message);
        }
        return sagemaker::describe_endpoint(req).await;
    }
    if req.method() != hyper::Method::POST {
        return error(StatusCode::NOT_FOUND, "UnknownOperationException", "only POST operations are stood in for");
    }
    let service = if path == "/v1/synthesisStream" {
        "polly"
    } else if path.starts_with("/endpoints/") && path.ends_with("/invocations-bidirectional-stream") {
        "sagemaker"
    } else if path.starts_with("/model/") && path.ends_with("/converse-stream") {
        "bedrock"
    } else if path.starts_with("/runtimes/") && path.ends_with("/invocations") {
        "bedrock-agentcore"
    } else {
        return error(StatusCode::NOT_FOUND, "UnknownOperationException", &format!("no stand-in for {path}"));
    };
    if let Err(message) = check_signature(&req, service) {
        return error(StatusCode::FORBIDDEN, "InvalidSignatureException", &message);
    }
    match service {
        "polly" => polly::handle(req, state).await,
        "sagemaker" => sagemaker::handle(req, state, &path).await,
        "bedrock-agentcore" => agentcore::handle(req, state, &path).await,
        _ => bedrock::handle(req, state, &path).await,
    }
}

/// Requires a SigV4 authorization for the service, as AWS does (the signature itself is not
/// recomputed: the stand-ins know no secrets worth protecting).
fn check_signature(req: &Request<Incoming>, service: &str) -> Result<(), String> {
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).ok_or("the request is not signed")?;
    if !auth.starts_with("AWS4-HMAC-SHA256 Credential=") || !auth.contains("SignedHeaders=") || !auth.contains("Signature=") {
        return Err("the authorization is not SigV4".into());
    }
    if !auth.contains(&format!("/{service}/aws4_request")) {
        return Err(format!("the request is not signed for {service}"));
    }
    if req.headers().get("x-amz-date").is_none() {
        return Err("the request has no x-amz-date".into());
    }
    Ok(())
}

pub fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed_unsync()
}

/// An error before the stream, as the SDKs read it.
pub fn error(status: StatusCode, error_type: &str, message: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("x-amzn-errortype", error_type)
        .body(full(serde_json::json!({"message": message}).to_string()))
        .expect("an error response")
}

/// A streaming event-stream response.
pub fn stream_response(body: crate::eventstream::BodyStream, extra: &[(&str, String)]) -> Response<Body> {
    let mut builder =
        Response::builder().status(StatusCode::OK).header("content-type", "application/vnd.amazon.eventstream").header("x-amzn-requestid", "stand-in");
    for (name, value) in extra {
        builder = builder.header(*name, value);
    }
    builder.body(body.boxed_unsync()).expect("a stream response")
}
