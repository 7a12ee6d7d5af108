//! The CDK app and the Rust settings describe one deployment: the variables the app sets for the
//! Lambda are the ones the settings read, and the app's defaults are the settings' own. Read from the
//! CDK sources themselves, so that a variable renamed on one side fails here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use earshot_wiring::settings::{LOCAL_ONLY, LOG_VARIABLE};
use earshot_wiring::{Settings, DEFAULT_BEDROCK_MODEL};

fn cdk(path: &str) -> String {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra/cdk").join(path);
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
    let config: serde_json::Value = serde_json::from_str(&cdk("earshot.config.json")).expect("earshot.config.json is JSON");
    assert_eq!(config["bedrockModelId"], DEFAULT_BEDROCK_MODEL);
}
