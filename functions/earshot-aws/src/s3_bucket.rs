//! Objects of one S3 bucket, read and written with signed `GetObject` and `PutObject` requests: the
//! sentence cache's shared tier ([`crate::s3_cache`]) and a deployment's pronunciation lexicon read at
//! start ([`S3Bucket::get_object`]).
//!
//! Hand-built like [`crate::aws_json`]'s calls on purpose: the S3 SDK crate is among the largest the SDK
//! generates and would add minutes to every clean build and to the Lambda's size for two requests. What
//! is easy to get wrong is not hand-rolled: the signature is `aws-sigv4`'s ([`crate::signing`], shared
//! with `aws_json`) with S3's settings (the payload's SHA-256 in `x-amz-content-sha256`, single
//! percent-encoding, no path normalisation), the credentials and region the same `SdkConfig` every SDK
//! client uses, the HTTP client reqwest. With an endpoint override (moto in tests) requests are
//! path-style (`{endpoint}/{bucket}/{key}`), otherwise virtual-hosted (`{bucket}.s3.{region}.amazonaws.com`).

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sigv4::http_request::{PayloadChecksumKind, PercentEncodingMode, SigningSettings, UriPathNormalizationMode};
use bytes::Bytes;

/// A bucket, reached with the credentials of an SDK configuration.
pub struct S3Bucket {
    http: reqwest::Client,
    sdk: SdkConfig,
    bucket: String,
    /// An endpoint of its own (moto in tests), path-style; `None`: S3's regional endpoint.
    endpoint: Option<String>,
}

impl S3Bucket {
    /// `bucket`, signed with the credentials of `sdk`; at `endpoint` when given, otherwise at the SDK's
    /// endpoint override, otherwise at S3's regional endpoint.
    pub fn new(http: reqwest::Client, sdk: &SdkConfig, bucket: &str, endpoint: Option<&str>) -> Self {
        let endpoint = endpoint.map(|e| e.trim_end_matches('/').to_string()).or_else(|| sdk.endpoint_url().map(|e| e.trim_end_matches('/').to_string()));
        S3Bucket { http, sdk: sdk.clone(), bucket: bucket.to_string(), endpoint }
    }

    /// The object `object`'s bytes; `None` where there is no such object.
    pub async fn get_object(&self, object: &str, timeout: Duration) -> Result<Option<Bytes>, String> {
        match self.call("GET", object, Bytes::new(), timeout).await? {
            (200, body) => Ok(Some(body)),
            (404, _) => Ok(None),
            (status, body) => Err(format!("GetObject s3://{}/{object}: {}", self.bucket, error_code(status, &body))),
        }
    }

    /// Writes `body` as the object `object`.
    pub async fn put_object(&self, object: &str, body: Bytes, timeout: Duration) -> Result<(), String> {
        match self.call("PUT", object, body, timeout).await? {
            (200, _) => Ok(()),
            (status, body) => Err(format!("PutObject s3://{}/{object}: {}", self.bucket, error_code(status, &body))),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_named_by_s3_s_code() {
        assert_eq!(error_code(403, b"<Error><Code>AccessDenied</Code></Error>"), "AccessDenied");
        assert_eq!(error_code(500, b""), "HTTP 500");
    }
}
