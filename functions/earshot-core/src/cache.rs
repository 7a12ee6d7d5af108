//! Sentences heard before: the audio of synthesized sentences, kept in memory and bounded in bytes, so
//! that an agent's repeated phrases ("Sure.", "Let me check that for you.") start below the model's
//! floor and a billed voice bills them once.
//!
//! A sentence is found again only under everything that changes its sound: the backend, the voice, the
//! language its front end reads it in, the audio format, and the text exactly as sent to the backend
//! (its spoken form, after normalisation). A [`Partition`] keeps callers apart: a hit is faster than a
//! miss, which tells a caller that the sentence was said before, so what one owner's conversation made is
//! never heard from the cache by another. What every caller may hear is only what the deployment itself
//! declared and rendered (the warm-up's sentences, in the deployment's own partition, `None`).
//!
//! The store holds whole sentences only: one that was cut (an interrupt, a failure) is never kept.
//! Least recently used sentences go first once the bytes held pass the bound. The recency order is the
//! `lru` crate's; the bound is ours, since `lru` counts entries and a sentence's audio ranges from a
//! few kilobytes to hundreds.
//!
//! How a conversation uses it is [`crate::cached_session`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use lru::LruCache;

use crate::protocol::AudioFormat;

/// Which conversations may hear each other's cached sentences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// An owner's own sentences, and the sentences the deployment declared (the warm-up's), rendered
    /// by the deployment and heard by every caller.
    Deployment,
    /// Only the owner's own sentences: nothing is shared, and no warm-up runs.
    Owner,
    /// No cache.
    Off,
}

impl CacheScope {
    /// The scope's name, as the `EARSHOT_CACHE` setting writes it (`deployment`, `owner`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Deployment => "deployment",
            CacheScope::Owner => "owner",
            CacheScope::Off => "off",
        }
    }
}

impl std::str::FromStr for CacheScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deployment" => Ok(CacheScope::Deployment),
            "owner" => Ok(CacheScope::Owner),
            "off" => Ok(CacheScope::Off),
            other => Err(format!("unknown cache scope `{other}` (expected deployment, owner or off)")),
        }
    }
}

/// A part of the store: the deployment's own (`None`: the sentences it declared and rendered itself),
/// or one owner's.
pub type Partition = Option<String>;

/// Everything that changes how a sentence sounds, and the partition it was said in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// Whose sentences it is among: the deployment's own (`None`) or one owner's.
    pub partition: Partition,
    /// The backend's name.
    pub backend: String,
    /// The voice it was spoken in.
    pub voice: String,
    /// The language the backend's front end read it in (`None`: the voice's own).
    pub language: Option<String>,
    /// The audio format, as `encoding/rate/channels`.
    pub format: String,
    /// How fast it was said, in percent of the voice's own rate ([`crate::speech::SpeakingRate`]).
    pub rate: u16,
    /// The sentence exactly as sent to the backend (as the lexicon rewrote it, where it did).
    pub text: String,
}

impl CacheKey {
    /// Bytes the key itself holds, counted against the bound with the audio.
    fn size(&self) -> usize {
        self.text.len() + self.voice.len() + self.backend.len() + self.format.len() + self.partition.as_ref().map_or(0, String::len) + 64
    }
}

/// The format part of a key.
pub fn format_key(format: &AudioFormat) -> String {
    format!("{}/{}/{}", format.encoding, format.sample_rate, format.channels)
}

/// A sentence's audio as the backend sent it: the same chunks, so a hit is the same bytes in the same
/// pieces as the miss that filled it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedSentence {
    /// The audio chunks, in order, as the backend sent them.
    pub chunks: Vec<Bytes>,
}

