//! Kokoro on a SageMaker endpoint, over `InvokeEndpointWithBidirectionalStream`. One bidirectional
//! stream per conversation carries every sentence, as the container's protocol over `PayloadPart`s:
//! requests go as `DataType: UTF8` parts; what comes back is joined from its parts by their
//! `CompletionState` and told apart by its own framing, not by `DataType` ([`crate::sagemaker_parts`]).

use crate::aws_json;
use crate::health::{CachedHealth, DEFAULT_HEALTH_TTL};
use async_trait::async_trait;
use aws_sdk_sagemakerruntimehttp2::error::ProvideErrorMetadata;
use aws_sdk_sagemakerruntimehttp2::types::error::{RequestStreamEventError, ResponseStreamEventError};
use aws_sdk_sagemakerruntimehttp2::types::{RequestPayloadPart, RequestStreamEvent, ResponseStreamEvent};
use aws_sdk_sagemakerruntimehttp2::Client;
use aws_smithy_types::Blob;
use earshot_backends::container_session::{self, ContainerTransport, Frame, TransportError};
use earshot_core::language::Language;
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechError, SpeechSession, Voice};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Which endpoint, and which voices its container offers.
#[derive(Debug, Clone)]
pub struct SageMakerSettings {
    /// The SageMaker endpoint's name.
    pub endpoint_name: String,
    /// A production variant to address, when set.
    pub target_variant: Option<String>,
    /// The container's voices (the endpoint is not asked: the bidirectional stream carries only
    /// synthesis).
    pub voices: Vec<String>,
    /// The container's voice when a request names none (its English voice).
    pub default_voice: String,
    /// The languages the container speaks other than English (its production front ends: French,
    /// Mandarin, Japanese), each with its voice; English is the default voice's. Configured, since the
    /// endpoint cannot be asked (its `/voices` is not reachable through SageMaker).
    pub language_voices: Vec<(Language, String)>,
    /// Kokoro's speaking rate, sent with every sentence (1.0: normal speed).
    pub speed: f32,
}

/// The production container's voice for each language besides English (`PRODUCTION_DEFAULT_VOICES` in
/// `infra/kokoro/kokoro_server/engines/onnx_engine.py`): what the endpoint speaks unless configured.
pub const SAGEMAKER_LANGUAGE_VOICES: [(&str, &str); 3] = [("fr", "ff_siwis"), ("zh", "zf_xiaobei"), ("ja", "jf_alpha")];

impl SageMakerSettings {
    /// [`SAGEMAKER_LANGUAGE_VOICES`], as settings take them.
    pub fn production_language_voices() -> Vec<(Language, String)> {
        SAGEMAKER_LANGUAGE_VOICES.iter().filter_map(|(l, v)| Some((Language::parse(l).ok()?, v.to_string()))).collect()
    }
}

/// Kokoro on a SageMaker endpoint as a speech backend: one bidirectional stream per conversation.
pub struct SageMakerBackend {
    client: Client,
    /// For `DescribeEndpoint`, the control-plane call behind `health`.
    sdk: aws_config::SdkConfig,
    control: reqwest::Client,
    settings: SageMakerSettings,
    health: CachedHealth,
}

impl SageMakerBackend {
    /// A backend invoking the endpoint with the credentials and region of `config`.
    pub fn new(config: &aws_config::SdkConfig, settings: SageMakerSettings) -> Self {
        SageMakerBackend {
            client: Client::new(config),
            sdk: config.clone(),
            control: reqwest::Client::new(),
            settings,
            health: CachedHealth::new(DEFAULT_HEALTH_TTL),
        }
    }

    /// The HTTP client of the control-plane call, when the SDK's endpoint needs a certificate of its
    /// own trusted ([`crate::AwsSettings::control_client`]).
    pub fn with_control_client(mut self, control: reqwest::Client) -> Self {
        self.control = control;
        self
    }

