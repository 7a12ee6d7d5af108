//! SigV4 headers for the few calls this build makes without an SDK client ([`crate::aws_json`],
//! [`crate::s3_cache`]): `aws-sigv4`'s signer with the credentials and Region of the same `SdkConfig`
//! every SDK client uses, so that neither hand-built call signs on its own.

use std::time::SystemTime;

use aws_config::SdkConfig;
use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;

/// Why no headers could be made: `configuration` (no Region, no provider), `credentials` or `signing`,
/// with a message.
pub type SigningError = (&'static str, String);

/// The configured Region.
pub fn region(config: &SdkConfig) -> Result<String, SigningError> {
    config.region().map(|r| r.to_string()).ok_or(("configuration", "no AWS region is configured".into()))
}

/// The headers that sign `method url` with `headers` and `body` for `service` in `region`.
pub async fn headers(
    config: &SdkConfig,
    service: &str,
    region: &str,
    settings: SigningSettings,
    (method, url): (&str, &str),
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, SigningError> {
    let provider = config.credentials_provider().ok_or(("configuration", "no AWS credentials provider".into()))?;
    let credentials = provider.provide_credentials().await.map_err(|e| ("credentials", format!("no AWS credentials: {e}")))?;
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .map_err(|e| ("signing", e.to_string()))?
        .into();
    let signable = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body)).map_err(|e| ("signing", e.to_string()))?;
    let (instructions, _) = sign(signable, &params).map_err(|e| ("signing", e.to_string()))?.into_parts();
    Ok(instructions.headers().map(|(n, v)| (n.to_string(), v.to_string())).collect())
}
