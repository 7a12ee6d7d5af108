//! What only a local server has: an address, the demo page, and the connection limits the Lambda's
//! front door keeps for it. `earshot serve` takes these flags beside the gateway's [`crate::Settings`];
//! [`ServeSettings::served`] converts them, purely, into what the server runs with, refusing a value
//! out of range with the same [`SettingsError`] shape as every other setting.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser};
use earshot_gateway::host_check::AllowedHosts;
use earshot_gateway::ServerLimits;

use crate::settings::AuthMode;
use crate::settings_error::{within, SettingsError};

/// The flags only `earshot serve` has: where it listens, the demo page, and the connection limits.
#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 8787)]
    pub port: u16,
    /// The folder of the demo page and the browser client, served at `/` (none: no page).
    #[arg(long, default_value = "web")]
    pub web_dir: String,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, default_value_t = 5.0)]
    pub header_timeout: f64,
    /// Seconds a client may take to send a request's body.
    #[arg(long, default_value_t = 10.0)]
    pub body_timeout: f64,
    /// Connections open at once; more are answered 503 and closed.
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// Connections open at once from one client address (the socket's peer); more are answered 429
    /// `too_many_connections` and closed. 0: no cap (behind a proxy every caller has its address).
    #[arg(long, env = "EARSHOT_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 32)]
    pub max_connections_per_address: usize,
    /// Requests one HTTP/2 connection may have open at once.
    #[arg(long, default_value_t = 16)]
    pub max_streams_per_connection: u32,
    /// Conversations spoken at once, over every connection; more are answered 503 `server_busy`.
    #[arg(long, default_value_t = 256)]
    pub max_conversations: usize,
    /// The most bytes of headers (names and values) one request may carry; over it, 431. At most 65536.
    #[arg(long, default_value_t = 16 * 1024)]
    pub max_header_bytes: usize,
    /// The most header fields one request may carry; over it, 431.
    #[arg(long, default_value_t = 100)]
    pub max_headers: usize,
    /// Seconds a connection may stay open with no request in flight (HTTP/1 keep-alive, an HTTP/2
    /// connection with no stream) before it is closed.
    #[arg(long, env = "EARSHOT_IDLE_TIMEOUT", default_value_t = 60.0)]
    pub idle_timeout: f64,
    /// Seconds a response may hold data its client does not take (an HTTP/2 window left at zero, an HTTP/1
    /// client that never reads) with nothing else on its connection moving, before the connection is closed.
    #[arg(long, env = "EARSHOT_WRITE_TIMEOUT", default_value_t = 30.0)]
    pub write_timeout: f64,
    /// The leading bits of an IPv6 caller's address that count as one caller for
    /// `--max-connections-per-address` (a subscriber is given a /64; 128: the exact address).
    #[arg(long, env = "EARSHOT_IPV6_CALLER_PREFIX", default_value_t = 64)]
    pub ipv6_caller_prefix: u8,
    /// Listen on an address other machines reach with no authentication (`--auth none`): only when
    /// something in front of the server checks its callers.
    #[arg(long, env = "EARSHOT_ALLOW_UNAUTHENTICATED")]
    pub allow_unauthenticated: bool,
    /// Without authentication, the names the server answers to besides the loopback ones and its bound
    /// address (`Host`, and the `Origin` of a page), comma-separated; `*`: any.
    #[arg(long, env = "EARSHOT_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// On SIGTERM or SIGINT, seconds live conversations may go on before they end with `shutting_down`.
    #[arg(long, default_value_t = 5.0)]
    pub drain: f64,
}

/// What the server runs with, converted from [`ServeSettings`].
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The address and port to listen on.
    pub addr: SocketAddr,
    /// The limits each connection is held to: timeouts, connections open at once, header sizes.
    pub limits: ServerLimits,
    /// Conversations spoken at once, over every connection.
    pub max_conversations: usize,
    /// The longest a client may take to send a request's body.
    pub body_timeout: Duration,
    /// The names a server with no authentication answers to (`None`: token mode, no check).
    pub allowed_hosts: Option<AllowedHosts>,
    /// Where the demo page may be (`None`: no page asked for).
    pub web_dir: Option<PathBuf>,
}

