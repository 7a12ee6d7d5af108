//! `earshot plan`: at what volume self-hosted Kokoro is cheaper than Polly, from a measured capacity.
//!
//! The arithmetic is `earshot_experiment::plan`; this module reads the capacity (given, or a measurement's
//! JSON: what `infra/kokoro/measure_capacity.py --json` writes of the container alone, or the `results.json`
//! of the bench's `capacity` suite through `earshot serve`), the prices (`docs/prices.json`, each
//! overridable) and prints.
//! No capacity is assumed: the endpoint's own instance must be measured, and the plan says which figure it
//! used. A CPU voice is planned only with a price given, since the project lists no checked CPU-instance price.

use std::path::PathBuf;

use clap::Args;
use earshot_agents::Sample;
use earshot_experiment::observed::{self, Observed};
use earshot_experiment::plan::{self, Plan, SelfHosted, Workload};
use earshot_experiment::Prices;
use serde_json::Value;

use super::metric_lines::LineSource;

/// The answer `measure_capacity.py` speaks: four sentences, 203 characters, about 10.8 s of audio.
const MEASURED_ANSWER_CHARACTERS: f64 = 203.0;
const MEASURED_ANSWER_SECONDS: f64 = 10.8;

#[derive(Args)]
pub struct PlanArgs {
    /// Conversations at once one GPU instance holds (the knee measured on the endpoint's instance type).
    #[arg(long, required_unless_present_any = ["capacity_file", "observed"], conflicts_with = "capacity_file")]
    capacity: Option<u32>,
    /// A measurement on the endpoint's instance type: the JSON `infra/kokoro/measure_capacity.py --json`
    /// wrote (its first setting's knee) or the `results.json` of `make bench BENCH_ARGS='--suites capacity'`;
    /// its answers' length too, unless --answer-seconds is given.
    #[arg(long)]
    capacity_file: Option<PathBuf>,
    /// Characters sent to speech per answer, on average (default: the measured answer's: a capacity file's,
    /// else measure_capacity.py's 203).
    #[arg(long)]
    answer_characters: Option<f64>,
    /// Seconds an answer holds its conversation, about its audio (default: the capacity file's, else 10.8).
    #[arg(long)]
    answer_seconds: Option<f64>,
    /// Answers an hour to plan for, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [100.0, 1000.0, 10_000.0])]
    volumes: Vec<f64>,
    /// The endpoint's minimum instances (the CDK app's minInstances).
    #[arg(long, default_value_t = 1)]
    min_instances: u32,
    /// The GPU instance's price per hour (default: docs/prices.json's).
    #[arg(long)]
    instance_price: Option<f64>,
    /// The GPU instance type the price and capacity are for (default: docs/prices.json's).
    #[arg(long)]
    instance_type: Option<String>,
    /// Polly's price per million characters (default: docs/prices.json).
    #[arg(long)]
    polly_price: Option<f64>,
    /// Conversations at once one CPU instance holds; plans a CPU voice too (needs --cpu-price).
    #[arg(long, group = "cpu", requires = "cpu_price", requires = "cpu_instance_type")]
    cpu_capacity: Option<u32>,
    /// A measurement on the CPU instance type, read as --capacity-file is; plans a CPU voice too.
    #[arg(long, group = "cpu", requires = "cpu_price", requires = "cpu_instance_type")]
    cpu_capacity_file: Option<PathBuf>,
    /// The CPU instance's price per hour (no default: check your Region's SageMaker price page).
    #[arg(long)]
    cpu_price: Option<f64>,
    /// The CPU instance type.
    #[arg(long)]
    cpu_instance_type: Option<String>,
    /// Take this voice's capacity from what a deployment showed: the knee of its self-hosted backend in the
    /// gateway's metric lines (read as `earshot ab` reads them: --log, --log-group or --outputs).
    #[arg(long, value_enum)]
    observed: Option<ObservedVoice>,
    /// The backend whose answers show the observed capacity.
    #[arg(long, default_value = "kokoro", requires = "observed")]
    observed_backend: String,
    /// The endpoint's instances through the observed window (its average where autoscaling moved it).
    #[arg(long, default_value_t = 1.0, requires = "observed")]
    instances: f64,
    #[command(flatten)]
    source: LineSource,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Which voice a deployment's observed capacity stands for.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ObservedVoice {
    Gpu,
    Cpu,
}

