//! The Lambda `bootstrap`: the same router as `earshot serve`, run by `lambda_http` with response
//! streaming, so that SSE and binary frames leave as they are produced. Configuration comes from the
//! environment (`env_config`); a bad configuration fails the init with a message that names the
//! variable.

mod env_config;

use std::sync::Arc;

use earshot_aws::{AwsSettings, BedrockAgent, BedrockSettings, PollyBackend, PollySettings, SageMakerBackend, SageMakerSettings};
use earshot_core::speech::SpeechBackend;
use earshot_gateway::{Gateway, Limits};
use env_config::LambdaConfig;
use lambda_http::{service_fn, Error, Request};
use tower::ServiceExt;

async fn gateway(config: &LambdaConfig) -> Result<Gateway, String> {
    let trust_pem = match &config.aws_trust_pem {
        Some(path) => Some(std::fs::read(path).map_err(|e| format!("EARSHOT_AWS_TRUST_PEM: cannot read {path}: {e}"))?),
        None => None,
    };
    let sdk = AwsSettings { endpoint_url: config.aws_endpoint.clone(), trust_pem, ..Default::default() }.sdk_config().await;
    let mut backends: Vec<Arc<dyn SpeechBackend>> = Vec::new();
    for name in &config.backends {
        match name.as_str() {
            "kokoro" => backends.push(Arc::new(SageMakerBackend::new(
                &sdk,
                SageMakerSettings {
                    endpoint_name: config.sagemaker_endpoint.clone().unwrap_or_default(),
                    target_variant: None,
                    voices: vec![config.kokoro_voice.clone()],
                    default_voice: config.kokoro_voice.clone(),
                    speed: 1.0,
                },
            ))),
            _ => {
                let settings = PollySettings { default_voice: config.polly_voice.clone(), ..Default::default() };
                backends.push(Arc::new(PollyBackend::new(&sdk, settings).map_err(|e| format!("EARSHOT_POLLY_VOICE: {e}"))?));
            }
        }
    }
    let mut bedrock = BedrockSettings { model_id: config.bedrock_model_id.clone(), ..Default::default() };
    if let Some(prompt) = &config.system_prompt {
        bedrock.system_prompt = prompt.clone();
    }
    let mut gw = Gateway::new(backends, Arc::new(BedrockAgent::new(&sdk, bedrock)));
    gw.routing = config.routing.clone();
    gw.limits = Limits { max_prompt_chars: config.max_prompt_chars, max_text_chars: config.max_text_chars, ..Limits::default() };
    gw.scheduler.idle_release = config.idle_release;
    gw.metrics_namespace = Some(config.metrics_namespace.clone());
    Ok(gw)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EARSHOT_LOG").unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).without_time().with_writer(std::io::stderr).init();
    let config = LambdaConfig::from_env(|name| std::env::var(name).ok()).map_err(|e| format!("bad configuration: {e}"))?;
    let router = earshot_gateway::router(Arc::new(gateway(&config).await?));
    lambda_http::run_with_streaming_response(service_fn(move |request: Request| {
        let router = router.clone();
        async move {
            let (parts, body) = request.into_parts();
            let request = axum::http::Request::from_parts(parts, axum::body::Body::from(body.to_vec()));
            let response = router.oneshot(request).await?;
            Ok::<_, Error>(response)
        }
    }))
    .await
}
