//! The SDK configuration every client is built from. In production the defaults apply (region and
//! credentials from the Lambda's environment). Tests and local runs point the same clients at local
//! stand-ins with the ordinary endpoint override, static credentials, and a trusted local certificate
//! (the HTTP/2 operations negotiate h2 through TLS).

use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use aws_smithy_http_client::Builder;

/// Where the AWS calls go.
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    /// The region (from the environment when unset).
    pub region: Option<String>,
    /// An endpoint override, e.g. a local stand-in's `https://localhost:8443`.
    pub endpoint_url: Option<String>,
    /// A PEM certificate to trust in addition to none other (for a stand-in's self-signed certificate).
    pub trust_pem: Option<Vec<u8>>,
    /// Static credentials (access key, secret) instead of the environment's.
    pub static_credentials: Option<(String, String)>,
}

impl AwsSettings {
    /// The SDK configuration for these settings.
    pub async fn sdk_config(&self) -> SdkConfig {
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(region) = &self.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(url) = &self.endpoint_url {
            loader = loader.endpoint_url(url.clone());
        }
        if let Some((key, secret)) = &self.static_credentials {
            loader = loader.credentials_provider(Credentials::new(key.clone(), secret.clone(), None, None, "static"));
        }
        if let Some(pem) = &self.trust_pem {
            let tls = TlsContext::builder()
                .with_trust_store(TrustStore::empty().with_pem_certificate(pem.clone()))
                .build()
                .expect("a TLS context for the trusted certificate");
            let client = Builder::new().tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc)).tls_context(tls).build_https();
            loader = loader.http_client(client);
        }
        loader.load().await
    }

    /// An HTTP client for the control-plane calls that no SDK client of this build makes
    /// ([`crate::aws_json`]), trusting the same certificate as the SDK clients when one is given.
    pub fn control_client(&self) -> Result<reqwest::Client, String> {
        let mut builder = reqwest::Client::builder();
        if let Some(pem) = &self.trust_pem {
            let cert = reqwest::Certificate::from_pem(pem).map_err(|e| format!("the trusted certificate: {e}"))?;
            builder = builder.add_root_certificate(cert);
        }
        builder.build().map_err(|e| format!("an HTTP client: {e}"))
    }
}
