//! The CDK app and the Rust settings describe one deployment: the variables the app sets for the
//! Lambda are the ones the settings read, and the app's defaults are the settings' own. Read from the
//! CDK sources themselves, so that a variable renamed on one side fails here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use earshot_wiring::settings::{LOCAL_ONLY, LOG_VARIABLE};
use earshot_wiring::{Settings, DEFAULT_BEDROCK_MODEL};

fn cdk(path: &str) -> String {
    let file = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("../../infra/cdk").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()))
}

/// The strings of `ENV_NAMES = [ … ] as const` in `lambda-env.ts`.
fn cdk_variables() -> BTreeSet<String> {
    let source = cdk("lib/lambda-env.ts");
    let start = source.find("export const ENV_NAMES = [").expect("lambda-env.ts exports ENV_NAMES");
    let end = start + source[start..].find("] as const").expect("ENV_NAMES ends with `] as const`");
    source[start..end].split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_cdk_app_sets_exactly_the_variables_the_lambda_reads() {
    let cdk = cdk_variables();
    assert!(cdk.len() >= 10, "ENV_NAMES was not read: {cdk:?}");
    let mut rust: BTreeSet<String> = Settings::variables().into_iter().filter(|v| !LOCAL_ONLY.contains(&v.as_str())).collect();
    rust.insert(LOG_VARIABLE.to_string());
    assert_eq!(cdk, rust, "left: set by infra/cdk/lib/lambda-env.ts; right: read by earshot_wiring::Settings (less LOCAL_ONLY)");
}

#[test]
fn the_cdk_app_defaults_the_bedrock_model_as_the_gateway_does() {
    // `auto` resolves to this model (as the deploying Region invokes it: lib/arns.ts, defaultBedrockModel).
    let config: serde_json::Value = serde_json::from_str(&cdk("earshot.config.json")).expect("earshot.config.json is JSON");
    assert_eq!(config["bedrockModelId"], "auto");
    let arns = cdk("lib/arns.ts");
    assert!(arns.contains(&format!("DEFAULT_BEDROCK_MODEL = '{DEFAULT_BEDROCK_MODEL}'")), "lib/arns.ts's default model is the gateway's");
}

#[test]
fn the_limits_the_cdk_app_writes_out_are_the_gateways_defaults() {
    // `UPSTREAM_LIMITS` in lambda-env.ts spells out the bootstrap's defaults: they must not drift apart.
    let source = cdk("lib/lambda-env.ts");
    let start = source.find("export const UPSTREAM_LIMITS = {").expect("lambda-env.ts exports UPSTREAM_LIMITS");
    let end = start + source[start..].find("} as const").expect("UPSTREAM_LIMITS ends with `} as const`");
    let written: Vec<(String, String)> = source[start..end]
        .lines()
        .filter_map(|line| line.trim().split_once(": '"))
        .map(|(name, value)| (name.to_string(), value.trim_end_matches("',").to_string()))
        .collect();
    assert_eq!(written.len(), 6, "{written:?}");
    let defaults = Settings::from_vars(|_: &str| None, earshot_wiring::Place::Serve).expect("the defaults parse");
    for (name, value) in written {
        let default = match name.as_str() {
            "EARSHOT_AGENT_RESPONSE_TIMEOUT_MS" => defaults.agent_response_timeout_ms.to_string(),
            "EARSHOT_AGENT_FIRST_TOKEN_TIMEOUT_MS" => defaults.agent_first_token_timeout_ms.to_string(),
            "EARSHOT_AGENT_IDLE_TIMEOUT_MS" => defaults.agent_idle_timeout_ms.to_string(),
            "EARSHOT_AGENT_MAX_EVENT_BYTES" => defaults.agent_max_event_bytes.to_string(),
            "EARSHOT_BACKEND_OPEN_TIMEOUT_MS" => defaults.backend_open_timeout_ms.to_string(),
            "EARSHOT_BACKEND_SILENCE_TIMEOUT_MS" => defaults.backend_silence_timeout_ms.to_string(),
            other => panic!("{other} is not one of the gateway's upstream limits"),
        };
        assert_eq!(value, default, "{name}: the CDK app writes {value}, the gateway's default is {default}");
    }
}

#[test]
fn the_client_limits_the_cdk_app_writes_out_are_the_gateways_defaults() {
    let source = cdk("lib/lambda-env.ts");
    let written = |name: &str| {
        let start = format!("export const {name} = ");
        let line = source.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("lambda-env.ts exports {name}"));
        line.trim_start_matches(&start).trim_end_matches(';').to_string()
    };
    let defaults = Settings::from_vars(|_: &str| None, earshot_wiring::Place::Serve).expect("the defaults parse");
    assert_eq!(written("CLIENT_READ_TIMEOUT_MS"), defaults.client_read_timeout_ms.to_string());
    assert_eq!(written("KEEP_ALIVE_MS"), defaults.keep_alive_ms.to_string());
}

