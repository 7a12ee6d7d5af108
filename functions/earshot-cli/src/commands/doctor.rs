//! `earshot doctor`: after a deploy (or against any running gateway), does each arm speak?
//!
//! A deployment can look healthy and still not speak on one arm: a role without the bidirectional action,
//! a quota of zero, a model not enabled, an endpoint still starting. With failover on, the gateway hides
//! it (every conversation spills to the other arm while the first one bills). So the doctor asks the
//! gateway for its backends (`/healthz`), then runs one short conversation pinned to each (`backend`): a
//! backend the request names is never failed over (`Routing::fallbacks`), so an arm that cannot speak
//! answers with its own error instead of hiding behind the other. It reports for each arm: healthy or not,
//! time to first audio, the voice and the billed characters, or the error code and, for each AWS or
//! earshot code it recognises, the likely fix; and for an arm the deployment caps (Polly), how many
//! conversations it holds at once beside the service's quota. Then it asks the agent: one `prompt` conversation with
//! no backend named, so the configured agent (Bedrock, an OpenAI-compatible endpoint, AgentCore, an
//! HTTP agent) answers through the path every real prompt takes; a `text` conversation never calls the
//! agent, so the arms' checks alone cannot prove it. It exits non-zero when an arm cannot speak or the
//! agent cannot answer.

use clap::Args;
use earshot_client::{speak, CallOptions, ClientError, Received, SpeakBody};

#[derive(Args)]
pub struct DoctorArgs {
    /// The gateway's base URL (the function URL after `make deploy`).
    #[arg(long, env = "EARSHOT_URL", default_value = "http://127.0.0.1:8787")]
    url: String,
    #[command(flatten)]
    access: super::sigv4::Access,
}

/// What the doctor says the arm says.
/// What each arm is asked to say, with a number of this run's: a sentence said before would come from the
/// gateway's sentence cache and prove nothing of the voice, so each run's second sentence is new.
fn sample() -> String {
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_micros() % 10_000).unwrap_or(0);
    format!("Hello from earshot doctor. This voice works, check {run}.")
}
/// What the doctor asks the agent: short to answer, so that it costs little.
const QUESTION: &str = "Say hello in one short sentence.";

/// How one arm fared.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It spoke the conversation.
    Speaks { ttfa_ms: Option<f64>, voice: String, billed_characters: Option<u64> },
    /// Nothing was spoken: the gateway refused or the conversation failed, with this code.
    Failed { code: String },
}

/// The verdict on an arm from what the conversation pinned to it returned.
pub fn verdict(result: &Result<Received, ClientError>) -> Verdict {
    let received = match result {
        Ok(received) => received,
        Err(ClientError::Refused { code, .. }) => return Verdict::Failed { code: code.clone() },
        Err(e) => return Verdict::Failed { code: format!("unreachable ({e})") },
    };
    match (&received.session, &received.error) {
        (_, Some(error)) => Verdict::Failed { code: error.code.clone() },
        (None, None) => Verdict::Failed { code: "the stream carried no session message".into() },
        (Some(session), None) => {
            let timeline = received.timeline.as_ref();
            Verdict::Speaks {
                ttfa_ms: timeline.and_then(|t| t.first_audio_sent_ms),
                voice: session.voice.clone(),
                billed_characters: timeline.and_then(|t| t.billed_characters),
            }
        }
    }
}

