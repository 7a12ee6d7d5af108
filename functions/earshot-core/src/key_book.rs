//! Where a deployment keeps its API keys (`sk-earshot-…`), as a trait: a file beside `earshot serve`, the
//! deployment's DynamoDB table on Lambda. What a key is, how one is made and checked, is the gateway's
//! (`earshot_gateway::api_keys`); the record kept, never the key itself, is here so that the gateway (which
//! reads it) and the AWS adapter (which keeps it in DynamoDB) share it without depending on each other, as
//! [`crate::store`] does for live conversations.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// What a key may do: a token's narrowing claims (the gateway's `auth.rs`), the lifetime and audience aside.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyScope {
    /// The backends the key may use; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backends: Option<Vec<String>>,
    /// The voices the key may use; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voices: Option<Vec<String>>,
    /// The release modes the key may ask for; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<Vec<String>>,
    /// The most characters a request may send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The owner's live conversations, narrowed below the gateway's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_conversations: Option<usize>,
    /// Characters the owner may hear spoken in a rolling hour, narrowed below the gateway's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars_per_hour: Option<u64>,
    /// Requests the owner may send a minute, narrowed below the gateway's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_minute: Option<u64>,
}

/// One key as a deployment keeps it: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The SHA-256 of the whole key, in hex.
    pub sha256: String,
    /// Whose conversations it starts (a token's `sub`).
    pub owner: String,
    /// When it was made, in seconds since the Unix epoch.
    pub created: u64,
    /// When it stops working, in seconds since the Unix epoch; never when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// Revoked: refused from then on.
    #[serde(default)]
    pub revoked: bool,
    /// What it may do.
    #[serde(default)]
    pub scope: KeyScope,
}

/// Keys by id (the 8 characters after `sk-earshot-`).
pub type Keys = BTreeMap<String, KeyRecord>;

/// Where the key records are kept. The gateway asks for one record a request ([`KeyBook::find`]); the
/// `earshot key` command writes and lists them.
#[async_trait]
pub trait KeyBook: Send + Sync {
    /// The record kept under `id`, as it is now (a revocation is seen by the next call).
    async fn find(&self, id: &str) -> Result<Option<KeyRecord>, Error>;
    /// Keeps `record` under `id`, in place of any record there.
    async fn keep(&self, id: &str, record: &KeyRecord) -> Result<(), Error>;
    /// Every record kept.
    async fn all(&self) -> Result<Keys, Error>;
    /// Where the records are, in words, for what the command prints.
    fn place(&self) -> String;
}
