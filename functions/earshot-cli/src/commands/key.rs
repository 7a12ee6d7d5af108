//! `earshot key`: the API keys an OpenAI client is configured with once (`earshot_gateway::api_keys`).
//! `create` prints a new key once and keeps only its digest in the keys file; `revoke` marks one refused
//! from the next request on; `list` shows what is kept (never a key).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use earshot_gateway::api_keys::{load, mint, save, KeyScope};

#[derive(Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    action: KeyAction,
    /// The keys file the gateway reads (`--api-keys`, `EARSHOT_API_KEYS_FILE`).
    #[arg(long, env = "EARSHOT_API_KEYS_FILE", global = true, default_value = "earshot-keys.json")]
    file: PathBuf,
}

#[derive(Subcommand)]
enum KeyAction {
    /// Make a key for an owner: printed once, kept only as its digest.
    Create(CreateArgs),
    /// Refuse a key from the next request on, by its id (`earshot key list` shows them).
    Revoke {
        /// The key's id: the 8 characters after `sk-earshot-`.
        id: String,
    },
    /// The keys kept: id, owner, when made, when they expire, revoked or not, and their scope.
    List,
}

#[derive(Args)]
struct CreateArgs {
    /// Whose conversations the key starts (its budgets and places are this owner's).
    #[arg(long)]
    owner: String,
    /// Days until the key stops working (none: it lasts until revoked).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    expires_in_days: Option<u64>,
    /// A backend the key may use (repeat for more; none: any).
    #[arg(long = "backend")]
    backends: Vec<String>,
    /// A voice the key may use (repeat for more; none: any).
    #[arg(long = "voice")]
    voices: Vec<String>,
    /// A release mode the key may use (repeat for more; none: any).
    #[arg(long = "release")]
    releases: Vec<String>,
    /// The most characters one request may send.
    #[arg(long)]
    max_chars: Option<usize>,
    /// The most live conversations of the key's owner (narrows the gateway's limit).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_conversations: Option<u64>,
    /// The most characters the owner may have spoken in a rolling hour (narrows the gateway's budget).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_chars_per_hour: Option<u64>,
    /// The most requests the owner may make in a minute (narrows the gateway's).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_requests_per_minute: Option<u64>,
}

pub fn run(args: KeyArgs) -> Result<(), String> {
    let mut keys = load(&args.file)?;
    match args.action {
        KeyAction::Create(create) => {
            if create.owner.trim().is_empty() || create.owner.len() > 128 {
                return Err("--owner: a name of 1 to 128 characters".into());
            }
            let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
            let scope = KeyScope {
                backends: some(create.backends),
                voices: some(create.voices),
                releases: some(create.releases),
                max_chars: create.max_chars,
                max_conversations: create.max_conversations.map(|n| n as usize),
                max_chars_per_hour: create.max_chars_per_hour,
                max_requests_per_minute: create.max_requests_per_minute,
            };
            let expires = create.expires_in_days.map(|days| earshot_gateway::auth::now() + days * 86_400);
            let (key, id, record) = mint(&create.owner, expires, scope);
            keys.insert(id.clone(), record);
            save(&args.file, &keys)?;
            eprintln!("earshot: key {id} for {} kept (as its digest) in {}; it is shown this once:", create.owner, args.file.display());
            println!("{key}");
        }
        KeyAction::Revoke { id } => {
            let record = keys.get_mut(&id).ok_or_else(|| format!("no key `{id}` in {}", args.file.display()))?;
            record.revoked = true;
            save(&args.file, &keys)?;
            eprintln!("earshot: key {id} revoked: refused from the next request on");
        }
        KeyAction::List => {
            for (id, record) in &keys {
                let state = if record.revoked { "revoked" } else { "active" };
                let scope = serde_json::to_string(&record.scope).map_err(|e| e.to_string())?;
                println!(
                    "{id}  {state}  owner={}  created={}  expires={}  scope={scope}",
                    record.owner,
                    record.created,
                    record.expires.map_or("never".into(), |e| e.to_string())
                );
            }
        }
    }
    Ok(())
}
