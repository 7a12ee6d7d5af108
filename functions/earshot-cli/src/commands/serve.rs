//! `earshot serve`: the gateway with its embedded defaults (local Kokoro, scripted agent, demo page).
//! The gateway's own settings (backends, agent, limits, scheduling) are the ones the Lambda reads,
//! from `earshot_wiring`; this adds what only a local server has: an address, the demo page, and
//! the connection limits the Lambda's front door keeps for it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use earshot_gateway::host_check::AllowedHosts;
use earshot_wiring::settings::AuthMode;
use earshot_wiring::{Place, Settings};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 8787)]
    port: u16,
    #[command(flatten)]
    settings: Settings,
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
    /// Connections open at once from one client address (the socket's peer); more are answered 429
    /// `too_many_connections` and closed. 0: no cap (behind a proxy every caller has its address).
    #[arg(long, env = "EARSHOT_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 32)]
    max_connections_per_address: usize,
    /// Requests one HTTP/2 connection may have open at once.
    #[arg(long, default_value_t = 16)]
    max_streams_per_connection: u32,
    /// Conversations spoken at once, over every connection; more are answered 503 `server_busy`.
    #[arg(long, default_value_t = 256)]
    max_conversations: usize,
    /// The most bytes of headers (names and values) one request may carry; over it, 431. At most 65536.
    #[arg(long, default_value_t = 16 * 1024)]
    max_header_bytes: usize,
    /// The most header fields one request may carry; over it, 431.
    #[arg(long, default_value_t = 100)]
    max_headers: usize,
    /// Seconds a connection may stay open with no request in flight (HTTP/1 keep-alive, an HTTP/2
    /// connection with no stream) before it is closed.
    #[arg(long, env = "EARSHOT_IDLE_TIMEOUT", default_value_t = 60.0)]
    idle_timeout: f64,
    /// Listen on an address other machines reach with no authentication (`--auth none`): only when
    /// something in front of the server checks its callers.
    #[arg(long, env = "EARSHOT_ALLOW_UNAUTHENTICATED")]
    allow_unauthenticated: bool,
    /// Without authentication, the names the server answers to besides the loopback ones and its bound
    /// address (`Host`, and the `Origin` of a page), comma-separated; `*`: any.
    #[arg(long, env = "EARSHOT_ALLOWED_HOSTS", value_delimiter = ',')]
    allowed_hosts: Vec<String>,
    /// On SIGTERM or SIGINT, seconds live conversations may go on before they end with `shutting_down`.
    #[arg(long, default_value_t = 5.0)]
    drain: f64,
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    init_logging();
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(serve(args))
}

pub fn init_logging() {
    let requested = std::env::var(earshot_wiring::settings::LOG_VARIABLE).ok();
    let filter = tracing_subscriber::EnvFilter::try_new(earshot_wiring::settings::log_directives(requested.as_deref())).unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let mut built = earshot_wiring::build(&args.settings, Place::Serve).await?;
    let web_dir = std::path::PathBuf::from(&args.web_dir);
    if web_dir.join("index.html").is_file() {
        built.settings.web_dir = Some(web_dir);
    } else if !args.web_dir.is_empty() {
        tracing::warn!("no index.html in {}: the demo page is not served", web_dir.display());
    }

    built.settings.limits.body_timeout = time_limit(args.body_timeout, "--body-timeout")?;
    built.settings.max_conversations = Some(within(args.max_conversations, 1, 100_000, "--max-conversations")?);
    let limits = earshot_gateway::ServerLimits {
        header_timeout: time_limit(args.header_timeout, "--header-timeout")?,
        max_connections: within(args.max_connections, 1, 100_000, "--max-connections")?,
        max_connections_per_address: within(args.max_connections_per_address, 0, 100_000, "--max-connections-per-address")?,
        max_streams_per_connection: within(args.max_streams_per_connection as usize, 1, 1000, "--max-streams-per-connection")? as u32,
        max_header_bytes: within(args.max_header_bytes, 1024, earshot_gateway::server::HARD_HEADER_BYTES, "--max-header-bytes")?,
        max_headers: within(args.max_headers, 8, 1000, "--max-headers")?,
        idle_timeout: time_limit(args.idle_timeout, "--idle-timeout")?,
        drain: seconds(args.drain, "--drain")?,
        ..Default::default()
    };

    let addr: SocketAddr = format!("{}:{}", args.host, args.port).parse().map_err(|e| format!("bad address: {e}"))?;
    if args.settings.auth != AuthMode::Token {
        let on_purpose = args.allow_unauthenticated || args.settings.auth == AuthMode::Public;
        built.settings.allowed_hosts = Some(unauthenticated_hosts(addr, on_purpose, &args.allowed_hosts)?);
    }
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
    // The streams have ended; what their conversations still do (their metric lines, clearing the
    // interrupt store) is waited for within the same grace.
    gateway.tasks().close();
    if tokio::time::timeout(grace, gateway.tasks().wait()).await.is_err() {
        tracing::warn!("{} conversation tasks were still running {} s after the streams ended", gateway.tasks().len(), grace.as_secs_f64());
    }
    match reason_rx.await {
        Ok(Some(message)) => Err(message),
        _ => Ok(()),
    }
}

