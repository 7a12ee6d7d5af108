//! How fast an interrupt stops a conversation that is speaking through the real model: from
//! `POST /v1/conversations/{id}/interrupt` to the end of the client's stream, and to the Kokoro
//! container's `/stats` showing no request at work (its `cancel` arrived).
//!
//! Two paths: `earshot serve` on its own (the interrupt reaches the conversation in the same process),
//! and two gateways that share only the DynamoDB interrupt table (moto's server), one speaking and one
//! taking the interrupt, as two Lambda invocations do; the store is read every 250 ms.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use earshot_client::{speak, CallOptions};
use earshot_core::protocol::Delivery;
use serde::{Deserialize, Serialize};

use crate::services::{free_port, Service};
use crate::stack::{self, Paths};
use crate::trial;

const TEXT: &str = "This answer goes on for a long while, one sentence after another, so that there is always work to stop. ";
pub const POLL_MS: u64 = 250;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub path: String,
    pub round: usize,
    /// The interrupt's answer (202).
    pub status: u16,
    pub answered_ms: f64,
    pub stream_ended_ms: f64,
    pub container_idle_ms: Option<f64>,
    /// The code the stream ended with.
    pub code: Option<String>,
}

pub async fn run(paths: &Paths, trials: usize, moto_server: &Path) -> Result<Vec<Trial>, String> {
    let kokoro = stack::kokoro(paths).await?;
    let local = stack::gateway(paths, "gateway-interrupt-local", &["--kokoro-url".into(), kokoro.url.clone()], &[]).await?;

    let (_moto, moto_url) = moto_with_table(paths, moto_server).await?;
    let shared_args: Vec<String> =
        // One deployment: the instances share its conversation secret, or an interrupt through the other would
        // name another key.
        [
            "--kokoro-url",
            &kokoro.url,
            "--interrupt-table",
            "interrupts",
            "--interrupt-endpoint",
            &moto_url,
            "--interrupt-poll-ms",
            &POLL_MS.to_string(),
            "--conversation-secret",
            "the bench's one deployment, 32 bytes and more",
        ]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let speaking = stack::gateway(paths, "gateway-interrupt-speaking", &shared_args, &stack::aws_env()).await?;
    let taking = stack::gateway(paths, "gateway-interrupt-taking", &shared_args, &stack::aws_env()).await?;

    let cells = [
        ("earshot serve (in process)", local.url.clone(), local.url.clone()),
        ("two instances through DynamoDB (moto)", speaking.url.clone(), taking.url.clone()),
    ];
    let mut out = Vec::new();
    for round in 0..trials {
        for (path, speak_url, interrupt_url) in &cells {
            stack::kokoro_idle(&kokoro.url).await?;
            let t = one(&kokoro.url, speak_url, interrupt_url, &format!("bench-{round}-{}", path.len())).await.map_err(|e| format!("{path}: {e}"))?;
            out.push(Trial { path: path.to_string(), round, ..t });
        }
    }
    Ok(out)
}

/// moto's server (stopped when the service is dropped) with the interrupt table, and its URL.
pub async fn moto_with_table(paths: &Paths, moto_server: &Path) -> Result<(Service, String), String> {
    if !moto_server.exists() {
        return Err(format!("{} is missing: `make moto-venv` installs it (make bench does)", moto_server.display()));
    }
    let moto_port = free_port();
    let mut command = Command::new(moto_server);
    command.args(["-H", "127.0.0.1", "-p", &moto_port.to_string()]);
    let mut moto = Service::spawn("moto", command, &paths.logs)?;
    let moto_url = format!("http://127.0.0.1:{moto_port}");
    moto.wait_ready(&format!("{moto_url}/moto-api/"), Duration::from_secs(60), Duration::from_millis(50)).await?;
    create_table(moto_server, &moto_url)?;
    Ok((moto, moto_url))
}

/// The table as the CDK app creates it, made with moto's own boto3.
fn create_table(moto_server: &Path, url: &str) -> Result<(), String> {
    let python = moto_server.with_file_name("python");
    let script = "import sys, boto3\n\
        db = boto3.client('dynamodb', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='AKIDBENCH', aws_secret_access_key='bench')\n\
        db.create_table(TableName='interrupts', BillingMode='PAY_PER_REQUEST', AttributeDefinitions=[{'AttributeName': 'conversation_id', 'AttributeType': 'S'}], KeySchema=[{'AttributeName': 'conversation_id', 'KeyType': 'HASH'}])\n";
    let status = Command::new(python).args(["-c", script, url]).status().map_err(|e| format!("cannot run moto's python: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("the interrupt table could not be created in moto".into())
    }
}

async fn one(kokoro: &str, speak_url: &str, interrupt_url: &str, id: &str) -> Result<Trial, String> {
    let mut body = trial::body(None, Some(&TEXT.repeat(12)), "incremental", None);
    body.conversation_id = Some(id.to_string());
    // The stream's end is stamped where the client sees it.
    let stream = tokio::spawn({
        let url = speak_url.to_string();
        async move {
            let options = CallOptions { delivery: Delivery::Sse, timeout: Duration::from_secs(120), stop_after_audio_chunks: None, ..Default::default() };
            let received = speak(&url, &body, &options).await;
            (received, Instant::now())
        }
    });
    let client = reqwest::Client::new();
    let active = || async {
        let stats: serde_json::Value = client.get(format!("{kokoro}/stats")).send().await.ok()?.json().await.ok()?;
        stats["active_requests"].as_u64()
    };
    // Interrupt once the container is at work on the answer.
    for _ in 0..4000 {
        if active().await.unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sent = Instant::now();
    let ms = |at: Instant| at.saturating_duration_since(sent).as_secs_f64() * 1000.0;
    let response = client.post(format!("{interrupt_url}/v1/conversations/{id}/interrupt")).send().await.map_err(|e| e.to_string())?;
    let (status, answered_ms) = (response.status().as_u16(), ms(Instant::now()));
    let mut container_idle_ms = None;
    while sent.elapsed() < Duration::from_secs(10) {
        if active().await == Some(0) {
            container_idle_ms = Some(ms(Instant::now()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let (received, ended) = tokio::time::timeout(Duration::from_secs(10), stream).await.map_err(|_| "the stream did not end")?.map_err(|e| e.to_string())?;
    let received = received.map_err(|e| e.to_string())?;
    Ok(Trial { path: String::new(), round: 0, status, answered_ms, stream_ended_ms: ms(ended), container_idle_ms, code: received.error.map(|e| e.code) })
}
