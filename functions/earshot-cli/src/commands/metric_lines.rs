//! Where the gateway's metric lines are read from, for the commands that read them (`earshot ab`, `earshot
//! plan --observed`): a local log (`make run-aws` writes `.run/earshot.log`; `-` reads standard input) or a
//! deployment's CloudWatch log group, read with the SDK's credentials (named, or found with its Region in the
//! outputs `make deploy` wrote).

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use earshot_experiment::Lines;

/// The log `make run` and `make run-aws` write the gateway's standard output to.
const LOCAL_LOG: &str = ".run/earshot.log";
/// Where `make deploy` writes the stacks' outputs (cdk deploy's `--outputs-file`), from the checkout's root.
const DEPLOY_OUTPUTS: &str = "infra/cdk/cdk.out/outputs.json";

/// Where the lines come from: flags shared by the commands that read them.
#[derive(Args, Clone)]
pub struct LineSource {
    /// A log holding the gateway's metric lines (repeat for more; `-`: standard input). Default, with no
    /// --log-group or --outputs: .run/earshot.log, the log of `make run-aws`, else the deployment of
    /// infra/cdk/cdk.out/outputs.json.
    #[arg(long = "log")]
    pub logs: Vec<PathBuf>,
    /// A deployed gateway's CloudWatch log group (its stack's `LogGroup` output), read with the
    /// environment's AWS credentials (logs:FilterLogEvents).
    #[arg(long, conflicts_with = "logs")]
    pub log_group: Option<String>,
    /// The outputs `make deploy` wrote (cdk deploy's --outputs-file): the log group and its Region are read
    /// from them.
    #[arg(long, conflicts_with_all = ["logs", "log_group"])]
    pub outputs: Option<PathBuf>,
    /// The Region of the log group (default: the outputs' Region, else the environment's).
    #[arg(long)]
    pub region: Option<String>,
    /// Another CloudWatch Logs endpoint (a local stand-in).
    #[arg(long, env = "EARSHOT_AWS_ENDPOINT")]
    pub endpoint_url: Option<String>,
    /// How far back to read: `30m`, `24h`, `7d` (default: all of a log; 24h of a log group).
    #[arg(long, value_parser = duration_ms)]
    pub since: Option<u64>,
}

/// The window read, in milliseconds since the epoch, where one was asked for (a log group always is).
pub type Window = Option<(u64, u64)>;

impl LineSource {
    /// Whether any of the flags that say where lines are was given (the endpoint, which its environment
    /// variable may set, says only how to reach a log group).
    pub fn names_any(&self) -> bool {
        !self.logs.is_empty() || self.log_group.is_some() || self.outputs.is_some() || self.since.is_some()
    }

    /// The lines, from the named source; with none named, `make run-aws`'s log, else the deployment `make
    /// deploy` left outputs for. `who` names the command in what it prints.
    pub fn read(&self, who: &str) -> Result<(Lines, Window), String> {
        let mut source = self.clone();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let outputs = source.outputs.clone().or_else(|| {
            let nothing_named = source.logs.is_empty() && source.log_group.is_none();
            (nothing_named && !std::path::Path::new(LOCAL_LOG).exists() && std::path::Path::new(DEPLOY_OUTPUTS).exists()).then(|| PathBuf::from(DEPLOY_OUTPUTS))
        });
        if let Some(path) = outputs {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let deployed = DeployedGateway::from_outputs(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!(
                "{who}: the log group {} ({}) from {}",
                deployed.log_group,
                deployed.region.as_deref().unwrap_or("the environment's Region"),
                path.display()
            );
            source.log_group = Some(deployed.log_group);
            source.region = source.region.or(deployed.region);
        }
        match &source.log_group {
            Some(group) => {
                let since = source.since.unwrap_or(24 * 3_600_000);
                let window = (now.saturating_sub(since), now);
                Ok((Lines::read(&read_log_group(&source, group, window)?.join("\n")), Some(window)))
            }
            None => Ok((read_logs(&source.logs)?, source.since.map(|since| (now.saturating_sub(since), now)))),
        }
    }
}

/// What the commands need of a deployment's outputs: the gateway stack's log group and its Region.
#[derive(Debug, PartialEq)]
struct DeployedGateway {
    log_group: String,
    /// From the function URL (`https://<id>.lambda-url.<region>.on.aws/`); none where it does not say.
    region: Option<String>,
}

impl DeployedGateway {
    /// Reads cdk deploy's outputs file: `{"<stack>": {"<output>": "<value>", …}, …}`.
    fn from_outputs(text: &str) -> Result<Self, String> {
        let (log_group, region) = deployment_output(text, "LogGroup").map_err(|e| format!("{e}, or name --log-group"))?;
        Ok(DeployedGateway { log_group, region })
    }
}

/// The output `name` of the stack that has one in cdk deploy's outputs file (`{"<stack>": {"<output>":
/// "<value>", …}, …}`), with the stack's Region read from its function URL
/// (`https://<id>.lambda-url.<region>.on.aws/`) where it says.
pub fn deployment_output(text: &str, name: &str) -> Result<(String, Option<String>), String> {
    let outputs: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).map_err(|e| format!("not cdk deploy's outputs: {e}"))?;
    let stack = outputs
        .values()
        .find(|stack| stack.get(name).is_some())
        .ok_or_else(|| format!("no stack has a {name} output: deploy again with this version (make deploy)"))?;
    let value = stack[name].as_str().ok_or_else(|| format!("{name} is not a string"))?.to_string();
    let region = stack.get("FunctionUrl").and_then(|u| u.as_str()).and_then(|url| {
        let host = url.trim_start_matches("https://").split('/').next()?;
        host.strip_suffix(".on.aws")?.split_once(".lambda-url.").map(|(_, region)| region.to_string())
    });
    Ok((value, region))
}

