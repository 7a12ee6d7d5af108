//! `earshot serve`: the gateway with its embedded defaults (local Kokoro, scripted agent, demo page).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{KokoroBackend, KokoroConfig, SyntheticBackend, SyntheticConfig};
use earshot_core::speech::SpeechBackend;
use earshot_gateway::Gateway;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 8787)]
    port: u16,
    /// Backends to offer, the first being the default.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kokoro")]
    backends: Vec<BackendKind>,
    /// The Kokoro container's base URL.
    #[arg(long, env = "KOKORO_URL", default_value = "http://127.0.0.1:8080")]
    kokoro_url: String,
    /// The Kokoro voice when a request names none (the container's English default otherwise).
    #[arg(long)]
    kokoro_voice: Option<String>,
    /// The scripted agent's pace, in tokens per second.
    #[arg(long, default_value_t = 30.0)]
    tokens_per_second: f64,
    /// The scripted agent's delay before its first token, in milliseconds.
    #[arg(long, default_value_t = 200)]
    first_token_ms: u64,
    /// Release a finished sentence after this much agent silence, in milliseconds (0: never).
    #[arg(long, default_value_t = 150)]
    idle_release_ms: u64,
    /// Release the first clause of an answer early once it has this many words.
    #[arg(long, value_name = "WORDS")]
    fast_first: Option<usize>,
    /// Sentences at the backend and not finished, at most.
    #[arg(long, default_value_t = 4)]
    max_in_flight: usize,
    /// The synthetic backend's first-audio latency, in milliseconds.
    #[arg(long, default_value_t = 200)]
    synthetic_latency_ms: u64,
    /// Reach Kokoro through a SageMaker endpoint of this name (the production path) instead of the
    /// container's WebSocket.
    #[arg(long)]
    sagemaker_endpoint: Option<String>,
    /// The Polly voice (a generative voice: ruth, stephen, matthew, joanna, danielle, amy, olivia, lea, remi).
    #[arg(long, default_value = "ruth")]
    polly_voice: String,
    /// Where the agent comes from.
    #[arg(long, value_enum, default_value = "scripted")]
    agent: AgentKind,
    /// The Bedrock model of the bedrock agent.
    #[arg(long, default_value = "anthropic.claude-3-5-haiku-20241022-v1:0")]
    bedrock_model: String,
    /// An endpoint for every AWS call (local stand-ins: `https://127.0.0.1:8443`).
    #[arg(long, env = "EARSHOT_AWS_ENDPOINT")]
    aws_endpoint: Option<String>,
    /// A PEM certificate to trust for the AWS endpoint (the stand-ins' self-signed one).
    #[arg(long, env = "EARSHOT_AWS_TRUST_PEM")]
    aws_trust_pem: Option<std::path::PathBuf>,
    /// A/B weights per backend, e.g. `kokoro=50,polly=50` (none: the first backend answers).
    #[arg(long)]
    ab_weights: Option<String>,
    /// Refuse a backend named by the request.
    #[arg(long)]
    no_backend_override: bool,
    /// Hand a conversation to the next backend when its own fails before any audio.
    #[arg(long)]
    failover: bool,
    /// The folder of the demo page and the browser client, served at `/` (none: no page).
    #[arg(long, default_value = "web")]
    web_dir: String,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, default_value_t = 5.0)]
    header_timeout: f64,
    /// Seconds a client may take to send a request's body.
    #[arg(long, default_value_t = 10.0)]
    body_timeout: f64,
    /// Connections open at once; more are answered 503 and closed.
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// On SIGTERM or SIGINT, seconds live conversations may go on before they end with `shutting_down`.
    #[arg(long, default_value_t = 5.0)]
    drain: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AgentKind {
    /// Scripted answers at a chosen token rate.
    Scripted,
    /// An agent on Bedrock ConverseStream.
    Bedrock,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendKind {
    /// Kokoro: the container over its WebSocket, or a SageMaker endpoint with --sagemaker-endpoint.
    Kokoro,
    /// Amazon Polly bidirectional streaming.
    Polly,
    /// A tone at speaking pace after a fixed latency (load tests).
    Synthetic,
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    init_logging();
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(serve(args))
}

pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EARSHOT_LOG").unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let needs_aws = args.sagemaker_endpoint.is_some() || args.backends.contains(&BackendKind::Polly) || args.agent == AgentKind::Bedrock;
    let aws = if needs_aws {
        let trust_pem = match &args.aws_trust_pem {
            Some(path) => Some(std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?),
            None => None,
        };
        let settings = earshot_aws::AwsSettings { endpoint_url: args.aws_endpoint.clone(), trust_pem, ..Default::default() };
        Some(settings.sdk_config().await)
    } else {
        None
    };
    let mut backends: Vec<Arc<dyn SpeechBackend>> = Vec::new();
    let mut watches = tokio::task::JoinSet::new();
    for kind in &args.backends {
        match kind {
            BackendKind::Kokoro if args.sagemaker_endpoint.is_some() => {
                let endpoint = args.sagemaker_endpoint.clone().unwrap_or_default();
                let voice = args.kokoro_voice.clone().unwrap_or_else(|| "af_heart".into());
                tracing::info!("Kokoro through the SageMaker endpoint {endpoint}");
                let settings = earshot_aws::SageMakerSettings {
                    endpoint_name: endpoint,
                    target_variant: None,
                    voices: vec![voice.clone()],
                    default_voice: voice,
                    speed: 1.0,
                };
                backends.push(Arc::new(earshot_aws::SageMakerBackend::new(aws.as_ref().expect("AWS configuration"), settings)));
            }
            BackendKind::Polly => {
                let settings = earshot_aws::PollySettings { default_voice: args.polly_voice.clone(), ..Default::default() };
                backends.push(Arc::new(earshot_aws::PollyBackend::new(aws.as_ref().expect("AWS configuration"), settings)?));
            }
            BackendKind::Kokoro => {
                // Not waited for: the gateway listens at once and answers 503 `backend_not_ready`
                // (and `/healthz` 503) until the container has loaded its model.
                let cfg = KokoroConfig { url: args.kokoro_url.clone(), default_voice: args.kokoro_voice.clone(), ..Default::default() };
                let backend = Arc::new(KokoroBackend::new(cfg).map_err(|e| e.to_string())?);
                tracing::info!("waiting in the background for the Kokoro container at {}", args.kokoro_url);
                let watched = backend.clone();
                watches.spawn(async move { watched.poll_ready_forever().await });
                backends.push(backend);
            }
            BackendKind::Synthetic => {
                let cfg = SyntheticConfig { first_audio: Duration::from_millis(args.synthetic_latency_ms), ..Default::default() };
                backends.push(Arc::new(SyntheticBackend::new(cfg)));
            }
        }
    }
    let agent: Arc<dyn earshot_core::agent::AgentSource> = match args.agent {
        AgentKind::Scripted => Arc::new(ScriptedAgent::new(ScriptedConfig {
            tokens_per_second: args.tokens_per_second,
            first_token_delay: Duration::from_millis(args.first_token_ms),
        })),
        AgentKind::Bedrock => {
            let settings = earshot_aws::BedrockSettings { model_id: args.bedrock_model.clone(), ..Default::default() };
            Arc::new(earshot_aws::BedrockAgent::new(aws.as_ref().expect("AWS configuration"), settings))
        }
    };
    let mut gateway = Gateway::new(backends, agent);
    gateway.routing = earshot_gateway::Routing {
        weights: match &args.ab_weights {
            Some(spec) => earshot_gateway::Routing::parse_weights(spec).map_err(|e| format!("--ab-weights: {e}"))?,
            None => Vec::new(),
        },
        allow_override: !args.no_backend_override,
        failover: args.failover,
    };
    gateway.scheduler.idle_release = (args.idle_release_ms > 0).then(|| Duration::from_millis(args.idle_release_ms));
    gateway.scheduler.segmenter.fast_first_min_words = args.fast_first;
    gateway.scheduler.max_in_flight = args.max_in_flight.max(1);
    let web_dir = std::path::PathBuf::from(&args.web_dir);
    if web_dir.join("index.html").is_file() {
        gateway.web_dir = Some(web_dir);
    } else if !args.web_dir.is_empty() {
        tracing::warn!("no index.html in {}: the demo page is not served", web_dir.display());
    }

    gateway.limits.body_timeout = seconds(args.body_timeout, "--body-timeout")?;
    let limits = earshot_gateway::ServerLimits {
        header_timeout: seconds(args.header_timeout, "--header-timeout")?,
        max_connections: args.max_connections.max(1),
        drain: seconds(args.drain, "--drain")?,
        ..Default::default()
    };

    let addr: SocketAddr = format!("{}:{}", args.host, args.port).parse().map_err(|e| format!("bad address: {e}"))?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    tracing::info!("earshot is listening on http://{addr}");
    // A backend that can never be used (a default voice the container lacks) stops the server.
    let fatal = async move {
        while let Some(watched) = watches.join_next().await {
            if let Ok(Err(e)) = watched {
                return Some(e.message);
            }
        }
        std::future::pending().await
    };
    let gateway = Arc::new(gateway);
    let conversations = gateway.shutdown.clone();
    // The server stops on SIGTERM or SIGINT, or when a backend can never be used; the reason is kept
    // to say how the process ends.
    let (reason_tx, reason_rx) = tokio::sync::oneshot::channel::<Option<String>>();
    let signal = async move {
        let reason = tokio::select! {
            _ = earshot_gateway::stop_signal() => None,
            message = fatal => message,
        };
        let _ = reason_tx.send(reason);
    };
    earshot_gateway::serve(listener, earshot_gateway::router(gateway), limits, signal, conversations).await;
    match reason_rx.await {
        Ok(Some(message)) => Err(message),
        _ => Ok(()),
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("{flag} must be a number of seconds, not {value}"))
}
