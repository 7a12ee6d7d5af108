//! The sentence cache's shared tier on S3 ([`earshot_core::cache::SharedTier`]): one object per sentence
//! under a prefix of the stack's bucket, named by a SHA-256 digest of its key (the key's text is never
//! written as a name), which a lifecycle rule expires.
//!
//! Two calls, `GetObject` and `PutObject`, through [`crate::s3_bucket`] (hand-built on purpose; why is
//! written there).

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use earshot_core::cache::{CacheKey, CachedSentence, SharedTier};
use sha2::{Digest, Sha256};

use crate::s3_bucket::S3Bucket;

/// The longest a store may take (a fetch has its own, shorter limit in the relay).
const PUT_TIMEOUT: Duration = Duration::from_secs(10);

/// A bucket and prefix holding cached sentences.
pub struct S3SentenceTier {
    bucket: S3Bucket,
    prefix: String,
}

impl S3SentenceTier {
    /// The tier under `prefix` in `bucket`, signed with the credentials of `sdk`; at `endpoint` when given,
    /// otherwise at the SDK's endpoint override, otherwise at S3's regional endpoint.
    pub fn new(http: reqwest::Client, sdk: &SdkConfig, bucket: &str, prefix: &str, endpoint: Option<&str>) -> Self {
        S3SentenceTier { bucket: S3Bucket::new(http, sdk, bucket, endpoint), prefix: prefix.to_string() }
    }

    /// The object's name: the prefix and a digest of everything in the key (a rate other than the
    /// voice's own is one more part, so the names of sentences said at the normal rate stay as they were),
    /// and of the spoken forms' revision: the Kokoro container is sent a sentence in the spoken form its
    /// rules give, so audio kept under older rules is not found once they change.
    pub fn object_name(&self, key: &CacheKey) -> String {
        let mut digest = Sha256::new();
        digest.update(format!("spoken={}", earshot_core::text::spoken::RULES_REVISION).as_bytes());
        digest.update([0u8]);
        for part in [key.partition.as_deref().unwrap_or(""), &key.backend, &key.voice, key.language.as_deref().unwrap_or(""), &key.format, &key.text] {
            digest.update(part.as_bytes());
            digest.update([0u8]);
        }
        if key.rate != 100 {
            digest.update(format!("rate={}", key.rate).as_bytes());
            digest.update([0u8]);
        }
        let hex: String = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
        format!("{}{hex}", self.prefix)
    }
}

#[async_trait]
impl SharedTier for S3SentenceTier {
    async fn get(&self, key: &CacheKey) -> Result<Option<CachedSentence>, String> {
        let object = self.object_name(key);
        // The relay bounds the fetch; this bound only frees the connection of a call it gave up on.
        Ok(self.bucket.get_object(&object, PUT_TIMEOUT).await?.and_then(|body| CachedSentence::from_object(&body)))
    }

    async fn put(&self, key: &CacheKey, sentence: &CachedSentence) -> Result<(), String> {
        let object = self.object_name(key);
        self.bucket.put_object(&object, sentence.to_object(), PUT_TIMEOUT).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> CacheKey {
        CacheKey {
            partition: None,
            backend: "polly".into(),
            voice: "Ruth".into(),
            language: Some("en".into()),
            format: "pcm_s16le/16000/1".into(),
            rate: 100,
            text: text.into(),
        }
    }

    #[test]
    fn an_object_is_named_by_a_digest_of_every_part_of_its_key() {
        let tier = S3SentenceTier::new(reqwest::Client::new(), &SdkConfig::builder().build(), "bucket", "earshot-cache/", None);
        let name = tier.object_name(&key("Sure."));
        assert!(name.starts_with("earshot-cache/") && name.len() == "earshot-cache/".len() + 64, "{name}");
        assert!(!name.contains("Sure"), "the text is never a name");
        assert_ne!(name, tier.object_name(&key("Sure!")));
        assert_ne!(name, tier.object_name(&CacheKey { partition: Some("owner".into()), ..key("Sure.") }));
        assert_ne!(name, tier.object_name(&CacheKey { rate: 150, ..key("Sure.") }));
    }
}
