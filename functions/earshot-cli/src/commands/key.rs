//! `earshot key`: the API keys an OpenAI client is configured with once (`earshot_gateway::api_keys`).
//! `create` prints a new key once and keeps only its digest; `revoke` marks one refused from the next
//! request on; `list` shows what is kept (never a key). They are kept in a file for `earshot serve`
//! (`--file`), or in a deployment's table (`--table`, or `--outputs` for the one `make deploy` made).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use earshot_gateway::api_keys::{mint, KeyBook, KeyFile, KeyScope};

#[derive(Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    action: KeyAction,
    /// The keys file the gateway reads (`--api-keys`, `EARSHOT_API_KEYS_FILE`).
    #[arg(long, env = "EARSHOT_API_KEYS_FILE", global = true, default_value = "earshot-keys.json")]
    file: PathBuf,
    /// A deployment's DynamoDB table (its stack's `KeysTable` output) instead of a file: what the deployed
    /// function URL reads, written with the environment's AWS credentials.
    #[arg(long, global = true, conflicts_with = "outputs")]
    table: Option<String>,
    /// The outputs `make deploy` wrote (infra/cdk/cdk.out/outputs.json): the deployment's table and Region
    /// are read from them.
    #[arg(long, global = true)]
    outputs: Option<PathBuf>,
    /// The table's Region (default: the outputs', else the environment's).
    #[arg(long, global = true)]
    region: Option<String>,
    /// Another DynamoDB endpoint (a local stand-in).
    #[arg(long, global = true)]
    endpoint_url: Option<String>,
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
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let book = book(&args).await?;
        act(args.action, book.as_ref()).await.map_err(|e| format!("{}: {e}", book.place()))
    })
}

/// Where the keys are kept: the table named (or in the outputs), else the file.
async fn book(args: &KeyArgs) -> Result<Arc<dyn KeyBook>, String> {
    let mut region = args.region.clone();
    let table = match (&args.table, &args.outputs) {
        (Some(table), _) => Some(table.clone()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let deployed = super::metric_lines::deployment_output(&text, "KeysTable").map_err(|e| format!("{}: {e}", path.display()))?;
            region = region.or(deployed.1);
            Some(deployed.0)
        }
        (None, None) => None,
    };
    match table {
        Some(table) => table_book(&table, region, args.endpoint_url.clone()).await,
        None => Ok(Arc::new(KeyFile::open(&args.file)?)),
    }
}

#[cfg(feature = "aws")]
async fn table_book(table: &str, region: Option<String>, endpoint_url: Option<String>) -> Result<Arc<dyn KeyBook>, String> {
    let config = earshot_aws::AwsSettings { region, ..Default::default() }.sdk_config().await;
    Ok(Arc::new(earshot_aws::DynamoKeyBook::new(&config, table, endpoint_url.as_deref())))
}

#[cfg(not(feature = "aws"))]
async fn table_book(_: &str, _: Option<String>, _: Option<String>) -> Result<Arc<dyn KeyBook>, String> {
    Err("this build has no AWS parts (built without the `aws` feature): keep keys in a file (--file), or build earshot with its default features".into())
}

async fn act(action: KeyAction, book: &dyn KeyBook) -> Result<(), String> {
    match action {
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
            book.keep(&id, &record).await.map_err(|e| e.to_string())?;
            eprintln!("earshot: key {id} for {} kept (as its digest) in {}; it is shown this once:", create.owner, book.place());
            println!("{key}");
        }
        KeyAction::Revoke { id } => {
            let mut record = book.find(&id).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no key `{id}`"))?;
            record.revoked = true;
            book.keep(&id, &record).await.map_err(|e| e.to_string())?;
            eprintln!("earshot: key {id} revoked: refused from the next request on");
        }
        KeyAction::List => {
            for (id, record) in &book.all().await.map_err(|e| e.to_string())? {
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
