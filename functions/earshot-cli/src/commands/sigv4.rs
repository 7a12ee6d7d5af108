//! SigV4 for a deployed gateway behind IAM (`authType: AWS_IAM`): server-side callers sign each request
//! for the `lambda` service with their AWS credentials, as AWS documents for function URLs. The signature
//! is `aws-sigv4`'s (the AWS SDKs' own signer); the credentials come from the SDK's default chain
//! (environment, profile, SSO, instance role). A build without the cargo feature `aws` (`make run`'s)
//! has no signer and says so when `--sigv4` is asked for.

use earshot_client::Signer;
#[cfg(feature = "aws")]
pub use signing::{credentials, signer};

/// The region of a function URL (`https://ID.lambda-url.REGION.on.aws`), when the URL says it.
#[cfg_attr(not(feature = "aws"), allow(dead_code))]
pub fn region_of(url: &str) -> Option<String> {
    let host = url.split("://").nth(1)?.split(['/', ':']).next()?;
    let mut parts = host.split('.');
    let (_, service, region) = (parts.next()?, parts.next()?, parts.next()?);
    (service == "lambda-url").then(|| region.to_string())
}

/// How a command reaches a gateway that checks its callers: a token, or SigV4 (flattened into `say` and
/// `doctor`).
#[derive(clap::Args)]
pub struct Access {
    /// A gateway token (token mode), sent as `Authorization: Bearer`.
    #[arg(long, env = "EARSHOT_TOKEN", hide_env_values = true, conflicts_with = "sigv4")]
    pub token: Option<String>,
    /// Sign each request with SigV4 (a deployed gateway behind IAM), with the AWS credentials of the
    /// environment; the caller needs lambda:InvokeFunctionUrl and lambda:InvokeFunction on the function:
    /// attach the stack's CallerPolicyArn output (InvokeFunction only through the URL).
    #[arg(long)]
    pub sigv4: bool,
    /// The region to sign for (default: the function URL's, else AWS_REGION).
    #[arg(long)]
    pub region: Option<String>,
}

impl Access {
    /// The signer, when `--sigv4` asks for one.
    pub fn signer(&self, url: &str, runtime: &tokio::runtime::Runtime) -> Result<Option<Signer>, String> {
        if !self.sigv4 {
            return Ok(None);
        }
        signer_for(url, self.region.clone(), runtime).map(Some)
    }
}

/// The signer for `--sigv4` against `url`: the region from `--region`, the function URL, or `AWS_REGION`.
#[cfg(feature = "aws")]
pub fn signer_for(url: &str, region: Option<String>, runtime: &tokio::runtime::Runtime) -> Result<Signer, String> {
    let region =
        region.or_else(|| region_of(url)).or_else(|| std::env::var("AWS_REGION").ok()).ok_or("--sigv4: name the region with --region (or AWS_REGION)")?;
    let credentials = runtime.block_on(credentials())?;
    Ok(signer(credentials, region))
}

/// A build without AWS cannot sign.
#[cfg(not(feature = "aws"))]
pub fn signer_for(_: &str, _: Option<String>, _: &tokio::runtime::Runtime) -> Result<Signer, String> {
    Err("--sigv4: this earshot was built without AWS (cargo feature `aws`, left out of `make run`'s build): use `make build` or \
         `cargo build --release -p earshot`"
        .into())
}

#[cfg(feature = "aws")]
mod signing {
    use std::sync::Arc;
    use std::time::SystemTime;

    use aws_credential_types::provider::ProvideCredentials;
    use aws_credential_types::Credentials;
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    use aws_sigv4::sign::v4;
    use earshot_client::Signer;

    /// The credentials of the SDK's default chain.
    pub async fn credentials() -> Result<Credentials, String> {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await;
        let provider = config.credentials_provider().ok_or("no AWS credentials provider is configured")?;
        provider.provide_credentials().await.map_err(|e| format!("no AWS credentials: {e}"))
    }

    /// Signs requests for `lambda` in `region` with `credentials`.
    pub fn signer(credentials: Credentials, region: String) -> Signer {
        Signer(Arc::new(move |method: &str, url: &str, headers: &[(String, String)], body: &[u8]| {
            let identity = credentials.clone().into();
            let params = v4::SigningParams::builder()
                .identity(&identity)
                .region(&region)
                .name("lambda")
                .time(SystemTime::now())
                .settings(SigningSettings::default())
                .build()
                .map_err(|e| e.to_string())?
                .into();
            let signable = SignableRequest::new(method, url, headers.iter().map(|(k, v)| (k.as_str(), v.as_str())), SignableBody::Bytes(body))
                .map_err(|e| e.to_string())?;
            let (instructions, _) = sign(signable, &params).map_err(|e| e.to_string())?.into_parts();
            Ok(instructions.headers().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_read_from_a_function_url() {
        assert_eq!(region_of("https://abc123.lambda-url.eu-west-1.on.aws/").as_deref(), Some("eu-west-1"));
        assert_eq!(region_of("https://abc123.lambda-url.us-east-1.on.aws"), Some("us-east-1".into()));
        assert_eq!(region_of("http://127.0.0.1:8787"), None);
    }
}
