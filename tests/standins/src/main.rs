//! Runs the stand-ins on their own, for local runs of the production path
//! (`earshot serve --aws-endpoint …`): prints their URL and writes their certificate.

use clap::Parser;

#[derive(Parser)]
#[command(about = "Local stand-ins for SageMaker, Polly, Bedrock and AgentCore, and for the agents a team brings (test infrastructure).")]
struct Args {
    #[arg(long, default_value_t = 8443)]
    port: u16,
    #[arg(long, env = "KOKORO_URL", default_value = "http://127.0.0.1:8080")]
    kokoro_url: String,
    /// The Kokoro voice pack that voices the Polly stand-in.
    #[arg(long, default_value = "jm_kumo")]
    polly_voice: String,
    #[arg(long, default_value_t = 30.0)]
    tokens_per_second: f64,
    /// Also serve the agent stand-ins (an OpenAI-compatible endpoint, an HTTP agent) over plain HTTP on
    /// this port.
    #[arg(long)]
    agents_port: Option<u16>,
    /// The key the agent stand-ins require as `Authorization: Bearer …` (none: any request is answered).
    #[arg(long)]
    agents_key: Option<String>,
    /// Where to write the certificate clients must trust.
    #[arg(long, default_value = "standins.pem")]
    cert_out: std::path::PathBuf,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let config = earshot_standins::StandInsConfig {
        kokoro_url: args.kokoro_url,
        polly_voice: args.polly_voice,
        tokens_per_second: args.tokens_per_second,
        ..Default::default()
    };
    let standins = earshot_standins::start(config, args.port).await.map_err(|e| format!("cannot listen on port {}: {e}", args.port))?;
    // Written beside its place and renamed into it, so that a reader never sees half a certificate
    // (nor, once the file is there, the previous run's).
    let partial = args.cert_out.with_extension("pem.partial");
    std::fs::write(&partial, &standins.cert_pem)
        .and_then(|()| std::fs::rename(&partial, &args.cert_out))
        .map_err(|e| format!("cannot write {}: {e}", args.cert_out.display()))?;
    println!("stand-ins listening on {} (certificate: {})", standins.url, args.cert_out.display());
    // Kept alive until the process ends.
    let _agents = match args.agents_port {
        Some(port) => {
            let agents = earshot_standins::start_agents_on(port, args.tokens_per_second, args.agents_key.clone())
                .await
                .map_err(|e| format!("cannot listen on port {port}: {e}"))?;
            println!("agent stand-ins listening on {}", agents.url);
            Some(agents)
        }
        None => None,
    };
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    Ok(())
}