/// A capacity measurement's knee and answer length.
#[derive(Debug, Clone, PartialEq)]
struct Measured {
    knee: u32,
    /// Whether a failing level bounds the knee (files of older scripts do not say: taken as bounded).
    bounded: bool,
    answer_seconds: Option<f64>,
    /// Characters an answer sent to speech, where the measurement recorded them.
    answer_characters: Option<f64>,
    setting: String,
}

/// A measurement in either format: the bench's `results.json` (a `capacity` section) or the script's.
fn measured(text: &str) -> Result<Measured, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("capacity").is_some() {
        return benched(&v);
    }
    let first = v["settings"].get(0).ok_or("no settings: is this a measure_capacity.py --json file?")?;
    let knee = first["knee_conversations"].as_u64().ok_or("no knee_conversations in its first setting")?;
    if knee == 0 {
        return Err("its first setting held no level: the instance cannot hold one conversation within the budget".into());
    }
    Ok(Measured {
        knee: u32::try_from(knee).map_err(|_| "knee_conversations is out of range")?,
        bounded: first["knee_bounded"].as_bool().unwrap_or(true),
        answer_seconds: first["levels"].get(0).and_then(|l| l["answer_audio_s"].as_f64()),
        answer_characters: Some(MEASURED_ANSWER_CHARACTERS),
        setting: format!(
            "KOKORO_WORKERS={}, {} plan, on {}",
            first["workers"],
            first["plan"].as_str().unwrap_or("paced"),
            first["gpu"].as_str().and_then(|g| g.split(',').next()).or(v["device"].as_str()).unwrap_or("an unnamed device")
        ),
    })
}

/// The bench's `capacity` section: its knee through `earshot serve`, on the machine the report names. A quick
/// run (`make test-bench`) measures nothing and is refused.
fn benched(v: &Value) -> Result<Measured, String> {
    let capacity = &v["capacity"];
    if capacity.is_null() {
        return Err("its capacity suite did not run: run `make bench BENCH_ARGS='--suites capacity'`".into());
    }
    if v["quick"].as_bool() == Some(true) {
        return Err("a quick run (make test-bench): its figures measure nothing; run `make bench BENCH_ARGS='--suites capacity'`".into());
    }
    let knee = match &capacity["knee"] {
        Value::Null => return Err("no level held: the machine cannot hold one conversation within the budget".into()),
        knee => knee.as_u64().ok_or("its capacity knee is not a count")?,
    };
    let machine = &v["machine"];
    Ok(Measured {
        knee: u32::try_from(knee).map_err(|_| "its knee is out of range")?,
        bounded: capacity["bounded"].as_bool().unwrap_or(true),
        answer_seconds: capacity["answer_audio_s"].as_f64(),
        // Files written before the suite recorded it: the suite always speaks the brief sample.
        answer_characters: capacity["answer_characters"].as_f64().or(Some(Sample::Brief.source().chars().count() as f64)),
        setting: format!(
            "the bench through earshot serve, on {} cores of {}",
            machine["cores"].as_u64().map_or("?".into(), |c| c.to_string()),
            machine["cpu"].as_str().unwrap_or("an unnamed CPU")
        ),
    })
}

/// "1 conversation", "2 conversations".
fn conversations(n: u32) -> String {
    format!("{n} conversation{}", if n == 1 { "" } else { "s" })
}

