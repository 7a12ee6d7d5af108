//! One signed call to an AWS JSON 1.1 API, for the two questions the gateway asks outside its SDK
//! clients: SageMaker's `DescribeEndpoint` (for `/healthz`) and Secrets Manager's `GetSecretValue` (an
//! agent's key, once at start). Hand-built on purpose: the generated SageMaker and Secrets Manager
//! SDK crates would add minutes to every clean build and to the Lambda's size for one call each. The parts that are easy to get wrong are not hand-rolled: the
//! signature is `aws-sigv4`'s (the SDKs' own signer), the credentials and region come from the same
//! `SdkConfig` as every SDK client, and the HTTP client is reqwest, trusting what the SDK clients trust
//! ([`crate::AwsSettings::control_client`]).

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sigv4::http_request::SigningSettings;

/// Why a call failed: AWS's error type (`ValidationException`, `AccessDeniedException`, …) and its
/// message, or `transport` when no answer came.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    /// AWS's error type without its namespace (`ValidationException`, `AccessDeniedException`, …), or
    /// `transport` when no answer came.
    pub error_type: String,
    /// What went wrong, in AWS's words or the HTTP client's.
    pub message: String,
}

/// A JSON 1.1 API: its signing name, its `X-Amz-Target` prefix and its endpoint prefix.
pub struct JsonApi {
    /// The service name requests are signed for (`sagemaker`, `secretsmanager`).
    pub signing_name: &'static str,
    /// What comes before the operation's name in `X-Amz-Target` (`SageMaker` in `SageMaker.DescribeEndpoint`).
    pub target_prefix: &'static str,
    /// The regional endpoint's first labels: `https://PREFIX.REGION.amazonaws.com/`.
    pub host_prefix: &'static str,
}

/// SageMaker's control plane (`DescribeEndpoint`, for `/healthz`).
pub const SAGEMAKER: JsonApi = JsonApi { signing_name: "sagemaker", target_prefix: "SageMaker", host_prefix: "api.sagemaker" };
/// Secrets Manager (`GetSecretValue`, an agent's key at start).
pub const SECRETS_MANAGER: JsonApi = JsonApi { signing_name: "secretsmanager", target_prefix: "secretsmanager", host_prefix: "secretsmanager" };

/// A secret's string from Secrets Manager (`GetSecretValue`, its current version), read once at start
/// for the agent's key. A secret stored as JSON `{"api_key": "…"}` (the console's key/value form) gives
/// its `api_key`.
pub async fn secret_string(http: &reqwest::Client, config: &SdkConfig, secret_id: &str) -> Result<String, CallError> {
    let raw = secret_raw(http, config, secret_id).await?;
    let value = raw.as_str();
    let from_json = serde_json::from_str::<serde_json::Value>(value).ok().and_then(|j| j.get("api_key").and_then(|k| k.as_str()).map(str::to_string));
    Ok(from_json.unwrap_or_else(|| value.trim().to_string()))
}

/// A secret's string as stored (`GetSecretValue`, its current version).
pub async fn secret_raw(http: &reqwest::Client, config: &SdkConfig, secret_id: &str) -> Result<String, CallError> {
    let answer = call(http, config, &SECRETS_MANAGER, "GetSecretValue", &serde_json::json!({ "SecretId": secret_id }), Duration::from_secs(10)).await?;
    answer.get("SecretString").and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| CallError {
        error_type: "NoSecretString".into(),
        message: format!("the secret {secret_id} holds no string (a binary secret cannot be a key)"),
    })
}

/// Calls `operation` with `input` and returns the JSON answer.
pub async fn call(
    http: &reqwest::Client,
    config: &SdkConfig,
    api: &JsonApi,
    operation: &str,
    input: &serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, CallError> {
    let fail = |error_type: &str, message: String| CallError { error_type: error_type.into(), message };
    let region = crate::signing::region(config).map_err(|(kind, message)| fail(kind, message))?;
    // The same override every SDK client of this process follows (local stand-ins, moto in tests).
    let url = match config.endpoint_url() {
        Some(url) => format!("{}/", url.trim_end_matches('/')),
        None => format!("https://{}.{region}.amazonaws.com/", api.host_prefix),
    };
    let body = serde_json::to_vec(input).expect("JSON");
    let target = format!("{}.{operation}", api.target_prefix);
    let headers = [("content-type", "application/x-amz-json-1.1"), ("x-amz-target", target.as_str())];
    let signed = crate::signing::headers(config, api.signing_name, &region, SigningSettings::default(), ("POST", &url), &headers, &body)
        .await
        .map_err(|(kind, message)| fail(kind, message))?;

    let mut request = http.post(&url).timeout(timeout).body(body);
    for (name, value) in headers.iter().copied().chain(signed.iter().map(|(n, v)| (n.as_str(), v.as_str()))) {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|e| fail("transport", format!("{api_name} unreachable: {e}", api_name = api.target_prefix)))?;
    let status = response.status();
    let error_header = response.headers().get("x-amzn-errortype").and_then(|v| v.to_str().ok()).map(str::to_string);
    let text = response.text().await.map_err(|e| fail("transport", e.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    if status.is_success() {
        return Ok(json);
    }
    // JSON 1.1 errors name their type in `__type` (possibly `namespace#Type`) or in the header, and
    // their message in `message` or `Message`; the header may carry `:` and a URL after the type.
    let raw_type = json.get("__type").and_then(|v| v.as_str()).map(str::to_string).or(error_header).unwrap_or_else(|| format!("HTTP {status}"));
    let error_type = raw_type.rsplit('#').next().unwrap_or(&raw_type).split(':').next().unwrap_or_default().to_string();
    let message = json.get("message").or_else(|| json.get("Message")).and_then(|v| v.as_str()).unwrap_or(&text).to_string();
    Err(CallError { error_type, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_configuration_without_region_is_refused_before_any_call() {
        let config = SdkConfig::builder().build();
        let err = call(&reqwest::Client::new(), &config, &SAGEMAKER, "DescribeEndpoint", &serde_json::json!({}), Duration::from_secs(1)).await.unwrap_err();
        assert_eq!(err.error_type, "configuration");
    }
}
