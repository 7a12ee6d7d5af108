//! `earshot token`: mints a gateway token for local use and scripts, exactly as an app's backend would
//! (HS256, the key's id in `kid`, `aud`, `exp`, and the scopes given). The README shows the same in a few
//! lines of Node and Python.

use clap::Args;
use earshot_gateway::auth::{mint, now, Claims, TokenAuth};
use earshot_gateway::conversation_scope::check_pattern;

#[derive(Args)]
pub struct TokenArgs {
    /// The gateway's token keys, `kid=secret,…` (the same value as the gateway's).
    #[arg(long, env = "EARSHOT_TOKEN_KEYS", hide_env_values = true)]
    keys: String,
    /// The key that signs (the first one when unset).
    #[arg(long)]
    kid: Option<String>,
    /// Seconds until the token expires.
    #[arg(long, default_value_t = 300)]
    ttl: u64,
    #[arg(long, default_value = "earshot")]
    audience: String,
    /// Who the token is for: the owner of the conversations it starts (without one, the token alone
    /// owns them, and a new token does not reach them).
    #[arg(long)]
    sub: Option<String>,
    /// A backend the bearer may use (repeat for more; none: any).
    #[arg(long = "backend")]
    backends: Vec<String>,
    /// A voice the bearer may use (repeat for more; none: any).
    #[arg(long = "voice")]
    voices: Vec<String>,
    /// A release mode the bearer may use (repeat for more; none: any).
    #[arg(long = "release")]
    releases: Vec<String>,
    /// The most characters one request may send.
    #[arg(long)]
    max_chars: Option<usize>,
    /// A conversation id, `*`, or whole segments then `:*` (`user-42:*`) the bearer may speak under and
    /// interrupt (repeat for more).
    #[arg(long = "conversation")]
    conversations: Vec<String>,
    /// The most live conversations of the bearer's owner (narrows the gateway's limit, never widens it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_conversations: Option<u64>,
    /// The most characters the bearer's owner may have spoken in a rolling hour (narrows the gateway's
    /// budget, never widens it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_chars_per_hour: Option<u64>,
    /// The most characters of prompts, turns and texts the bearer's owner may send in a rolling hour
    /// (narrows the gateway's input budget, never widens it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_input_chars_per_hour: Option<u64>,
    /// The most requests the bearer's owner may make in a minute (narrows the gateway's, never widens it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_requests_per_minute: Option<u64>,
    /// The owner's lexicon: one of the gateway's `EARSHOT_OWNER_LEXICONS`, said before the deployment's.
    #[arg(long)]
    lexicon: Option<String>,
}

pub fn run(args: TokenArgs) -> Result<(), String> {
    let keys = TokenAuth::parse_keys(&args.keys).map_err(|e| format!("--keys: {e}"))?;
    let (kid, secret) = match &args.kid {
        Some(kid) => keys.iter().find(|(k, _)| k == kid).ok_or_else(|| format!("--kid: no key `{kid}` in --keys"))?,
        None => keys.first().ok_or("--keys names no key")?,
    };
    for pattern in &args.conversations {
        check_pattern(pattern).map_err(|why| format!("--conversation: {why}"))?;
    }
    let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
    let issued = now();
    let claims = Claims {
        aud: args.audience.into(),
        exp: issued + args.ttl,
        iat: Some(issued),
        nbf: None,
        sub: args.sub,
        backends: some(args.backends),
        voices: some(args.voices),
        releases: some(args.releases),
        lexicon: args.lexicon,
        max_chars: args.max_chars,
        conversations: some(args.conversations),
        max_conversations: args.max_conversations.map(|n| n as usize),
        max_chars_per_hour: args.max_chars_per_hour,
        max_input_chars_per_hour: args.max_input_chars_per_hour,
        max_requests_per_minute: args.max_requests_per_minute,
    };
    println!("{}", mint(kid, secret, &claims)?);
    Ok(())
}