impl CachedSentence {
    /// The audio's length, in bytes, over every chunk.
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }

    /// The sentence as one object for a [`SharedTier`]: `ESC1`, then each chunk as its length (u32,
    /// little-endian) and its bytes.
    pub fn to_object(&self) -> Bytes {
        let mut out = Vec::with_capacity(4 + self.bytes() + 4 * self.chunks.len());
        out.extend_from_slice(OBJECT_MAGIC);
        for chunk in &self.chunks {
            out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            out.extend_from_slice(chunk);
        }
        Bytes::from(out)
    }

    /// A sentence read back from [`CachedSentence::to_object`]; `None` when the object is not one.
    pub fn from_object(object: &Bytes) -> Option<CachedSentence> {
        let mut rest = object.strip_prefix(OBJECT_MAGIC)?;
        let mut chunks = Vec::new();
        while !rest.is_empty() {
            let (len, after) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let chunk = after.get(..len)?;
            chunks.push(object.slice_ref(chunk));
            rest = &after[len..];
        }
        (!chunks.is_empty()).then_some(CachedSentence { chunks })
    }
}

/// The first bytes of a sentence stored in a shared tier (the format's version).
const OBJECT_MAGIC: &[u8] = b"ESC1";

/// A second tier shared by every process of a deployment (an S3 prefix: each warm Lambda keeps its own
/// memory, and a sentence one of them paid for is fetched by the others instead of billed again). The
/// tier names its objects from the key; the core knows no storage service.
#[async_trait::async_trait]
pub trait SharedTier: Send + Sync {
    /// The sentence stored under `key`, `Ok(None)` when there is none.
    async fn get(&self, key: &CacheKey) -> Result<Option<CachedSentence>, String>;
    /// Stores a whole sentence under `key`.
    async fn put(&self, key: &CacheKey, sentence: &CachedSentence) -> Result<(), String>;
}

/// The bounds of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// Audio and keys held at most, in bytes; past it the least recently used sentences go.
    pub max_bytes: usize,
    /// The longest sentence kept, in characters: long sentences rarely repeat.
    pub max_chars: usize,
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits { max_bytes: 64 * 1024 * 1024, max_chars: 200 }
    }
}

/// What the store has done since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Look-ups that found the sentence.
    pub hits: u64,
    /// Look-ups that did not.
    pub misses: u64,
    /// Sentences kept (a sentence kept again under the same key counts again).
    pub stored: u64,
    /// Sentences let go to keep within the bound.
    pub evicted: u64,
    /// Sentences held now.
    pub entries: u64,
    /// Bytes held now: the audio and the keys, as counted against the bound.
    pub bytes: u64,
}

/// The store: shared by every conversation of a process.
pub struct SentenceCache {
    limits: CacheLimits,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    evicted: AtomicU64,
}

struct Entries {
    lru: LruCache<CacheKey, Arc<CachedSentence>>,
    bytes: usize,
}

