//! The Lambda's configuration, from the environment variables the CDK app sets (`infra/cdk`). A bad
//! value stops the function at init with a message that names the variable.

use std::time::Duration;

use earshot_gateway::Routing;

/// Everything the Lambda is configured with.
#[derive(Debug, Clone)]
pub struct LambdaConfig {
    pub backends: Vec<String>,
    pub routing: Routing,
    pub sagemaker_endpoint: Option<String>,
    pub kokoro_voice: String,
    pub polly_voice: String,
    pub bedrock_model_id: String,
    pub system_prompt: Option<String>,
    pub max_prompt_chars: usize,
    pub max_text_chars: usize,
    pub idle_release: Option<Duration>,
    pub metrics_namespace: String,
    /// Test-only: an endpoint override and a certificate for local stand-ins.
    pub aws_endpoint: Option<String>,
    pub aws_trust_pem: Option<String>,
}

fn bad(name: &str, why: impl std::fmt::Display) -> String {
    format!("{name}: {why}")
}

impl LambdaConfig {
    /// Reads the configuration through `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let text = |name: &str| get(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let flag = |name: &str, default: bool| -> Result<bool, String> {
            match text(name).as_deref() {
                None => Ok(default),
                Some("true") => Ok(true),
                Some("false") => Ok(false),
                Some(other) => Err(bad(name, format!("`{other}` is not true or false"))),
            }
        };
        let number = |name: &str, default: usize| -> Result<usize, String> {
            match text(name) {
                None => Ok(default),
                Some(v) => v.parse().map_err(|_| bad(name, format!("`{v}` is not a whole number"))),
            }
        };

        let backends: Vec<String> =
            text("EARSHOT_BACKENDS").unwrap_or_else(|| "polly".into()).split(',').map(|b| b.trim().to_lowercase()).filter(|b| !b.is_empty()).collect();
        if backends.is_empty() {
            return Err(bad("EARSHOT_BACKENDS", "names no backend"));
        }
        if let Some(unknown) = backends.iter().find(|b| !matches!(b.as_str(), "kokoro" | "polly")) {
            return Err(bad("EARSHOT_BACKENDS", format!("unknown backend `{unknown}` (expected kokoro, polly)")));
        }
        let sagemaker_endpoint = text("EARSHOT_SAGEMAKER_ENDPOINT");
        if backends.iter().any(|b| b == "kokoro") && sagemaker_endpoint.is_none() {
            return Err(bad("EARSHOT_SAGEMAKER_ENDPOINT", "is required when EARSHOT_BACKENDS includes kokoro"));
        }
        let weights = match text("EARSHOT_AB_WEIGHTS") {
            Some(spec) => Routing::parse_weights(&spec).map_err(|e| bad("EARSHOT_AB_WEIGHTS", e))?,
            None => Vec::new(),
        };
        if let Some((name, _)) = weights.iter().find(|(name, _)| !backends.contains(name)) {
            return Err(bad("EARSHOT_AB_WEIGHTS", format!("weighs `{name}`, which EARSHOT_BACKENDS does not offer")));
        }
        let idle_ms = number("EARSHOT_IDLE_RELEASE_MS", 150)?;
        Ok(LambdaConfig {
            backends,
            routing: Routing { weights, allow_override: flag("EARSHOT_AB_ALLOW_OVERRIDE", true)?, failover: flag("EARSHOT_FAILOVER", false)? },
            sagemaker_endpoint,
            kokoro_voice: text("EARSHOT_KOKORO_VOICE").unwrap_or_else(|| "af_heart".into()),
            polly_voice: text("EARSHOT_POLLY_VOICE").unwrap_or_else(|| "ruth".into()).to_lowercase(),
            bedrock_model_id: text("EARSHOT_BEDROCK_MODEL_ID").unwrap_or_else(|| "amazon.nova-lite-v1:0".into()),
            system_prompt: text("EARSHOT_SYSTEM_PROMPT"),
            max_prompt_chars: number("EARSHOT_MAX_PROMPT_CHARS", 4_000)?,
            max_text_chars: number("EARSHOT_MAX_TEXT_CHARS", 20_000)?,
            idle_release: (idle_ms > 0).then(|| Duration::from_millis(idle_ms as u64)),
            metrics_namespace: text("EARSHOT_METRICS_NAMESPACE").unwrap_or_else(|| "earshot".into()),
            aws_endpoint: text("EARSHOT_AWS_ENDPOINT"),
            aws_trust_pem: text("EARSHOT_AWS_TRUST_PEM"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<LambdaConfig, String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        LambdaConfig::from_env(|name| map.get(name).cloned())
    }

    #[test]
    fn reads_what_the_cdk_app_sets() {
        let c = config(&[
            ("EARSHOT_BACKENDS", "kokoro,polly"),
            ("EARSHOT_AB_WEIGHTS", "kokoro=70,polly=30"),
            ("EARSHOT_AB_ALLOW_OVERRIDE", "false"),
            ("EARSHOT_FAILOVER", "true"),
            ("EARSHOT_SAGEMAKER_ENDPOINT", "earshot-kokoro"),
            ("EARSHOT_POLLY_VOICE", "Matthew"),
            ("EARSHOT_IDLE_RELEASE_MS", "0"),
        ])
        .unwrap();
        assert_eq!(c.backends, vec!["kokoro", "polly"]);
        assert_eq!(c.routing.weights, vec![("kokoro".to_string(), 70), ("polly".to_string(), 30)]);
        assert!(!c.routing.allow_override && c.routing.failover);
        assert_eq!(c.polly_voice, "matthew");
        assert_eq!(c.idle_release, None);
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        let err = |vars: &[(&str, &str)]| config(vars).unwrap_err();
        assert!(err(&[("EARSHOT_BACKENDS", "kokoro")]).starts_with("EARSHOT_SAGEMAKER_ENDPOINT"));
        assert!(err(&[("EARSHOT_BACKENDS", "espeak")]).starts_with("EARSHOT_BACKENDS"));
        assert!(err(&[("EARSHOT_FAILOVER", "yes")]).starts_with("EARSHOT_FAILOVER"));
        assert!(err(&[("EARSHOT_MAX_TEXT_CHARS", "lots")]).starts_with("EARSHOT_MAX_TEXT_CHARS"));
        assert!(err(&[("EARSHOT_AB_WEIGHTS", "kokoro=50")]).starts_with("EARSHOT_AB_WEIGHTS"));
    }
}
