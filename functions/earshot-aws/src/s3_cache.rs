//! The sentence cache's shared tier on S3 ([`earshot_core::cache::SharedTier`]): one object per sentence
//! under a prefix of the stack's bucket, named by a SHA-256 digest of its key (the key's text is never
//! written as a name), which a lifecycle rule expires.
//!
//! Two calls, `GetObject` and `PutObject`, hand-built like [`crate::aws_json`]'s on purpose: the S3 SDK
//! crate is among the largest the SDK generates and would add minutes to every clean build and to the
//! Lambda's size for two requests. What is easy to get wrong is not hand-rolled: the signature is
//! `aws-sigv4`'s ([`crate::signing`], shared with `aws_json`) with S3's settings (the payload's SHA-256 in `x-amz-content-sha256`, single
//! percent-encoding, no path normalisation), the credentials and region the same `SdkConfig` every SDK
//! client uses, the HTTP client reqwest. With an endpoint override (moto in tests) requests are
//! path-style (`{endpoint}/{bucket}/{key}`), otherwise virtual-hosted (`{bucket}.s3.{region}.amazonaws.com`).

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sigv4::http_request::{PayloadChecksumKind, PercentEncodingMode, SigningSettings, UriPathNormalizationMode};
use bytes::Bytes;
use earshot_core::cache::{CacheKey, CachedSentence, SharedTier};
use sha2::{Digest, Sha256};

/// The longest a store may take (a fetch has its own, shorter limit in the relay).
const PUT_TIMEOUT: Duration = Duration::from_secs(10);

/// A bucket and prefix holding cached sentences.
pub struct S3SentenceTier {
    http: reqwest::Client,
    sdk: SdkConfig,
    bucket: String,
    prefix: String,
    /// An endpoint of its own (moto in tests), path-style; `None`: S3's regional endpoint.
    endpoint: Option<String>,
}

impl S3SentenceTier {
    /// The tier under `prefix` in `bucket`, signed with the credentials of `sdk`; at `endpoint` when given,
    /// otherwise at the SDK's endpoint override, otherwise at S3's regional endpoint.
    pub fn new(http: reqwest::Client, sdk: &SdkConfig, bucket: &str, prefix: &str, endpoint: Option<&str>) -> Self {
        let endpoint = endpoint.map(|e| e.trim_end_matches('/').to_string()).or_else(|| sdk.endpoint_url().map(|e| e.trim_end_matches('/').to_string()));
        S3SentenceTier { http, sdk: sdk.clone(), bucket: bucket.to_string(), prefix: prefix.to_string(), endpoint }
    }

    /// The object's name: the prefix and a digest of everything in the key (a rate other than the
    /// voice's own is one more part, so the names of sentences said at the normal rate stay as they were).
    pub fn object_name(&self, key: &CacheKey) -> String {
        let mut digest = Sha256::new();
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

    fn url(&self, object: &str, region: &str) -> String {
        match &self.endpoint {
            Some(endpoint) => format!("{endpoint}/{}/{object}", self.bucket),
            None => format!("https://{}.s3.{region}.amazonaws.com/{object}", self.bucket),
        }
    }

    /// Sends one signed request; the status and body.
    async fn call(&self, method: &str, object: &str, body: Bytes, timeout: Duration) -> Result<(u16, Bytes), String> {
        let region = crate::signing::region(&self.sdk).map_err(|(_, message)| message)?;
        let url = self.url(object, &region);
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let headers = [("content-type", "application/octet-stream")];
        let signed = crate::signing::headers(&self.sdk, "s3", &region, settings, (method, &url), &headers, &body)
            .await
            .map_err(|(kind, message)| format!("{kind}: {message}"))?;
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let mut request = self.http.request(method, &url).timeout(timeout).body(body);
        for (name, value) in headers.iter().copied().chain(signed.iter().map(|(n, v)| (n.as_str(), v.as_str()))) {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| format!("S3 unreachable: {e}"))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| format!("S3's answer: {e}"))?;
        Ok((status, body))
    }
}

/// S3's error code from an XML error body (`<Code>AccessDenied</Code>`), or the status.
fn error_code(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map_or_else(|| format!("HTTP {status}"), |(code, _)| code.to_string())
}

#[async_trait]
impl SharedTier for S3SentenceTier {
    async fn get(&self, key: &CacheKey) -> Result<Option<CachedSentence>, String> {
        let object = self.object_name(key);
        // The relay bounds the fetch; this bound only frees the connection of a call it gave up on.
        match self.call("GET", &object, Bytes::new(), PUT_TIMEOUT).await? {
            (200, body) => Ok(CachedSentence::from_object(&body)),
            (404, _) => Ok(None),
            (status, body) => Err(format!("GetObject s3://{}/{object}: {}", self.bucket, error_code(status, &body))),
        }
    }

    async fn put(&self, key: &CacheKey, sentence: &CachedSentence) -> Result<(), String> {
        let object = self.object_name(key);
        match self.call("PUT", &object, sentence.to_object(), PUT_TIMEOUT).await? {
            (200, _) => Ok(()),
            (status, body) => Err(format!("PutObject s3://{}/{object}: {}", self.bucket, error_code(status, &body))),
        }
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
        assert_eq!(error_code(403, b"<Error><Code>AccessDenied</Code></Error>"), "AccessDenied");
        assert_eq!(error_code(500, b""), "HTTP 500");
    }
}