/// The observed knee as the plan takes it, with the words that say where it came from; no knee is an
/// error that says why.
fn observed_measure(o: &Observed) -> Result<(Measured, String), String> {
    let levels: Vec<String> = o
        .levels
        .iter()
        .map(|l| {
            let verdict = match l.holds {
                Some(true) => "holds",
                Some(false) => "does not hold",
                None => "too few to judge",
            };
            format!("{} at once: {} answers, {verdict}", l.conversations, l.answers)
        })
        .collect();
    let Some(knee) = o.knee else {
        return Err(format!(
            "the lines show no capacity for `{}`: {} answers with their start known; {} (a level needs {} answers, and the budget {} answers alone)",
            o.backend,
            o.answers,
            if levels.is_empty() { "none".to_string() } else { levels.join("; ") },
            observed::MIN_ANSWERS,
            observed::MIN_ANSWERS
        ));
    };
    let at_least = if o.bounded { "" } else { "at least " };
    let from = format!(
        "{at_least}{} at once (observed in {} answers of `{}`, budget {:.0} ms: {})",
        conversations(knee),
        o.answers,
        o.backend,
        o.budget_ms.unwrap_or(f64::NAN),
        levels.join("; ")
    );
    let m = Measured { knee, bounded: o.bounded, answer_seconds: o.answer_seconds, answer_characters: None, setting: String::new() };
    Ok((m, from))
}

/// A knee given or read from a file, with the words that say where it came from.
fn capacity(given: Option<u32>, file: Option<&PathBuf>, flag: &str) -> Result<Option<(Measured, String)>, String> {
    match (file, given) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let m = measured(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let at_least = if m.bounded { "" } else { "at least " };
            let from = format!("{at_least}{} at once ({}; {})", conversations(m.knee), m.setting, path.display());
            Ok(Some((m, from)))
        }
        (None, Some(knee)) if knee > 0 => Ok(Some((
            Measured { knee, bounded: true, answer_seconds: None, answer_characters: None, setting: String::new() },
            format!("{} at once ({flag})", conversations(knee)),
        ))),
        (None, Some(_)) => Err(format!("{flag} must be at least 1 (or give its file)")),
        (None, None) => Ok(None),
    }
}

fn positive(name: &str, value: f64) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!("{name} must be a number above zero, got {value}"))
    }
}