/// The names a server with no authentication answers to, or why it may not listen on `addr`: an
/// address other machines reach needs `--auth token`, or `--allow-unauthenticated` said on purpose.
fn unauthenticated_hosts(addr: SocketAddr, allow_unauthenticated: bool, extra: &[String]) -> Result<AllowedHosts, String> {
    let ip = addr.ip();
    if !ip.is_loopback() && !allow_unauthenticated {
        return Err(format!(
            "--host {ip} is reachable from other machines, and this server asks callers for no credentials (--auth none): \
             choose --auth token (with --token-keys or --token-keys-secret), or say --allow-unauthenticated \
             (EARSHOT_ALLOW_UNAUTHENTICATED=true, or --auth public) when something in front of it checks callers"
        ));
    }
    let mut names = extra.to_vec();
    if !ip.is_unspecified() && !ip.is_loopback() {
        names.push(match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    Ok(AllowedHosts::loopback_and(&names))
}

/// `value` when it lies in `min..=max`; a flag outside it is refused at start, with the range.
fn within(value: usize, min: usize, max: usize, flag: &str) -> Result<usize, String> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{flag} must be between {min} and {max}, not {value}"))
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("{flag} must be a number of seconds, not {value}"))
}

/// A client's time limit: zero would time out every request, and more than an hour holds a connection
/// slot for a client that sends nothing; either is refused at start.
fn time_limit(value: f64, flag: &str) -> Result<Duration, String> {
    if !(0.1..=3600.0).contains(&value) {
        return Err(format!("{flag} must be between 0.1 and 3600 seconds, not {value}"));
    }
    seconds(value, flag)
}

#[cfg(test)]
mod tests {
    use super::{time_limit, unauthenticated_hosts, within};
    use earshot_gateway::host_check::AllowedHosts;

    #[test]
    fn a_public_address_without_authentication_is_refused_unless_said_on_purpose() {
        let public = "0.0.0.0:8787".parse().unwrap();
        let refused = unauthenticated_hosts(public, false, &[]).unwrap_err();
        assert!(refused.contains("--auth token") && refused.contains("--allow-unauthenticated"), "{refused}");
        assert_eq!(unauthenticated_hosts(public, true, &[]), Ok(AllowedHosts::Names(vec![])));
        // Bound to one address: it is one of the names, beside the loopback ones.
        let lan = "192.168.1.20:8787".parse().unwrap();
        let names = unauthenticated_hosts(lan, true, &["speech.example.com".into()]).unwrap();
        assert!(names.allows("192.168.1.20:8787") && names.allows("speech.example.com") && names.allows("localhost:8787"));
        assert!(!names.allows("rebind.example"));
        let v6 = "[fd00::5]:8787".parse().unwrap();
        assert!(unauthenticated_hosts(v6, true, &[]).unwrap().allows("[fd00::5]:8787"));
        assert_eq!(unauthenticated_hosts("127.0.0.1:8787".parse().unwrap(), false, &[]), Ok(AllowedHosts::Names(vec![])));
    }

    #[test]
    fn zero_or_absurd_limits_are_refused_at_start() {
        assert!(time_limit(0.0, "--body-timeout").unwrap_err().contains("between 0.1 and 3600"));
        assert!(time_limit(f64::NAN, "--body-timeout").is_err());
        assert!(time_limit(1e9, "--header-timeout").is_err());
        assert_eq!(time_limit(10.0, "--body-timeout"), Ok(std::time::Duration::from_secs(10)));
        assert!(within(0, 1024, 65536, "--max-header-bytes").unwrap_err().contains("between 1024 and 65536"));
        assert_eq!(within(16384, 1024, 65536, "--max-header-bytes"), Ok(16384));
    }
}