impl SentenceCache {
    /// An empty store, held to `limits`.
    pub fn new(limits: CacheLimits) -> Self {
        SentenceCache {
            limits,
            entries: Mutex::new(Entries { lru: LruCache::unbounded(), bytes: 0 }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// The bounds it was made with.
    pub fn limits(&self) -> CacheLimits {
        self.limits
    }

    /// Whether a sentence of this text may be kept at all (not too long, not empty).
    pub fn admits(&self, text: &str) -> bool {
        let chars = text.chars().count();
        chars > 0 && chars <= self.limits.max_chars
    }

    /// The sentence's audio, if it was said before; a hit makes it the most recently used.
    pub fn get(&self, key: &CacheKey) -> Option<Arc<CachedSentence>> {
        let found = self.lock().lru.get(key).cloned();
        match found {
            Some(_) => self.hits.fetch_add(1, Ordering::Relaxed),
            None => self.misses.fetch_add(1, Ordering::Relaxed),
        };
        found
    }

    /// Whether the sentence is held, without counting a hit or changing its recency.
    pub fn contains(&self, key: &CacheKey) -> bool {
        self.lock().lru.contains(key)
    }

    /// Keeps a whole sentence's audio; the least recently used go until the bound holds. A sentence
    /// larger than the whole bound is not kept.
    pub fn put(&self, key: CacheKey, sentence: CachedSentence) {
        let size = key.size() + sentence.bytes();
        if size > self.limits.max_bytes || !self.admits(&key.text) {
            return;
        }
        let mut entries = self.lock();
        if let Some(old) = entries.lru.pop(&key) {
            entries.bytes -= key.size() + old.bytes();
        }
        entries.bytes += size;
        entries.lru.put(key, Arc::new(sentence));
        self.stored.fetch_add(1, Ordering::Relaxed);
        while entries.bytes > self.limits.max_bytes {
            let Some((key, old)) = entries.lru.pop_lru() else { break };
            entries.bytes -= key.size() + old.bytes();
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What the store has done since it was made, and what it holds now.
    pub fn stats(&self) -> CacheStats {
        let entries = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            entries: entries.lru.len() as u64,
            bytes: entries.bytes as u64,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> CacheKey {
        CacheKey {
            partition: None,
            backend: "kokoro".into(),
            voice: "af_heart".into(),
            language: None,
            format: "pcm_s16le/24000/1".into(),
            rate: 100,
            text: text.into(),
        }
    }

    fn audio(bytes: usize) -> CachedSentence {
        CachedSentence { chunks: vec![Bytes::from(vec![1u8; bytes / 2]), Bytes::from(vec![2u8; bytes - bytes / 2])] }
    }

    #[test]
    fn a_sentence_is_found_again_only_under_everything_that_changes_its_sound() {
        let cache = SentenceCache::new(CacheLimits::default());
        cache.put(key("Sure."), audio(1000));
        assert_eq!(cache.get(&key("Sure.")).map(|s| s.bytes()), Some(1000));
        for other in [
            CacheKey { voice: "am_adam".into(), ..key("Sure.") },
            CacheKey { backend: "polly".into(), ..key("Sure.") },
            CacheKey { language: Some("fr".into()), ..key("Sure.") },
            CacheKey { rate: 150, ..key("Sure.") },
            CacheKey { format: "pcm_s16le/16000/1".into(), ..key("Sure.") },
            CacheKey { partition: Some("owner-a".into()), ..key("Sure.") },
            key("Sure!"),
        ] {
            assert!(cache.get(&other).is_none(), "{other:?} must not hit");
        }
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (1, 7, 1));
    }

    #[test]
    fn the_least_recently_used_go_once_the_bytes_pass_the_bound() {
        let one = key("a").size() + 1000;
        let cache = SentenceCache::new(CacheLimits { max_bytes: one * 2, max_chars: 200 });
        cache.put(key("a"), audio(1000));
        cache.put(key("b"), audio(1000));
        assert!(cache.get(&key("a")).is_some(), "a is now the most recent");
        cache.put(key("c"), audio(1000));
        assert!(cache.contains(&key("a")) && cache.contains(&key("c")));
        assert!(!cache.contains(&key("b")), "b was the least recently used");
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.evicted, stats.bytes), (2, 1, (one * 2) as u64));
    }

    #[test]
    fn long_sentences_and_audio_larger_than_the_bound_are_not_kept() {
        let cache = SentenceCache::new(CacheLimits { max_bytes: 10_000, max_chars: 10 });
        cache.put(key("Eleven char"), audio(100));
        cache.put(key("Big."), audio(20_000));
        cache.put(key(""), audio(100));
        assert_eq!(cache.stats().entries, 0);
        assert!(cache.admits("Ten chars!") && !cache.admits("Eleven char") && !cache.admits(""));
    }

    #[test]
    fn the_same_sentence_kept_again_replaces_its_bytes() {
        let cache = SentenceCache::new(CacheLimits::default());
        cache.put(key("Sure."), audio(1000));
        cache.put(key("Sure."), audio(3000));
        assert_eq!(cache.stats().bytes as usize, key("Sure.").size() + 3000);
    }

    #[test]
    fn a_sentence_stored_as_one_object_reads_back_chunk_for_chunk() {
        let sentence = audio(1001);
        let object = sentence.to_object();
        assert_eq!(CachedSentence::from_object(&object), Some(sentence));
        for bad in [&b""[..], b"ESC1", b"ESC0\x01\x00\x00\x00a", b"ESC1\x05\x00\x00\x00ab"] {
            assert_eq!(CachedSentence::from_object(&Bytes::copy_from_slice(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn scopes_read_as_their_names() {
        for scope in [CacheScope::Deployment, CacheScope::Owner, CacheScope::Off] {
            assert_eq!(scope.as_str().parse::<CacheScope>(), Ok(scope));
        }
        assert!("everyone".parse::<CacheScope>().unwrap_err().contains("deployment, owner or off"));
    }
}
