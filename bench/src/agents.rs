//! Time to first audio through each agent source at the same token pace: the scripted agent inside the
//! gateway, and the OpenAI-compatible, HTTP (SSE) and AgentCore stand-ins the gateway reaches over the
//! network, each streaming the same answers at 30 tokens/s into the real Kokoro. A source that adds
//! nothing of its own shows the scripted agent's figures within noise.

use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::trial::{self, Measured};

pub const TOKENS_PER_SECOND: f64 = 30.0;
pub const PROMPT: &str = "brief";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub source: String,
    pub round: usize,
    pub measured: Measured,
}

/// A source: its name, the gateway's flags and its environment.
type Source<'a> = (&'a str, Vec<String>, Vec<(&'a str, String)>);

pub async fn run(paths: &Paths, trials: usize) -> Result<Vec<Trial>, String> {
    let kokoro = stack::kokoro(paths).await?;
    // The agents a team brings run in this process; AgentCore is behind the AWS stand-ins, through the SDK.
    let agents = earshot_standins::start_agents(TOKENS_PER_SECOND).await.map_err(|e| format!("the agent stand-ins: {e}"))?;
    let (standins, pem) = stack::standins(paths, &kokoro.url).await?;
    let with_kokoro = |rest: &[&str]| -> Vec<String> { ["--kokoro-url", kokoro.url.as_str()].iter().chain(rest).map(|s| s.to_string()).collect() };
    let openai_url = format!("{}/v1", agents.url);
    let http_url = format!("{}/agent/sse", agents.url);
    let pem = pem.display().to_string();
    let tps = TOKENS_PER_SECOND.to_string();
    let sources: Vec<Source> = vec![
        ("scripted (in the gateway)", with_kokoro(&["--tokens-per-second", &tps, "--first-token-ms", "0"]), vec![]),
        ("OpenAI-compatible", with_kokoro(&["--agent", "openai", "--openai-base-url", &openai_url, "--openai-model", "standin"]), vec![]),
        ("HTTP agent (SSE)", with_kokoro(&["--agent", "http", "--http-agent-url", &http_url, "--http-agent-text-pointer", "/delta/text"]), vec![]),
        (
            "AgentCore (SDK)",
            with_kokoro(&[
                "--agent",
                "agentcore",
                "--agentcore-runtime-arn",
                "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/bench_agent-AbCd123456",
                "--aws-endpoint",
                &standins.url,
                "--aws-trust-pem",
                &pem,
            ]),
            stack::aws_env(),
        ),
    ];
    let mut gateways = Vec::new();
    for (name, args, env) in &sources {
        let slug: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_lowercase();
        gateways.push((name.to_string(), stack::gateway(paths, &format!("gateway-agent-{slug}"), args, env).await?));
    }
    let body = trial::body(Some(PROMPT), None, "incremental", None);
    let mut out = Vec::new();
    for round in 0..trials {
        for (source, gateway) in &gateways {
            stack::kokoro_idle(&kokoro.url).await?;
            let measured = trial::run(&gateway.url, &body, false).await.map_err(|e| format!("{source}: {e}"))?;
            out.push(Trial { source: source.clone(), round, measured });
        }
    }
    Ok(out)
}
