//! API keys: what an OpenAI client is configured with once (`api_key="sk-earshot-…"`), where a token
//! (an hour at most, minted per session) or SigV4 cannot be sent.
//!
//! `earshot key create --owner NAME` prints a key once: `sk-earshot-` then an 8-character id and 43
//! characters of a 32-byte secret drawn from the operating system's generator. The gateway keeps only the
//! id, the key's SHA-256 (a key is random, so no slow hash is needed to keep it from being guessed back),
//! its owner, when it was made and when it expires, whether it is revoked, and the same narrowing claims
//! a token carries (backends, voices, releases, characters, the owner's limits). A key is checked by its id,
//! then by its digest compared in constant time; a revoked or expired key is refused as a token would be.
//!
//! Where they are kept: a JSON file (`--api-keys FILE`, `EARSHOT_API_KEYS_FILE`) that `earshot key`
//! writes and the gateway reads again whenever it changes, so a revocation holds at the next request
//! without a restart. Keys work in token mode, beside tokens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::api_error::ApiError;

/// What every key starts with.
pub const PREFIX: &str = "sk-earshot-";
/// Characters of a key's id, after the prefix.
const ID_CHARS: usize = 8;

/// What a key may do: a token's narrowing claims (`auth.rs`), the lifetime and audience aside.
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

/// One key as the gateway keeps it: never the key itself.
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

/// The keys by id.
pub type Keys = BTreeMap<String, KeyRecord>;

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn digest(key: &str) -> String {
    Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether two digests are equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new key for `owner`: the key to print once, its id, and the record to keep.
pub fn mint(owner: &str, expires: Option<u64>, scope: KeyScope) -> (String, String, KeyRecord) {
    use base64::Engine;
    let mut bytes = [0u8; 36];
    getrandom::fill(&mut bytes).expect("the operating system's random generator");
    let id: String = bytes[..4].iter().map(|b| format!("{b:02x}")).collect();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes[4..]);
    let key = format!("{PREFIX}{id}{secret}");
    let record = KeyRecord { sha256: digest(&key), owner: owner.to_string(), created: now(), expires, revoked: false, scope };
    (key, id, record)
}

/// Checks `key` against `keys`: its record (`auth.rs` makes its claims), or the 401 a client is told.
pub fn verify(keys: &Keys, key: &str) -> Result<KeyRecord, ApiError> {
    let refused = |code: &str, why: &str| ApiError::unauthorized(code, why.to_string());
    let id = key.strip_prefix(PREFIX).and_then(|rest| rest.get(..ID_CHARS)).ok_or_else(|| refused("key_malformed", "not an earshot API key"))?;
    let record = keys.get(id).filter(|r| same(&r.sha256, &digest(key))).ok_or_else(|| refused("key_unknown", "this API key is not one of this gateway's"))?;
    if record.revoked {
        return Err(refused("key_revoked", "this API key was revoked"));
    }
    if record.expires.is_some_and(|at| at <= now()) {
        return Err(refused("key_expired", "this API key has expired"));
    }
    Ok(record.clone())
}

/// What says a file changed: its inode (a save renames a new file over it), modification time and length.
type Stamp = (u64, SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.ino(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
}

/// The keys kept in a file, read again when it changes.
pub struct KeyFile {
    path: PathBuf,
    read: Mutex<(Option<Stamp>, Keys)>,
}

impl KeyFile {
    /// The file at `path`, read now: a file that does not exist yet holds no key; one that cannot be read
    /// stops the start.
    pub fn open(path: &Path) -> Result<KeyFile, String> {
        let file = KeyFile { path: path.to_path_buf(), read: Mutex::new((None, Keys::new())) };
        file.current()?;
        Ok(file)
    }

    /// The keys as the file holds them now.
    pub fn current(&self) -> Result<Keys, String> {
        let stamp = stamp(&self.path);
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if read.0 != stamp || stamp.is_none() {
            read.1 = load(&self.path)?;
            read.0 = stamp;
        }
        Ok(read.1.clone())
    }

    /// Checks `key` against the file's keys as they are now.
    pub fn verify(&self, key: &str) -> Result<KeyRecord, ApiError> {
        let keys = self.current().map_err(|why| {
            tracing::error!("the API keys file cannot be read: {why}");
            ApiError::upstream("keys_unavailable", "the gateway cannot read its API keys now", true)
        })?;
        verify(&keys, key)
    }
}

/// The keys a file holds (none where it does not exist).
pub fn load(path: &Path) -> Result<Keys, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{} is not a JSON object of keys: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Keys::new()),
        Err(e) => Err(format!("{} cannot be read: {e}", path.display())),
    }
}

/// Writes `keys` to `path` whole (a file beside it, then renamed over it, so a reader never sees half).
pub fn save(path: &Path, keys: &Keys) -> Result<(), String> {
    let text = serde_json::to_string_pretty(keys).expect("keys are JSON");
    let beside = path.with_extension("writing");
    std::fs::write(&beside, text).map_err(|e| format!("{} cannot be written: {e}", beside.display()))?;
    std::fs::rename(&beside, path).map_err(|e| format!("{} cannot be written: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_verifies_by_its_digest_alone_and_carries_its_scope() {
        let scope = KeyScope { voices: Some(vec!["af_heart".into()]), ..Default::default() };
        let (key, id, record) = mint("app", None, scope);
        assert!(key.starts_with("sk-earshot-") && key.len() == PREFIX.len() + 8 + 43, "{key}");
        assert!(!serde_json::to_string(&record).unwrap().contains(&key[PREFIX.len() + 8..]), "the secret is never kept");
        let keys = Keys::from([(id.clone(), record.clone())]);
        let verified = verify(&keys, &key).unwrap();
        assert_eq!((verified.owner.as_str(), verified.scope.voices.as_deref()), ("app", Some(&["af_heart".to_string()][..])));
        let mut forged = key.clone();
        forged.pop();
        forged.push(if key.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(verify(&keys, &forged).unwrap_err().error.code, "key_unknown");
        assert_eq!(verify(&keys, "sk-earshot-").unwrap_err().error.code, "key_malformed");
        let revoked = Keys::from([(id.clone(), KeyRecord { revoked: true, ..record.clone() })]);
        assert_eq!(verify(&revoked, &key).unwrap_err().error.code, "key_revoked");
        let expired = Keys::from([(id, KeyRecord { expires: Some(now() - 1), ..record })]);
        assert_eq!(verify(&expired, &key).unwrap_err().error.code, "key_expired");
    }

    #[test]
    fn the_file_is_read_again_when_it_changes() {
        let path = std::env::temp_dir().join(format!("earshot-keys-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let file = KeyFile::open(&path).unwrap();
        let (key, id, record) = mint("app", None, KeyScope::default());
        assert_eq!(file.verify(&key).unwrap_err().error.code, "key_unknown");
        save(&path, &Keys::from([(id.clone(), record.clone())])).unwrap();
        assert!(file.verify(&key).is_ok());
        save(&path, &Keys::from([(id, KeyRecord { revoked: true, ..record })])).unwrap();
        assert_eq!(file.verify(&key).unwrap_err().error.code, "key_revoked");
        std::fs::remove_file(&path).unwrap();
    }
}
