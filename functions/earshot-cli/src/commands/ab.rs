//! `earshot ab`: which arm of the A/B split answers faster, steadier and cheaper per answer, with
//! confidence intervals, from the gateway's metric lines (a local log or a deployment's CloudWatch log group:
//! [`super::metric_lines`]). The figures, intervals and verdict come from `earshot-experiment`; this module
//! only fetches the lines and prints.

use std::path::PathBuf;

use clap::Args;
use earshot_experiment::report::{self, Options};
use earshot_experiment::{plot, Deployment, Prices};

use super::metric_lines::LineSource;

#[derive(Args)]
pub struct AbArgs {
    #[command(flatten)]
    source: LineSource,
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

pub fn run(args: AbArgs) -> Result<(), String> {
    let (lines, window) = args.source.read("earshot ab")?;
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