pub fn run(args: PlanArgs) -> Result<(), String> {
    let prices = Prices::published();
    let observed = match args.observed {
        Some(voice) => {
            let given = match voice {
                ObservedVoice::Gpu => args.capacity.is_some() || args.capacity_file.is_some(),
                ObservedVoice::Cpu => args.cpu_capacity.is_some() || args.cpu_capacity_file.is_some(),
            };
            if given {
                return Err(match voice {
                    ObservedVoice::Gpu => "--observed gpu takes the place of --capacity and --capacity-file: give one of them",
                    ObservedVoice::Cpu => "--observed cpu takes the place of --cpu-capacity and --cpu-capacity-file: give one of them",
                }
                .into());
            }
            if !(args.instances.is_finite() && args.instances >= 1.0) {
                return Err(format!("--instances must be at least 1 (a real-time endpoint keeps one), got {}", args.instances));
            }
            let (lines, window) = args.source.read("earshot plan")?;
            let answers: Vec<_> = lines.answers.into_iter().filter(|a| window.is_none_or(|(from, to)| (from..=to).contains(&a.epoch_ms))).collect();
            Some((voice, observed_measure(&observed::capacity(&answers, &args.observed_backend, args.instances))?))
        }
        None if args.source.names_any() => {
            return Err("--log, --log-group, --outputs and --since say where a deployment's lines are: they are read only with --observed".into())
        }
        None => None,
    };
    let pick = |voice: ObservedVoice| observed.as_ref().filter(|(v, _)| *v == voice).map(|(_, m)| m.clone());
    let (capacity, gpu_from) = match pick(ObservedVoice::Gpu) {
        Some(m) => m,
        None => self::capacity(args.capacity, args.capacity_file.as_ref(), "--capacity")?.ok_or("--capacity, --capacity-file or --observed gpu is required")?,
    };
    let cpu = match pick(ObservedVoice::Cpu) {
        Some(m) => Some(m),
        None => self::capacity(args.cpu_capacity, args.cpu_capacity_file.as_ref(), "--cpu-capacity")?,
    };
    let cpu_named = args.cpu_price.is_some() || args.cpu_instance_type.is_some();
    if cpu.is_some() != cpu_named || cpu_named != (args.cpu_price.is_some() && args.cpu_instance_type.is_some()) {
        return Err("a CPU voice needs its capacity (--cpu-capacity, --cpu-capacity-file or --observed cpu), --cpu-price and --cpu-instance-type".into());
    }
    // Where each voice's capacity came from, in the voices' order, and whether a deployment showed it.
    let mut from = vec![(gpu_from, pick(ObservedVoice::Gpu).is_some())];
    // The answer measured, where a measurement says: the GPU's first, its length and characters together.
    let answer_from = if capacity.answer_seconds.is_some() { Some(&capacity) } else { cpu.as_ref().map(|(m, _)| m) };
    let measured_seconds = answer_from.and_then(|m| m.answer_seconds);
    let measured_characters = answer_from.and_then(|m| m.answer_characters);
    let workload = Workload {
        characters: positive("--answer-characters", args.answer_characters.or(measured_characters).unwrap_or(MEASURED_ANSWER_CHARACTERS))?,
        seconds: positive("--answer-seconds", args.answer_seconds.or(measured_seconds).unwrap_or(MEASURED_ANSWER_SECONDS))?,
    };
    for &v in &args.volumes {
        positive("each of --volumes", v)?;
    }
    let min_instances = args.min_instances.max(1);
    let mut voices = vec![SelfHosted {
        name: "kokoro-gpu".into(),
        instance_type: args.instance_type.clone().unwrap_or_else(|| prices.instance_type.clone()),
        usd_per_instance_hour: positive("--instance-price", args.instance_price.unwrap_or(prices.instance_per_hour))?,
        conversations_per_instance: capacity.knee,
        min_instances,
    }];
    if let (Some((cpu, cpu_from)), Some(price), Some(instance_type)) = (&cpu, args.cpu_price, args.cpu_instance_type.clone()) {
        from.push((cpu_from.clone(), pick(ObservedVoice::Cpu).is_some()));
        voices.push(SelfHosted {
            name: "kokoro-cpu".into(),
            instance_type,
            usd_per_instance_hour: positive("--cpu-price", price)?,
            conversations_per_instance: cpu.knee,
            min_instances,
        });
    }
    let polly = positive("--polly-price", args.polly_price.unwrap_or(prices.polly_per_million_characters))?;
    let p = plan::plan(workload, polly, &voices, &args.volumes);
    if args.json {
        let json = serde_json::json!({ "capacity": from[0].0, "cpu_capacity": from.get(1).map(|f| &f.0), "prices_as_of": prices.as_of, "region": prices.region, "voices": voices, "plan": p });
        println!("{}", serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?);
    } else {
        print!("{}", render(&p, &voices, &prices, &from, cpu.is_none()));
    }
    Ok(())
}

