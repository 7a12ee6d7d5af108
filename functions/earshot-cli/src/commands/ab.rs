//! `earshot ab`: which arm of the A/B split answers faster, steadier and cheaper per answer, with
//! confidence intervals, from the gateway's metric lines: a local log (`make run-aws` writes
//! `.run/earshot.log`; `-` reads standard input) or a deployment's CloudWatch log group, read with the
//! SDK's credentials (named, or found with its Region in the outputs `make deploy` wrote). The figures, intervals and verdict come from `earshot-experiment`; this module
//! only fetches the lines and prints.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use earshot_experiment::report::{self, Options};
use earshot_experiment::{plot, Deployment, Lines, Prices};

/// The log `make run` and `make run-aws` write the gateway's standard output to.
const LOCAL_LOG: &str = ".run/earshot.log";
/// Where `make deploy` writes the stacks' outputs (cdk deploy's `--outputs-file`), from the checkout's root.
const DEPLOY_OUTPUTS: &str = "infra/cdk/cdk.out/outputs.json";

#[derive(Args)]
pub struct AbArgs {
    /// A log holding the gateway's metric lines (repeat for more; `-`: standard input). Default, with no
    /// --log-group or --outputs: .run/earshot.log, the log of `make run-aws`, else the deployment of
    /// infra/cdk/cdk.out/outputs.json.
    #[arg(long = "log")]
    logs: Vec<PathBuf>,
    /// A deployed gateway's CloudWatch log group (its stack's `LogGroup` output), read with the
    /// environment's AWS credentials (logs:FilterLogEvents).
    #[arg(long, conflicts_with = "logs")]
    log_group: Option<String>,
    /// The outputs `make deploy` wrote (cdk deploy's --outputs-file): the log group and its Region are read
    /// from them.
    #[arg(long, conflicts_with_all = ["logs", "log_group"])]
    outputs: Option<PathBuf>,
    /// The Region of the log group (default: the outputs' Region, else the environment's).
    #[arg(long)]
    region: Option<String>,
    /// Another CloudWatch Logs endpoint (a local stand-in).
    #[arg(long, env = "EARSHOT_AWS_ENDPOINT")]
    endpoint_url: Option<String>,
    /// How far back to read: `30m`, `24h`, `7d` (default: all of a log; 24h of a log group).
    #[arg(long, value_parser = duration_ms)]
    since: Option<u64>,
    /// The experiment to report on (default: the one with the most answers).
    #[arg(long)]
    experiment: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also draw the time-to-first-audio distributions per arm into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Kokoro endpoint instances through the window (the CDK app's minInstances; the average where
    /// autoscaling moved it).
    #[arg(long, default_value_t = 1.0)]
    instances: f64,
    /// The function's memory, where the lines do not say it (they do on Lambda).
    #[arg(long, default_value_t = 1024)]
    memory_mb: u32,
    /// The gateway does not run on Lambda (`earshot serve` on a machine of your own): its time is not billed.
    #[arg(long)]
    no_lambda: bool,
    /// Polly's price per million characters (default: docs/prices.json).
    #[arg(long)]
    polly_price: Option<f64>,
    /// The Lambda's price per GB-second (default: docs/prices.json).
    #[arg(long)]
    lambda_gb_second_price: Option<f64>,
    /// The Lambda's price per million requests (default: docs/prices.json).
    #[arg(long)]
    lambda_request_price: Option<f64>,
    /// The Kokoro endpoint's price per instance-hour (default: docs/prices.json).
    #[arg(long)]
    instance_price: Option<f64>,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 2000)]
    resamples: usize,
    /// The bootstrap's seed: the same lines and seed give the same report.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(mut args: AbArgs) -> Result<(), String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    // With nothing named and no local log, the deployment `make deploy` left outputs for.
    let outputs = args.outputs.clone().or_else(|| {
        let nothing_named = args.logs.is_empty() && args.log_group.is_none();
        (nothing_named && !std::path::Path::new(LOCAL_LOG).exists() && std::path::Path::new(DEPLOY_OUTPUTS).exists()).then(|| PathBuf::from(DEPLOY_OUTPUTS))
    });
    if let Some(path) = outputs {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let deployed = DeployedGateway::from_outputs(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "earshot ab: the log group {} ({}) from {}",
            deployed.log_group,
            deployed.region.as_deref().unwrap_or("the environment's Region"),
            path.display()
        );
        args.log_group = Some(deployed.log_group);
        args.region = args.region.or(deployed.region);
    }
    let (lines, window) = match &args.log_group {
        Some(group) => {
            let since = args.since.unwrap_or(24 * 3_600_000);
            let window = (now.saturating_sub(since), now);
            (Lines::read(&read_log_group(&args, group, window)?.join("\n")), Some(window))
        }
        None => (read_logs(&args.logs)?, args.since.map(|since| (now.saturating_sub(since), now))),
    };
    let options = Options {
        experiment: args.experiment.clone(),
        prices: prices(&args),
        deployment: Deployment { instances: args.instances, memory_mb: args.memory_mb, lambda: !args.no_lambda },
        window,
        resamples: args.resamples.max(100),
        seed: args.seed,
        ..Default::default()
    };
    let report = report::build(&lines, &options)?;
    if let Some(path) = &args.plot {
        let (_, answers) = report::selected(&lines, &options);
        let arms: Vec<(String, Vec<&earshot_experiment::Answer>)> =
            report.arms.iter().map(|a| (a.arm.clone(), answers.iter().copied().filter(|x| x.arm == a.arm).collect())).collect();
        let title = format!("Time to first audio per arm: experiment {}", report.experiment.as_deref().unwrap_or("(unnamed)"));
        std::fs::write(path, plot::ttfa_svg(&title, &arms)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        print!("{}", report::render(&report));
        if let Some(path) = &args.plot {
            println!("Plot: {}", path.display());
        }
    }
    Ok(())
}