    /// Healthy when SageMaker says the endpoint is `InService` (or `Updating`: an update keeps the old
    /// variant serving until the new one is ready). `Creating`, `SystemUpdating`, `RollingBack`,
    /// `OutOfService`, `Deleting` and `Failed` take no conversations; neither does an endpoint SageMaker
    /// does not know or this role may not describe.
    async fn describe_endpoint(&self) -> Result<(), SpeechError> {
        let name = &self.settings.endpoint_name;
        let input = serde_json::json!({ "EndpointName": name });
        match aws_json::call(&self.control, &self.sdk, &aws_json::SAGEMAKER, "DescribeEndpoint", &input, crate::health::PROBE_TIMEOUT).await {
            Ok(answer) => {
                let status = answer.get("EndpointStatus").and_then(|s| s.as_str()).unwrap_or("unknown");
                match status {
                    "InService" | "Updating" => Ok(()),
                    other => {
                        let reason = answer.get("FailureReason").and_then(|s| s.as_str()).map(|r| format!(": {r}")).unwrap_or_default();
                        Err(SpeechError::new("backend_unhealthy", format!("SageMaker endpoint {name} is {other}{reason}"), true))
                    }
                }
            }
            Err(e) => Err(SpeechError::new("backend_unhealthy", format!("SageMaker endpoint {name}: {}: {}", e.error_type, e.message), true)),
        }
    }
}

type RequestItem = Result<RequestStreamEvent, RequestStreamEventError>;

#[async_trait]
impl SpeechBackend for SageMakerBackend {
    fn name(&self) -> &str {
        "kokoro"
    }

    fn voices(&self) -> Vec<Voice> {
        // Kokoro's voice names say their language in their first letter (`af_heart`: American English).
        let language = |v: &str| match v.chars().next() {
            Some('a') => "en-US",
            Some('b') => "en-GB",
            Some('f') => "fr",
            Some('z') => "zh",
            Some('j') => "ja",
            _ => "?",
        };
        let mut names: Vec<&String> = self.settings.voices.iter().chain(self.settings.language_voices.iter().map(|(_, v)| v)).collect();
        names.dedup();
        names.into_iter().map(|v| Voice { id: v.clone(), language: language(v).into(), description: "Kokoro on SageMaker".into() }).collect()
    }

    fn default_voice(&self) -> String {
        self.settings.default_voice.clone()
    }

    /// The container told no language reads by script, whatever the voice's own language.
    fn reading_language(&self, _voice: &str, session: Option<&Language>, sentence: Option<&Language>, text: &str) -> Option<Language> {
        Some(earshot_core::text::spoken::container_reading(sentence.or(session), text))
    }

    fn languages(&self) -> Vec<(Language, String)> {
        let english = Language::parse("en").ok().map(|en| (en, self.settings.default_voice.clone()));
        english.into_iter().chain(self.settings.language_voices.iter().filter(|(l, _)| l.as_str() != "en").cloned()).collect()
    }

    /// Any of the container's voices (or a blend of them) reads any language it has a front end for.
    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        earshot_core::voice_blend::offers(&self.voices(), true, voice) && self.languages().iter().any(|(l, _)| l == language)
    }

    fn blends_voices(&self) -> bool {
        true
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let transport = open_stream(&self.client, &self.settings).await?;
        // Where the container drains (SageMaker stopping it), the session moves to a new stream of the same
        // endpoint, which SageMaker routes to a container that is not stopping.
        let (client, settings) = (self.client.clone(), self.settings.clone());
        let reopen: container_session::Reopen<SageMakerTransport> = Box::new(move || {
            let (client, settings) = (client.clone(), settings.clone());
            Box::pin(async move { open_stream(&client, &settings).await })
        });
        Ok(container_session::start_movable(transport, Some(reopen), options, self.settings.speed))
    }

    async fn health(&self) -> Result<(), SpeechError> {
        // The bidirectional API has no ping; the endpoint's health is SageMaker's to report.
        self.health.check(|| self.describe_endpoint()).await
    }
}