impl ServeSettings {
    /// The server these settings describe, for a gateway whose callers are checked by `auth`.
    pub fn served(&self, auth: AuthMode) -> Result<Served, SettingsError> {
        let count = |value: usize, min: u64, max: u64, flag: &str| -> Result<usize, SettingsError> {
            within(value as u64, min, max, &format!("must be {min} to {max}")).map(|v| v as usize).map_err(|why| refuse(flag, why))
        };
        let limits = ServerLimits {
            header_timeout: time_limit(self.header_timeout, "header-timeout")?,
            max_connections: count(self.max_connections, 1, 100_000, "max-connections")?,
            max_connections_per_address: count(self.max_connections_per_address, 0, 100_000, "max-connections-per-address")?,
            max_streams_per_connection: count(self.max_streams_per_connection as usize, 1, 1000, "max-streams-per-connection")? as u32,
            max_header_bytes: count(self.max_header_bytes, 1024, earshot_gateway::server::HARD_HEADER_BYTES as u64, "max-header-bytes")?,
            max_headers: count(self.max_headers, 8, 1000, "max-headers")?,
            idle_timeout: time_limit(self.idle_timeout, "idle-timeout")?,
            write_timeout: time_limit(self.write_timeout, "write-timeout")?,
            ipv6_prefix: count(usize::from(self.ipv6_caller_prefix), 16, 128, "ipv6-caller-prefix")? as u8,
            drain: seconds(self.drain, "drain")?,
            ..Default::default()
        };
        let addr: SocketAddr = format!("{}:{}", self.host, self.port)
            .parse()
            .map_err(|e| refuse("host", format!("`{}` with port {} is not an address to listen on: {e}", self.host, self.port)))?;
        let allowed_hosts = match auth {
            AuthMode::Token => None,
            AuthMode::None | AuthMode::Public => {
                Some(unauthenticated_hosts(addr, self.allow_unauthenticated || auth == AuthMode::Public, &self.allowed_hosts)?)
            }
        };
        Ok(Served {
            addr,
            limits,
            max_conversations: count(self.max_conversations, 1, 100_000, "max-conversations")?,
            body_timeout: time_limit(self.body_timeout, "body-timeout")?,
            allowed_hosts,
            web_dir: (!self.web_dir.is_empty()).then(|| PathBuf::from(&self.web_dir)),
        })
    }
}

/// `earshot serve`'s own flags as a command of their own, for their names.
#[derive(Parser)]
struct Serve {
    #[command(flatten)]
    serve: ServeSettings,
}

/// `earshot serve`'s setting `--{flag}`, refused: named with its variable where it has one.
fn refuse(flag: &str, message: impl Into<String>) -> SettingsError {
    SettingsError::of_arg(&Serve::command(), flag, message)
}