/// What `earshot ab` needs of a deployment's outputs: the gateway stack's log group and its Region.
#[derive(Debug, PartialEq)]
struct DeployedGateway {
    log_group: String,
    /// From the function URL (`https://<id>.lambda-url.<region>.on.aws/`); none where it does not say.
    region: Option<String>,
}

impl DeployedGateway {
    /// Reads cdk deploy's outputs file: `{"<stack>": {"<output>": "<value>", …}, …}`.
    fn from_outputs(text: &str) -> Result<Self, String> {
        let outputs: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).map_err(|e| format!("not cdk deploy's outputs: {e}"))?;
        let stack = outputs
            .values()
            .find(|stack| stack.get("LogGroup").is_some())
            .ok_or("no stack has a LogGroup output: deploy again with this version (make deploy), or name --log-group")?;
        let log_group = stack["LogGroup"].as_str().ok_or("LogGroup is not a string")?.to_string();
        let region = stack.get("FunctionUrl").and_then(|u| u.as_str()).and_then(|url| {
            let host = url.trim_start_matches("https://").split('/').next()?;
            host.strip_suffix(".on.aws")?.split_once(".lambda-url.").map(|(_, region)| region.to_string())
        });
        Ok(DeployedGateway { log_group, region })
    }
}

fn prices(args: &AbArgs) -> Prices {
    let mut prices = Prices::published();
    let overrides = [
        (args.polly_price, &mut prices.polly_per_million_characters),
        (args.lambda_gb_second_price, &mut prices.lambda_per_gb_second),
        (args.lambda_request_price, &mut prices.lambda_per_million_requests),
        (args.instance_price, &mut prices.instance_per_hour),
    ];
    let mut overridden = false;
    for (given, price) in overrides {
        if let Some(value) = given {
            *price = value;
            overridden = true;
        }
    }
    if overridden {
        prices.as_of = format!("{} (some overridden)", prices.as_of);
    }
    prices
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
fn read_log_group(args: &AbArgs, group: &str, (from, to): (u64, u64)) -> Result<Vec<String>, String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let settings = earshot_aws::AwsSettings { region: args.region.clone(), endpoint_url: args.endpoint_url.clone(), ..Default::default() };
        let config = settings.sdk_config().await;
        earshot_aws::logs::metric_lines(&config, group, from as i64, to as i64).await
    })
}

/// A build without AWS cannot read CloudWatch Logs.
#[cfg(not(feature = "aws"))]
fn read_log_group(_: &AbArgs, _: &str, _: (u64, u64)) -> Result<Vec<String>, String> {
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
    }
}