/// One bidirectional stream to the endpoint, its response read into a channel.
async fn open_stream(client: &Client, settings: &SageMakerSettings) -> Result<SageMakerTransport, SpeechError> {
    let (requests, request_stream) = mpsc::channel::<RequestItem>(32);
    let output = client
        .invoke_endpoint_with_bidirectional_stream()
        .endpoint_name(&settings.endpoint_name)
        .set_target_variant(settings.target_variant.clone())
        .body(ReceiverStream::new(request_stream).into())
        .send()
        .await
        .map_err(|e| {
            let service = e.as_service_error();
            let code = service.and_then(|s| s.code()).unwrap_or("backend_unreachable").to_string();
            let message = service.and_then(|s| s.message()).map(str::to_string).unwrap_or_else(|| format!("{e:?}"));
            let retryable = !matches!(code.as_str(), "InputValidationError" | "ValidationError" | "AccessDeniedException");
            SpeechError::new(&code_name(&code), format!("SageMaker endpoint {}: {message}", settings.endpoint_name), retryable)
        })?;
    if let Some(variant) = &output.invoked_production_variant {
        tracing::debug!("SageMaker answered from variant {variant}");
    }
    let (frames_tx, frames) = mpsc::channel(32);
    let mut body = output.body;
    // The receiver is drained by a task of its own, so that the session can race a channel
    // (cancel-safe) rather than the SDK's receiver.
    earshot_core::tasks::spawn(async move {
        let mut joiner = crate::sagemaker_parts::PartJoiner::default();
        loop {
            let item = match body.recv().await {
                Ok(Some(ResponseStreamEvent::PayloadPart(part))) => {
                    let bytes: &[u8] = part.bytes.as_ref().map(|b| b.as_ref()).unwrap_or_default();
                    match joiner.push(part.completion_state.as_deref(), bytes) {
                        Ok(Some(frame)) => Ok(frame),
                        Ok(None) => continue,
                        Err(e) => Err(e),
                    }
                }
                Ok(Some(_)) => continue,
                Ok(None) if joiner.is_midway() => Err(TransportError::new("backend_protocol", "the SageMaker stream ended inside a message", true)),
                Ok(None) => break,
                Err(e) => Err(stream_error(&e)),
            };
            let failed = item.is_err();
            if frames_tx.send(item).await.is_err() || failed {
                break;
            }
        }
    });
    Ok(SageMakerTransport { requests: Some(requests), frames })
}

/// `ModelStreamError` → `model_stream_error`, keeping the service's own names recognisable.
fn code_name(code: &str) -> String {
    let mut out = String::new();
    for (i, c) in code.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn stream_error<R: std::fmt::Debug>(e: &aws_smithy_runtime_api::client::result::SdkError<ResponseStreamEventError, R>) -> TransportError {
    match e.as_service_error() {
        Some(ResponseStreamEventError::ModelStreamError(m)) => {
            let detail = m.error_code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
            TransportError::new("model_stream_error", format!("the model failed mid-stream{detail}: {}", m.message.as_deref().unwrap_or("")), true)
        }
        Some(ResponseStreamEventError::InternalStreamFailure(f)) => {
            TransportError::new("internal_stream_failure", format!("SageMaker's stream failed: {}", f.message.as_deref().unwrap_or("")), true)
        }
        Some(other) => TransportError::new(&code_name(other.code().unwrap_or("unknown_error")), other.message().unwrap_or("").to_string(), true),
        None => TransportError::new("backend_gone", format!("the SageMaker stream broke: {e:?}"), true),
    }
}

/// The container protocol over SageMaker's stream: text goes as `UTF8` payload parts.
struct SageMakerTransport {
    requests: Option<mpsc::Sender<RequestItem>>,
    frames: mpsc::Receiver<Result<Frame, TransportError>>,
}

#[async_trait]
impl ContainerTransport for SageMakerTransport {
    async fn send_text(&mut self, text: String) -> Result<(), TransportError> {
        let Some(requests) = &self.requests else {
            return Err(TransportError::new("backend_gone", "the SageMaker stream is closed", true));
        };
        let part = RequestPayloadPart::builder().bytes(Blob::new(text.into_bytes())).data_type("UTF8").build();
        requests.send(Ok(RequestStreamEvent::PayloadPart(part))).await.map_err(|_| TransportError::new("backend_gone", "the SageMaker stream is closed", true))
    }

    async fn recv(&mut self) -> Option<Result<Frame, TransportError>> {
        self.frames.recv().await
    }

    async fn close(&mut self) {
        // Ending the request stream ends the invocation.
        self.requests = None;
    }
}