#[test]
fn the_cdk_apps_default_per_caller_limit_is_the_gateways() {
    let config: serde_json::Value = serde_json::from_str(&cdk("earshot.config.json")).expect("earshot.config.json is JSON");
    let defaults = Settings::from_vars(|_: &str| None, earshot_wiring::Place::Serve).expect("the defaults parse");
    assert_eq!(config["maxConversationsPerOwner"].as_u64(), Some(defaults.max_conversations_per_owner as u64));
    assert_eq!(config["maxCharsPerOwnerHour"].as_u64(), Some(defaults.max_chars_per_owner_hour));
}

#[test]
fn the_cdk_apps_default_cache_is_the_gateways() {
    let config: serde_json::Value = serde_json::from_str(&cdk("earshot.config.json")).expect("earshot.config.json is JSON");
    let defaults = Settings::from_vars(|_: &str| None, earshot_wiring::Place::Serve).expect("the defaults parse");
    assert_eq!(config["cacheScope"].as_str(), Some(defaults.cache_scope(earshot_wiring::Place::Serve).as_str()));
    assert_eq!(config["cacheMib"].as_f64(), Some(defaults.cache_mib));
    assert_eq!(config["cacheMaxChars"].as_u64(), Some(defaults.cache_max_chars as u64));
    assert_eq!(config["cacheWarmup"].as_str(), Some(""), "'' leaves the gateway's own openers");
}

#[test]
fn every_output_format_the_cdk_app_accepts_is_one_the_lambda_reads() {
    // `OUTPUT_FORMATS` in config.ts is what `outputFormat` may be; each must start the gateway as
    // EARSHOT_OUTPUT_FORMAT, and none the gateway offers may be missing from it.
    let source = cdk("lib/config.ts");
    let start = source.find("export const OUTPUT_FORMATS = [").expect("config.ts exports OUTPUT_FORMATS");
    let end = start + source[start..].find("] as const").expect("OUTPUT_FORMATS ends with `] as const`");
    let names: Vec<String> = source[start..end].split('\'').skip(1).step_by(2).map(str::to_string).collect();
    let offered: Vec<String> = earshot_core::output::OutputFormat::all().iter().map(|f| f.to_string()).collect();
    assert_eq!(names, offered, "left: infra/cdk/lib/config.ts; right: the gateway's formats");
    for name in names {
        let var = |v: &str| match v {
            "EARSHOT_OUTPUT_FORMAT" => Some(name.clone()),
            "EARSHOT_BACKENDS" => Some("polly".to_string()),
            "EARSHOT_CONVERSATION_SECRET_ID" => Some("earshot/conversation".to_string()),
            _ => None,
        };
        let settings = Settings::from_vars(var, earshot_wiring::Place::Lambda).unwrap_or_else(|e| panic!("EARSHOT_OUTPUT_FORMAT={name}: {e}"));
        assert_eq!(settings.output_format.map(|f| f.to_string()), Some(name));
    }
}