fn read_logs(paths: &[PathBuf]) -> Result<Lines, String> {
    let default = [PathBuf::from(LOCAL_LOG)];
    let paths = if paths.is_empty() {
        if !default[0].exists() {
            return Err(format!(
                "name the lines to read: --log FILE (the gateway's standard output), or --log-group NAME; {LOCAL_LOG} (make run-aws's log) is not here"
            ));
        }
        &default[..]
    } else {
        paths
    };
    let mut lines = Lines::default();
    for path in paths {
        let text = if path.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).map_err(|e| format!("standard input: {e}"))?
        } else {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
        };
        lines.extend(text.lines());
    }
    Ok(lines)
}

#[cfg(feature = "aws")]
fn read_log_group(source: &LineSource, group: &str, (from, to): (u64, u64)) -> Result<Vec<String>, String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let settings = earshot_aws::AwsSettings { region: source.region.clone(), endpoint_url: source.endpoint_url.clone(), ..Default::default() };
        let config = settings.sdk_config().await;
        earshot_aws::logs::metric_lines(&config, group, from as i64, to as i64).await
    })
}

/// A build without AWS cannot read CloudWatch Logs.
#[cfg(not(feature = "aws"))]
fn read_log_group(_: &LineSource, _: &str, _: (u64, u64)) -> Result<Vec<String>, String> {
    Err("--log-group: this earshot was built without AWS (cargo feature `aws`, left out of `make run`'s build): use `make build` \
         or `cargo build --release -p earshot`, or read a log file with --log"
        .into())
}

/// `90s`, `30m`, `24h`, `7d` as milliseconds.
fn duration_ms(text: &str) -> Result<u64, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a duration such as 30m, 24h or 7d"))?;
    let unit_ms = match unit {
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("`{text}`: the unit is s, m, h or d")),
    };
    Ok(number * unit_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration_ms("90s"), Ok(90_000));
        assert_eq!(duration_ms("24h"), Ok(86_400_000));
        assert_eq!(duration_ms("7d"), Ok(604_800_000));
        assert!(duration_ms("24").is_err() && duration_ms("h").is_err() && duration_ms("2w").is_err());
    }

    #[test]
    fn a_deployments_outputs_name_its_log_group_and_region() {
        let outputs = r#"{"EarshotKokoroModel": {"EndpointName": "earshot-kokoro"},
            "EarshotGateway": {"FunctionUrl": "https://abcdefgh.lambda-url.eu-west-2.on.aws/", "AuthType": "AWS_IAM",
                               "LogGroup": "EarshotGateway-FunctionLogGroup8E4F2D1C-x1y2z3"}}"#;
        assert_eq!(
            DeployedGateway::from_outputs(outputs),
            Ok(DeployedGateway { log_group: "EarshotGateway-FunctionLogGroup8E4F2D1C-x1y2z3".into(), region: Some("eu-west-2".into()) })
        );
        let error = DeployedGateway::from_outputs(r#"{"EarshotGateway": {"FunctionUrl": "https://x.lambda-url.us-east-1.on.aws/"}}"#).unwrap_err();
        assert!(error.contains("--log-group"), "{error}");
        assert!(DeployedGateway::from_outputs("[]").is_err());
        let with_keys = outputs.replace(r#""AuthType": "AWS_IAM""#, r#""AuthType": "TOKEN", "KeysTable": "earshot-interrupts""#);
        assert_eq!(deployment_output(&with_keys, "KeysTable"), Ok(("earshot-interrupts".into(), Some("eu-west-2".into()))));
    }
}
