//! `earshot serve`: the gateway with its embedded defaults (local Kokoro, scripted agent, demo page).
//! The gateway's own settings (backends, agent, limits, scheduling) are the ones the Lambda reads,
//! from `earshot_wiring`, beside what only a local server has ([`ServeSettings`]: an address, the demo
//! page, and the connection limits the Lambda's front door keeps for it); both are converted and
//! checked there. This runs the server, and stops it on a signal or a backend that can never be used.

use std::sync::Arc;

use clap::Args;
use earshot_wiring::{Place, ServeSettings, Settings};

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    serve: ServeSettings,
    #[command(flatten)]
    settings: Settings,
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    init_logging();
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(serve(args))
}

pub fn init_logging() {
    let requested = std::env::var(earshot_wiring::settings::LOG_VARIABLE).ok();
    let filter = tracing_subscriber::EnvFilter::try_new(earshot_wiring::settings::log_directives(requested.as_deref())).unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(earshot_wiring::log_lines::stderr_coloured).try_init();
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    // Every setting is converted and checked before anything connects or listens.
    let mut served = args.serve.served(args.settings.auth)?;
    served.limits.trusted_proxies = args.settings.proxies()?;
    let resolved = args.settings.resolve(Place::Serve)?.serving(&served);
    let built = earshot_wiring::connect(resolved).await?;
    let (mut limits, addr) = (served.limits, served.addr);
    limits.metrics_namespace = built.settings.metrics_namespace.clone();
    let (gateway, mut watches) = built.gateway();
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
    // The openers into the sentence cache, in the background, stepping aside for every caller.
    let _warmup = earshot_gateway::warmup::start(gateway.clone(), earshot_gateway::warmup::Begin::AtOnce);
    let conversations = gateway.shutdown().clone();
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
    let grace = limits.grace;
    earshot_gateway::serve(listener, earshot_gateway::router(gateway.clone()), limits, signal, conversations).await;
    // The streams have ended: the background work with no end of its own (the cache's warm-up, a sick
    // arm's probe) stops, and what the conversations still do (their metric lines, clearing the
    // interrupt store) is waited for within the same grace.
    gateway.shutdown().cancel();
    gateway.tasks().close();
    if tokio::time::timeout(grace, gateway.tasks().wait()).await.is_err() {
        tracing::warn!("{} conversation tasks were still running {} s after the streams ended", gateway.tasks().len(), grace.as_secs_f64());
    }
    match reason_rx.await {
        Ok(Some(message)) => Err(message),
        _ => Ok(()),
    }
}