/// The names a server with no authentication answers to, or why it may not listen on `addr`: an
/// address other machines reach needs `--auth token`, or `--allow-unauthenticated` said on purpose.
fn unauthenticated_hosts(addr: SocketAddr, allow_unauthenticated: bool, extra: &[String]) -> Result<AllowedHosts, SettingsError> {
    let ip = addr.ip();
    if !ip.is_loopback() && !allow_unauthenticated {
        return Err(refuse(
            "host",
            format!(
                "{ip} is reachable from other machines, and this server asks callers for no credentials (--auth none): \
                 choose --auth token (with --token-keys or --token-keys-secret), or say --allow-unauthenticated \
                 (EARSHOT_ALLOW_UNAUTHENTICATED=true, or --auth public) when something in front of it checks callers"
            ),
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

fn seconds(value: f64, flag: &str) -> Result<Duration, SettingsError> {
    Duration::try_from_secs_f64(value).map_err(|_| refuse(flag, format!("must be a number of seconds, not {value}")))
}

/// A client's time limit: zero would time out every request, and more than an hour holds a connection
/// slot for a client that sends nothing; either is refused at start.
fn time_limit(value: f64, flag: &str) -> Result<Duration, SettingsError> {
    if !(0.1..=3600.0).contains(&value) {
        return Err(refuse(flag, format!("must be 0.1 to 3600 seconds, not {value}")));
    }
    seconds(value, flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(args: &[&str], auth: AuthMode) -> Result<Served, String> {
        let argv = std::iter::once("earshot").chain(args.iter().copied());
        Serve::try_parse_from(argv).map_err(|e| e.to_string())?.serve.served(auth).map_err(String::from)
    }

    #[test]
    fn each_limit_out_of_range_is_refused_by_its_flag() {
        let table: &[(&[&str], &str)] = &[
            (&["--header-timeout", "0"], "--header-timeout: must be 0.1 to 3600 seconds, not 0"),
            (&["--header-timeout", "NaN"], "--header-timeout: must be 0.1 to 3600 seconds, not NaN"),
            (&["--body-timeout", "1e9"], "--body-timeout: must be 0.1 to 3600 seconds, not 1000000000"),
            (&["--idle-timeout", "0.01"], "EARSHOT_IDLE_TIMEOUT (--idle-timeout): must be 0.1 to 3600 seconds, not 0.01"),
            (&["--drain=-1"], "--drain: must be a number of seconds, not -1"),
            (&["--max-connections", "0"], "--max-connections: must be 1 to 100000, not 0"),
            (
                &["--max-connections-per-address", "100001"],
                "EARSHOT_MAX_CONNECTIONS_PER_ADDRESS (--max-connections-per-address): must be 0 to 100000, not 100001",
            ),
            (&["--max-streams-per-connection", "0"], "--max-streams-per-connection: must be 1 to 1000, not 0"),
            (&["--max-header-bytes", "100"], "--max-header-bytes: must be 1024 to 65536, not 100"),
            (&["--max-headers", "5"], "--max-headers: must be 8 to 1000, not 5"),
            (&["--max-conversations", "0"], "--max-conversations: must be 1 to 100000, not 0"),
            (&["--host", "not an address"], "--host: `not an address` with port 8787 is not an address to listen on"),
        ];
        for (args, said) in table {
            let refused = served(args, AuthMode::None).unwrap_err();
            assert!(refused.starts_with(said), "{args:?}: {refused}");
        }
    }

    #[test]
    fn the_defaults_convert_to_the_server_limits() {
        let s = served(&[], AuthMode::None).unwrap();
        assert_eq!(s.addr, "127.0.0.1:8787".parse().unwrap());
        assert_eq!((s.limits.max_connections, s.limits.max_connections_per_address, s.limits.max_streams_per_connection), (512, 32, 16));
        assert_eq!((s.limits.max_header_bytes, s.limits.max_headers), (16 * 1024, 100));
        assert_eq!(
            (s.limits.header_timeout, s.body_timeout, s.limits.idle_timeout),
            (Duration::from_secs(5), Duration::from_secs(10), Duration::from_secs(60))
        );
        assert_eq!((s.limits.drain, s.max_conversations), (Duration::from_secs(5), 256));
        assert_eq!(s.allowed_hosts, Some(AllowedHosts::Names(vec![])));
        assert_eq!(s.web_dir, Some(PathBuf::from("web")));
        assert_eq!(served(&["--web-dir", ""], AuthMode::None).unwrap().web_dir, None);
        // Token mode checks callers itself: no list of names.
        assert_eq!(served(&["--host", "0.0.0.0"], AuthMode::Token).unwrap().allowed_hosts, None);
    }

    #[test]
    fn a_public_address_without_authentication_is_refused_unless_said_on_purpose() {
        let refused = served(&["--host", "0.0.0.0"], AuthMode::None).unwrap_err();
        assert!(
            refused.starts_with("--host: 0.0.0.0 is reachable") && refused.contains("--auth token") && refused.contains("--allow-unauthenticated"),
            "{refused}"
        );
        for on_purpose in [served(&["--host", "0.0.0.0", "--allow-unauthenticated"], AuthMode::None), served(&["--host", "0.0.0.0"], AuthMode::Public)] {
            assert_eq!(on_purpose.unwrap().allowed_hosts, Some(AllowedHosts::Names(vec![])));
        }
        // Bound to one address: it is one of the names, beside the loopback ones.
        let lan = served(&["--host", "192.168.1.20", "--allow-unauthenticated", "--allowed-hosts", "speech.example.com"], AuthMode::None).unwrap();
        let names = lan.allowed_hosts.unwrap();
        assert!(names.allows("192.168.1.20:8787") && names.allows("speech.example.com") && names.allows("localhost:8787"));
        assert!(!names.allows("rebind.example"));
        let v6 = served(&["--host", "fd00::5", "--allow-unauthenticated"], AuthMode::None);
        assert!(v6.is_err(), "an IPv6 address needs its brackets to be joined with a port");
        let v6 = served(&["--host", "[fd00::5]", "--allow-unauthenticated"], AuthMode::None).unwrap();
        assert!(v6.allowed_hosts.unwrap().allows("[fd00::5]:8787"));
    }
}