/// The likely fix for an error code the gateway passes on (AWS's, in snake case, or earshot's own).
pub fn fix(code: &str) -> &'static str {
    match code {
        // A voice's AWS code; the agent's own refusal has its arm below.
        c if c.contains("access_denied") && !c.starts_with("agent_") => {
            "the gateway's role may not call the service: the Lambda role needs sagemaker:InvokeEndpoint and \
             sagemaker:InvokeEndpointWithBidirectionalStream on the endpoint (the CDK stack grants both), \
             polly:StartSpeechSynthesisStream, and bedrock:InvokeModelWithResponseStream on the model"
        }
        "polly_throttled" | "throttling_exception" | "polly_quota_exceeded" | "service_quota_exceeded_exception" => {
            "the service is limiting requests: raise the quota in Service Quotas (Amazon Polly: \
             StartSpeechSynthesisStream concurrent streams) or send fewer at once"
        }
        "validation_error" | "validation_exception" => {
            "the service refused the request: for SageMaker the endpoint may not exist or not be InService \
             (aws sagemaker describe-endpoint --endpoint-name earshot-kokoro)"
        }
        "backend_not_ready" | "backend_open_timeout" => "the voice is still starting: a new endpoint takes 10 to 15 minutes; run the doctor again then",
        "backend_busy" => "the arm is at capacity: raise maxInstances (SageMaker) or KOKORO_MAX_SESSIONS, or lower the traffic",
        // SageMaker's model errors (ModelError, ModelStreamError, ModelNotReadyException, in snake case).
        c if c.starts_with("model_") => "the container failed: its log group is /aws/sagemaker/Endpoints/<endpoint> (CloudWatch Logs)",
        "agent_access_denied" => {
            "the agent refused the gateway's credentials: for Bedrock the Lambda role needs \
             bedrock:InvokeModelWithResponseStream on the model or inference profile it names (the CDK stack grants it \
             for bedrockModelId); model access itself is on by default, but a third-party model subscribes on its first \
             call (AWS Marketplace permissions, a few minutes of AccessDenied) and Anthropic's need their use-case form \
             once; for an OpenAI-compatible agent, check the key in EARSHOT_AGENT_KEY_SECRET"
        }
        "agent_unreachable" | "agent_no_response" | "agent_timeout" => {
            "the agent could not be reached or did not answer: check its address (EARSHOT_OPENAI_BASE_URL, \
             EARSHOT_HTTP_AGENT_URL, the AgentCore runtime ARN) and that the gateway's network reaches it"
        }
        c if c.starts_with("agent_") || c == "access_denied_exception" => {
            "the agent failed: for Bedrock, check the model id (bedrockModelId), or use an inference profile id \
             (us./eu./apac.) where the model is not offered on demand; Amazon's serverless models need no \
             enabling, but a third party's may need its terms accepted once in the Bedrock console"
        }
        c if c.starts_with("token_") => "the token was refused: mint a fresh one (earshot token) with this gateway's key and audience",
        _ => "see the gateway's log (CloudWatch Logs of the function) under the request id",
    }
}

/// What a capped arm holds at once across the deployment, set beside its service's quota where the
/// doctor knows it: Polly's quotas page gives 26 concurrent requests for generative voices, and a
/// conversation holds up to 3 streams (`earshot_gateway::backend_cap`).
fn at_once(arm: &str, max: u64) -> String {
    let held = format!("at most {max} conversations at once across the deployment (EARSHOT_BACKEND_CONVERSATIONS; CDK pollyConversations)");
    match arm {
        "polly" => format!(
            "{held}: up to {} streams, against Polly's 26 concurrent requests for generative voices by default; \
             with a higher quota applied (Service Quotas, Amazon Polly), raise the cap to a third of it",
            max * 3
        ),
        _ => held,
    }
}

