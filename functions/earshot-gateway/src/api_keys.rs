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
//! Where they are kept ([`KeyBook`]): for `earshot serve`, a JSON file (`--api-keys FILE`,
//! `EARSHOT_API_KEYS_FILE`) that `earshot key` writes and the gateway reads again whenever it changes; on
//! Lambda, the deployment's DynamoDB table (`earshot_aws::DynamoKeyBook`), one strongly consistent read a
//! request. Either way a revocation holds at the next request without a restart. Keys work in token mode,
//! beside tokens.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::api_error::ApiError;

/// What every key starts with.
pub const PREFIX: &str = "sk-earshot-";
/// Characters of a key's id, after the prefix.
const ID_CHARS: usize = 8;

pub use earshot_core::key_book::{KeyBook, KeyRecord, KeyScope, Keys};

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

fn refused(code: &str, why: &str) -> ApiError {
    ApiError::unauthorized(code, why.to_string())
}

/// The id of `key` (the characters after the prefix that name its record), or the 401 for a string that
/// is no key of this kind.
fn id_of(key: &str) -> Result<&str, ApiError> {
    key.strip_prefix(PREFIX).and_then(|rest| rest.get(..ID_CHARS)).ok_or_else(|| refused("key_malformed", "not an earshot API key"))
}

/// Checks `key` against `keys`: its record (`auth.rs` makes its claims), or the 401 a client is told.
pub fn verify(keys: &Keys, key: &str) -> Result<KeyRecord, ApiError> {
    check(keys.get(id_of(key)?), key)
}

/// Checks `key` against the record `book` keeps under its id: the record, or the 401 a client is told
/// (a 502 `keys_unavailable` where the book cannot be read now).
pub async fn verify_in(book: &dyn KeyBook, key: &str) -> Result<KeyRecord, ApiError> {
    let found = book.find(id_of(key)?).await.map_err(|e| {
        tracing::error!("the API keys in {} cannot be read: {e}", book.place());
        ApiError::upstream("keys_unavailable", "the gateway cannot read its API keys now", true)
    })?;
    check(found.as_ref(), key)
}

/// `key` against the record kept under its id, if any.
fn check(record: Option<&KeyRecord>, key: &str) -> Result<KeyRecord, ApiError> {
    let record = record.filter(|r| same(&r.sha256, &digest(key))).ok_or_else(|| refused("key_unknown", "this API key is not one of this gateway's"))?;
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
}

/// A file's keys as a [`KeyBook`]: read again when the file changes, written whole.
#[async_trait::async_trait]
impl KeyBook for KeyFile {
    async fn find(&self, id: &str) -> Result<Option<KeyRecord>, earshot_core::error::Error> {
        Ok(self.current().map_err(unreadable)?.get(id).cloned())
    }

    async fn keep(&self, id: &str, record: &KeyRecord) -> Result<(), earshot_core::error::Error> {
        let mut keys = load(&self.path).map_err(unreadable)?;
        keys.insert(id.to_string(), record.clone());
        save(&self.path, &keys).map_err(unreadable)
    }

    async fn all(&self) -> Result<Keys, earshot_core::error::Error> {
        self.current().map_err(unreadable)
    }

    fn place(&self) -> String {
        self.path.display().to_string()
    }
}

fn unreadable(why: String) -> earshot_core::error::Error {
    earshot_core::error::Error::new("keys_unavailable", why, true)
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

    #[tokio::test]
    async fn the_file_is_read_again_when_it_changes() {
        let path = std::env::temp_dir().join(format!("earshot-keys-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let file = KeyFile::open(&path).unwrap();
        let (key, id, record) = mint("app", None, KeyScope::default());
        assert_eq!(verify_in(&file, &key).await.unwrap_err().error.code, "key_unknown");
        file.keep(&id, &record).await.unwrap();
        assert!(verify_in(&file, &key).await.is_ok());
        save(&path, &Keys::from([(id.clone(), KeyRecord { revoked: true, ..record })])).unwrap();
        assert_eq!(verify_in(&file, &key).await.unwrap_err().error.code, "key_revoked");
        assert_eq!(file.all().await.unwrap().keys().collect::<Vec<_>>(), [&id]);
        std::fs::remove_file(&path).unwrap();
    }
}