fn render(p: &Plan, voices: &[SelfHosted], prices: &Prices, from: &[(String, bool)], no_cpu: bool) -> String {
    let mut out = format!(
        "earshot plan: Polly against self-hosted Kokoro, answers of {:.0} characters holding their conversation {:.1} s\n\
         prices: Polly ${:.2} a million characters; {}; list prices of {} ({}) unless overridden\n",
        p.workload.characters,
        p.workload.seconds,
        p.polly_usd_per_million_characters,
        voices.iter().map(|v| format!("{} ${:.3} an hour", v.instance_type, v.usd_per_instance_hour)).collect::<Vec<_>>().join(", "),
        prices.region,
        prices.as_of,
    );
    for (voice, (from, observed)) in voices.iter().zip(from) {
        out += &if *observed {
            format!("capacity of {}: {from}, shown by the deployment's instances, taken as {}\n", voice.name, voice.instance_type)
        } else {
            format!("capacity of {}: {from}, taken as one {}'s (measured on another machine, it plans that machine)\n", voice.name, voice.instance_type)
        };
    }
    out += "The Lambda costs the same whichever voice speaks and is left out. Instances are for the average number of\n\
            conversations open (Little's law); a peak needs the headroom of the maximum below.\n\n";
    out += "| answers an hour | conversations open | Polly $ per 1,000 answers |";
    for v in voices {
        out += &format!(" {} $ per 1,000 (instances) |", v.name);
    }
    out += " cheapest |\n|---|---|---|";
    out += &"---|".repeat(voices.len() + 1);
    out += "\n";
    for row in &p.rows {
        out += &format!("| {:.0} | {:.1} | {:.2} |", row.answers_per_hour, row.conversations_open, row.polly_usd_per_1000_answers);
        for a in &row.self_hosted {
            out += &format!(" {:.2} ({}) |", a.usd_per_1000_answers, a.instances);
        }
        out += &format!(" {} |\n", row.cheapest);
    }
    out += "\n";
    for b in &p.break_even {
        let instance_type = voices.iter().find(|v| v.name == b.name).map_or("", |v| v.instance_type.as_str());
        match b.answers_per_hour {
            Some(v) => out += &format!(
                "{}: cheaper than Polly from about {v:.0} answers an hour (an instance-hour costs {:.0} Polly answers; one full {instance_type} serves {:.0} an hour; just past each added instance Polly is cheaper again for a while)\n",
                b.name, b.instance_hour_in_polly_answers, b.answers_per_instance_hour
            ),
            None => out += &format!(
                "{}: never cheaper than Polly for these answers: an instance-hour costs {:.0} Polly answers, and one full {instance_type} serves only {:.0} an hour\n",
                b.name, b.instance_hour_in_polly_answers, b.answers_per_instance_hour
            ),
        }
        out += &format!("  for these volumes: minInstances {}, maxInstances {}\n", b.min_instances, b.max_instances);
    }
    if no_cpu {
        out += "A CPU voice is planned with --cpu-capacity, --cpu-price and --cpu-instance-type (no CPU price is listed: check your Region's).\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capacity_file_gives_its_first_setting_s_knee_and_answer_length() {
        let text = r#"{"device": "cuda", "settings": [{"workers": 4, "plan": "paced", "knee_conversations": 8,
            "knee_bounded": false, "levels": [{"answer_audio_s": 10.75}]}, {"workers": 1, "knee_conversations": 2}]}"#;
        let m = measured(text).expect("reads");
        assert_eq!((m.knee, m.bounded, m.answer_seconds), (8, false, Some(10.75)));
        assert_eq!(m.setting, "KOKORO_WORKERS=4, paced plan, on cuda");
        let named = r#"{"device": "cuda", "settings": [{"workers": 1, "plan": "paced", "knee_conversations": 2,
            "gpu": "NVIDIA H200, 580.159.04, 1779 MiB, 143771 MiB"}]}"#;
        assert_eq!(measured(named).expect("reads").setting, "KOKORO_WORKERS=1, paced plan, on NVIDIA H200");
    }

    #[test]
    fn a_bench_results_file_gives_its_capacity_suite_s_knee_and_answer_length() {
        let text = r#"{"quick": false, "machine": {"cpu": "AMD EPYC", "cores": 2},
            "capacity": {"knee": 2, "bounded": true, "answer_audio_s": 10.83, "budget_ms": 1404.2, "answer_characters": 166}}"#;
        let m = measured(text).expect("reads");
        assert_eq!((m.knee, m.bounded, m.answer_seconds, m.answer_characters), (2, true, Some(10.83), Some(166.0)));
        assert_eq!(m.setting, "the bench through earshot serve, on 2 cores of AMD EPYC");
        let older = r#"{"quick": false, "capacity": {"knee": 2, "bounded": true, "answer_audio_s": 10.83}}"#;
        assert_eq!(measured(older).expect("reads").answer_characters, Some(169.0), "the brief sample the suite speaks");
        let quick = r#"{"quick": true, "capacity": {"knee": 2, "bounded": true}}"#;
        assert!(measured(quick).unwrap_err().contains("quick run"));
        let none_held = r#"{"quick": false, "capacity": {"knee": null, "bounded": true}}"#;
        assert!(measured(none_held).unwrap_err().contains("no level held"));
        let not_run = r#"{"quick": false, "capacity": null}"#;
        assert!(measured(not_run).unwrap_err().contains("did not run"));
    }

    #[test]
    fn a_capacity_file_without_a_knee_is_refused_with_the_reason() {
        assert!(measured("[]").unwrap_err().contains("no settings"));
        let none_held = r#"{"settings": [{"workers": 1, "knee_conversations": 0}]}"#;
        assert!(measured(none_held).unwrap_err().contains("cannot hold one conversation"));
    }
}