pub fn run(args: DoctorArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let signer = args.access.signer(&args.url, &runtime)?;
    let options = CallOptions { bearer: args.access.token.clone(), signer: signer.clone(), ..Default::default() };
    let health = runtime.block_on(health(&args.url, signer.as_ref()))?;
    let backends = health.get("backends").and_then(|b| b.as_object()).ok_or("the gateway's /healthz names no backends")?;
    println!("earshot doctor: {} ({} arm{})", args.url, backends.len(), if backends.len() == 1 { "" } else { "s" });
    let mut failing = Vec::new();
    for (arm, status) in backends {
        let healthy = status.get("ok").and_then(|v| v.as_bool()).unwrap_or(false);
        let health_code = status.get("code").and_then(|v| v.as_str());
        let body = SpeakBody { text: Some(sample()), backend: Some(arm.clone()), ..Default::default() };
        let result = runtime.block_on(speak(&args.url, &body, &options));
        let verdict = verdict(&result);
        let health_note = match (healthy, health_code) {
            (true, _) => "healthy".to_string(),
            (false, Some(code)) => format!("unhealthy ({code})"),
            (false, None) => "unhealthy".to_string(),
        };
        match &verdict {
            Verdict::Speaks { ttfa_ms, voice, billed_characters } => {
                let ttfa = ttfa_ms.map_or("-".into(), |t| format!("{t:.0} ms"));
                let billed = billed_characters.map_or(String::new(), |b| format!(", {b} characters billed"));
                println!("  {arm}: speaks ({health_note}); voice {voice}, first audio at the server after {ttfa}{billed}");
            }
            Verdict::Failed { code } => {
                println!("  {arm}: CANNOT SPEAK ({health_note}): {code}");
                println!("      fix: {}", fix(code));
                failing.push(arm.clone());
            }
        }
        if let Some(max) = status.get("conversations_at_once").and_then(|v| v.as_u64()) {
            println!("      {}", at_once(arm, max));
        }
    }
    // The agent, through the path a real prompt takes (the gateway chooses the voice).
    let asked = SpeakBody { prompt: Some(QUESTION.into()), ..Default::default() };
    let agent_ok = match verdict(&runtime.block_on(speak(&args.url, &asked, &options))) {
        Verdict::Speaks { ttfa_ms, .. } => {
            let ttfa = ttfa_ms.map_or("-".into(), |t| format!("{t:.0} ms"));
            println!("  the agent: answers; its answer spoken, first audio at the server after {ttfa}");
            true
        }
        Verdict::Failed { code } => {
            println!("  the agent: CANNOT ANSWER: {code}");
            println!("      fix: {}", fix(&code));
            false
        }
    };
    match (failing.is_empty(), agent_ok) {
        (true, true) => {
            println!("every arm speaks, and the agent answers");
            Ok(())
        }
        (true, false) => Err("every arm speaks, but the agent cannot answer".into()),
        (false, true) => Err(format!("{} cannot speak", failing.join(", "))),
        (false, false) => Err(format!("{} cannot speak, and the agent cannot answer", failing.join(", "))),
    }
}

/// The gateway's `/healthz` report (200 or 503 alike).
async fn health(url: &str, signer: Option<&earshot_client::Signer>) -> Result<serde_json::Value, String> {
    let url = format!("{}/healthz", url.trim_end_matches('/'));
    let mut request = reqwest::Client::new().get(&url);
    if let Some(signer) = signer {
        for (name, value) in (signer.0)("GET", &url, &[], b"")? {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|_| format!("{url} answered {status} without the health report: {}", text.chars().take(200).collect::<String>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fix_names_what_to_do_and_aws_codes_are_recognised() {
        assert!(fix("access_denied_exception").contains("InvokeEndpointWithBidirectionalStream"));
        assert!(fix("polly_throttled").contains("Service Quotas"));
        assert!(fix("backend_not_ready").contains("10 to 15 minutes"));
        assert!(fix("agent_model_not_found").contains("inference profile") && !fix("agent_model_not_found").contains("Model access"));
        assert!(fix("agent_access_denied").contains("bedrock:InvokeModelWithResponseStream") && fix("agent_access_denied").contains("Marketplace"));
        assert!(fix("agent_unreachable").contains("EARSHOT_OPENAI_BASE_URL"));
        assert!(fix("model_stream_error").contains("/aws/sagemaker/Endpoints"));
        assert!(fix("something_new").contains("request id"));
    }

    #[test]
    fn polly_s_cap_is_set_beside_its_quota() {
        let said = at_once("polly", 8);
        assert!(said.contains("at most 8 conversations") && said.contains("up to 24 streams") && said.contains("26 concurrent"), "{said}");
        assert!(!at_once("kokoro", 4).contains("Polly"));
    }
}
