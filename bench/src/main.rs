//! `earshot-bench`: the benchmarks behind `make bench`, in one run and one report.
//!
//! Each suite starts what it measures as real processes (the Kokoro container's server, `earshot
//! serve` with the configuration under test, the AWS stand-ins), drives conversations through the
//! real client over HTTP, and keeps every trial. The run writes `results.json` (every trial and the
//! machine) and `report.md` (medians, p90 and p99, ratios) into the output folder; `plot.py` draws
//! the figures from `results.json`.
//!
//! Suites: `release` (release timing, floor and gaps on the real model), `overhead` (orchestration
//! overhead on each backend path), `load` (many conversations, synthetic voice), `overload`, `polly`
//! (Polly's session designs, this build against an earlier one), `interrupt` (how fast an interrupt
//! stops the model, in process and through DynamoDB), `agents` (time to first audio through each agent
//! source at the same token pace), `pacing` (the container's piece plan, paced against fixed, idle and
//! beside a CPU-bound process: stalls inside sentences), `firstaudio` (first audio as a distribution:
//! what the transport adds to each sentence, each answer's distance from its floor, this build against
//! an earlier one, a second mode flagged), `container` (the
//! model alone), `transport` (SSE vs binary), `coldstart` (start-up and size), `segmenter`, `cache` (a
//! sentence said again against the model's first time; Polly characters spared over a scripted day),
//! `formats` (what converting to the client's audio format adds to first audio, and each format's bytes),
//! `owner` (what a caller's places and character budget add to first audio, in the process and in DynamoDB),
//! `capacity` (how many conversations one Kokoro container holds at once before a listener notices: the knee),
//! `peer` (earshot beside pipecat's own Kokoro voice and kokoro-onnx called directly, same model, text and pace),
//! `openai` (OpenAI's `/v1/audio/speech` beside `/v1/speak` in text mode: the same floor).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde::{Deserialize, Serialize};

mod agents;
mod cache;
mod capacity;
mod coldstart;
mod container;
mod fastkokoro;
mod firstaudio;
mod formats;
mod inprocess;
mod interrupt;
mod load;
mod machine;
mod openai;
mod overhead;
mod overload;
mod owner;
mod pacing;
mod pauses;
mod peer;
mod polly;
mod release;
mod report;
mod services;
mod stack;
mod stats;
mod trial;

#[derive(Parser)]
#[command(name = "earshot-bench", about = "Run earshot's benchmarks and write results.json and report.md.")]
struct Args {
    /// Where results.json, report.md and the logs go.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Suites to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "release,firstaudio,peer,pacing,overhead,load,overload,polly,interrupt,agents,container,transport,coldstart,segmenter,cache,formats,owner,capacity,openai,fastkokoro"
    )]
    suites: Vec<String>,
    /// Trials per cell.
    #[arg(long, default_value_t = 20)]
    trials: usize,
    /// Answer shapes of the release suite.
    #[arg(long, value_delimiter = ',', default_value = "brief,long,pause")]
    shapes: Vec<String>,
    /// Concurrent conversations of the load suite.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,500")]
    load_levels: Vec<usize>,
    /// A tiny run that keeps the harness working (make test): one trial, the brief shape, small loads.
    #[arg(long)]
    quick: bool,
    /// The earshot binary (default: beside this one).
    #[arg(long)]
    earshot: Option<PathBuf>,
    /// Conversations at once the `capacity` suite tries, rising (it stops at the first level that fails).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6")]
    capacity_levels: Vec<usize>,
    /// Trials per cell of the `firstaudio` suite (a distribution needs more than the others).
    #[arg(long, default_value_t = 50)]
    first_audio_trials: usize,
    /// An earlier earshot binary that the `polly` and `firstaudio` suites compare with this build.
    #[arg(long)]
    earshot_baseline: Option<PathBuf>,
    /// moto's server (DynamoDB) for the interrupt suite.
    #[arg(long, default_value = "tests/moto/.venv/bin/moto_server")]
    moto_server: PathBuf,
    /// The AWS stand-ins binary (default: beside this one).
    #[arg(long)]
    standins: Option<PathBuf>,
    /// The Kokoro container's folder, with its venv.
    #[arg(long, default_value = "infra/kokoro")]
    kokoro_dir: PathBuf,
    /// The peer suite's folder: pipecat's side (`pipecat_peer.py`) and its venv (`make peer-venv`).
    #[arg(long, default_value = "bench/peer")]
    peer_dir: PathBuf,
    /// The fastkokoro suite's folder: its venv (`make fastkokoro-venv`) and its model cache.
    #[arg(long, default_value = "bench/fastkokoro")]
    fastkokoro_dir: PathBuf,
    /// Trials per cell of the `peer` suite.
    #[arg(long, default_value_t = 10)]
    peer_trials: usize,
    /// An earshot cell of the `peer` suite whose container runs with these settings (`KEY=VALUE,…`, e.g.
    /// `KOKORO_ORT_SPINNING=0`), beside the default one in the same rounds; repeatable.
    #[arg(long)]
    peer_variant: Vec<String>,
    /// The Lambda bootstrap whose size to report.
    #[arg(long)]
    bootstrap: Option<PathBuf>,
    /// Only write report.md again from the results.json already in --out.
    #[arg(long)]
    report_only: bool,
    /// The command that produced the run, as the report should print it.
    #[arg(long, default_value = "make bench")]
    command: String,
}

/// Everything one run measured.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Results {
    pub command: String,
    pub quick: bool,
    pub machine: Option<machine::Machine>,
    pub seconds: f64,
    pub release: Option<release::Results>,
    pub overhead: Option<Vec<overhead::Trial>>,
    pub load: Option<Vec<load::Level>>,
    #[serde(default)]
    pub overload: Option<Vec<overload::Config>>,
    #[serde(default)]
    pub polly: Option<Vec<polly::Trial>>,
    #[serde(default)]
    pub interrupt: Option<Vec<interrupt::Trial>>,
    #[serde(default)]
    pub agents: Option<Vec<agents::Trial>>,
    #[serde(default)]
    pub pacing: Option<Vec<pacing::Trial>>,
    #[serde(default)]
    pub firstaudio: Option<firstaudio::Results>,
    pub container: Option<Vec<container::Trial>>,
    pub transport: Option<serde_json::Value>,
    pub coldstart: Option<coldstart::Results>,
    pub segmenter: Option<serde_json::Value>,
    #[serde(default)]
    pub cache: Option<cache::Results>,
    #[serde(default)]
    pub formats: Option<Vec<formats::Row>>,
    #[serde(default)]
    pub owner: Option<Vec<owner::Row>>,
    #[serde(default)]
    pub capacity: Option<capacity::Results>,
    #[serde(default)]
    pub peer: Option<peer::Results>,
    #[serde(default)]
    pub openai: Option<openai::Results>,
    #[serde(default)]
    pub fastkokoro: Option<fastkokoro::Results>,
}

/// A small deterministic generator (xorshift64*), so the shuffled order of cells is the same on
/// every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next_u64() % items.len() as u64) as usize]
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The order of the `cells` in each of `rounds` rounds, so that where a cell sits in its round and which cell
    /// ran just before it weigh on every cell alike: a Williams design (a Latin square balanced for the cell before),
    /// each `cells` rounds (twice as many for an odd count) one square whose cells are assigned at random and whose
    /// rows are shuffled. Within a square every cell runs once in each position and right after every other cell
    /// equally often. A shuffle of every round alone, from a fixed seed, gives every run the same sequence: in the peer
    /// suite one earshot gateway ran its answer A right after its own answer B and first in a round more often
    /// than the other, and the same settings in both measured 5 ms (A) and 15 ms (B) apart.
    pub fn balanced_orders(&mut self, cells: usize, rounds: usize) -> Vec<Vec<usize>> {
        if cells == 0 {
            return vec![Vec::new(); rounds];
        }
        // The first row 0, 1, n-1, 2, n-2, …; row r adds r to each (mod n); an odd n also needs each row reversed.
        let first: Vec<usize> = (0..cells)
            .map(|k| {
                if k == 0 {
                    0
                } else if k % 2 == 1 {
                    k.div_ceil(2)
                } else {
                    cells - k / 2
                }
            })
            .collect();
        let mut square: Vec<Vec<usize>> = (0..cells).map(|r| first.iter().map(|&c| (c + r) % cells).collect()).collect();
        if cells % 2 == 1 {
            square.extend(square.clone().into_iter().map(|row| row.into_iter().rev().collect::<Vec<_>>()));
        }
        let mut orders = Vec::with_capacity(rounds);
        while orders.len() < rounds {
            let mut label: Vec<usize> = (0..cells).collect();
            self.shuffle(&mut label);
            let mut rows = square.clone();
            self.shuffle(&mut rows);
            orders.extend(rows.into_iter().map(|row| row.into_iter().map(|c| label[c]).collect::<Vec<_>>()));
        }
        orders.truncate(rounds);
        orders
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// `rounds` rounds of balanced orders (`Rng::balanced_orders`) for each of `shapes` shapes, each shape its own
/// design: `[round][shape]` the order of the shape's `cells` in that round.
pub fn balanced_by_shape(rng: &mut Rng, shapes: usize, cells: usize, rounds: usize) -> Vec<Vec<Vec<usize>>> {
    let per_shape: Vec<Vec<Vec<usize>>> = (0..shapes).map(|_| rng.balanced_orders(cells, rounds)).collect();
    (0..rounds).map(|round| per_shape.iter().map(|orders| orders[round].clone()).collect()).collect()
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("earshot-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    if args.report_only {
        let json_path = args.out.join("results.json");
        let text = std::fs::read_to_string(&json_path).map_err(|e| format!("cannot read {}: {e}", json_path.display()))?;
        let results: Results = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json_path.display()))?;
        let report_path = args.out.join("report.md");
        std::fs::write(&report_path, report::markdown(&results)).map_err(|e| format!("cannot write {}: {e}", report_path.display()))?;
        eprintln!("bench: wrote {}", report_path.display());
        return Ok(());
    }
    let beside = |name: &str| std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join(name))).unwrap_or_else(|| PathBuf::from(name));
    let logs = args.out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let paths = stack::Paths {
        earshot: args.earshot.clone().unwrap_or_else(|| beside("earshot")),
        standins: args.standins.clone().unwrap_or_else(|| beside("earshot-standins")),
        // Absolute, since the container runs with its folder as working directory.
        kokoro_dir: std::fs::canonicalize(&args.kokoro_dir).map_err(|e| format!("{}: {e}", args.kokoro_dir.display()))?,
        logs,
        shared_kokoro: args.quick.then(Default::default),
        warm_up: !args.quick,
    };
    let (trials, shapes, levels) =
        if args.quick { (1, vec!["brief".to_string()], vec![1, 5]) } else { (args.trials.max(1), args.shapes.clone(), args.load_levels.clone()) };
    let wants = |suite: &str| args.suites.iter().any(|s| s == suite);
    if let Some(unknown) = args.suites.iter().find(|s| {
        ![
            "release",
            "firstaudio",
            "pacing",
            "overhead",
            "load",
            "overload",
            "polly",
            "interrupt",
            "agents",
            "container",
            "transport",
            "coldstart",
            "segmenter",
            "cache",
            "formats",
            "owner",
            "capacity",
            "peer",
            "openai",
            "fastkokoro",
        ]
        .contains(&s.as_str())
    }) {
        return Err(format!("unknown suite `{unknown}`"));
    }
    let record = Recorder {
        results: std::sync::Mutex::new(Results { command: args.command.clone(), quick: args.quick, machine: Some(machine::describe()), ..Default::default() }),
        out: &args.out,
        started: std::time::Instant::now(),
    };
    let quick = args.quick;
    let (args, paths, recorder, shapes) = (&args, &paths, &record, &shapes);
    // Each suite in one of two lanes: `Own` for the suites that start whatever they use, `Shared` for
    // those that speak through the plain container (and the owner checks, to even the lanes' times). A
    // full run takes every suite one at a time in this order. A quick run takes the two lanes at once:
    // its figures mean nothing, most of its time is spent waiting on processes (a model loading, a
    // conversation at the voice's pace), and the plain container still serves one suite at a time.
    let mut suites = Suites::default();
    if wants("segmenter") {
        suites.add(Lane::Own, "segmenter", async move {
            let sizes: &[f64] = if quick { &[0.05] } else { &[1.0, 2.0, 5.0, 10.0] };
            eprintln!("bench: segmenter throughput");
            let mut segmenter = inprocess::segmenter(sizes, if quick { 1 } else { 3 });
            // Where agents really pause: the release decision, old rule and new (virtual time, quick either way).
            segmenter["pauses"] = pauses::run();
            recorder.set(|r| r.segmenter = Some(segmenter))
        });
    }
    if wants("formats") {
        suites.add(Lane::Own, "formats", async move {
            eprintln!("bench: audio formats: conversion time and bytes");
            let formats = formats::run(if quick { 3 } else { 300 });
            recorder.set(|r| r.formats = Some(formats))
        });
    }
    if wants("transport") {
        suites.add(Lane::Own, "transport", async move {
            eprintln!("bench: transport (SSE and binary)");
            let transport = inprocess::transport(if quick { 2.0 } else { 60.0 }, if quick { 1 } else { 5 });
            recorder.set(|r| r.transport = Some(transport))
        });
    }
    if wants("coldstart") {
        suites.add(Lane::Own, "coldstart", async move {
            eprintln!("bench: cold start");
            let coldstart = coldstart::run(paths, if quick { 2 } else { trials }, args.bootstrap.as_deref()).await?;
            recorder.set(|r| r.coldstart = Some(coldstart))
        });
    }
    if wants("load") {
        suites.add(Lane::Own, "load", async move {
            eprintln!("bench: load with the synthetic voice, N = {levels:?}");
            let settings = load::Settings {
                levels,
                min_samples: if quick { 1 } else { trials },
                latency_ms: 200,
                lead_ms: if quick { 600_000 } else { 0 },
                prompt: "brief".into(),
            };
            let load = load::run(paths, &settings).await?;
            recorder.set(|r| r.load = Some(load))
        });
    }
    if wants("overload") {
        suites.add(Lane::Own, "overload", async move {
            let settings =
                if quick { overload::Settings { conversations: 2, cap: 1, rounds: 1 } } else { overload::Settings { conversations: 8, cap: 2, rounds: 3 } };
            eprintln!("bench: overload: {} conversations at once, container cap {}", settings.conversations, settings.cap);
            let overload = overload::run(paths, &settings).await?;
            recorder.set(|r| r.overload = Some(overload))
        });
    }
    if wants("polly") {
        suites.add(Lane::Shared, "polly", async move {
            eprintln!(
                "bench: polly: session designs{}",
                if args.earshot_baseline.is_some() { ", this build against the baseline" } else { " (this build only: no --earshot-baseline)" }
            );
            let polly = polly::run(paths, if quick { 1 } else { trials }, args.earshot_baseline.as_deref()).await?;
            recorder.set(|r| r.polly = Some(polly))
        });
    }
    if wants("cache") {
        suites.add(Lane::Shared, "cache", async move {
            let (pairs, day) = if quick { (1, 3) } else { (trials, 40) };
            eprintln!("bench: sentence cache: {pairs} sentences said twice on Kokoro, a scripted day of {day} answers through Polly");
            let cache = cache::run(paths, pairs, day, &args.moto_server).await?;
            recorder.set(|r| r.cache = Some(cache))
        });
    }
    if wants("owner") {
        suites.add(Lane::Shared, "owner", async move {
            eprintln!("bench: owner checks: first audio with a caller's places and budget off, in the process, in DynamoDB (moto)");
            let owner = owner::run(paths, if quick { 1 } else { trials.max(30) }, &args.moto_server).await?;
            recorder.set(|r| r.owner = Some(owner))
        });
    }
    if wants("openai") {
        suites.add(Lane::Shared, "openai", async move {
            eprintln!("bench: OpenAI's /v1/audio/speech beside /v1/speak in text mode, on the real model");
            let openai = openai::run(paths, if quick { 1 } else { trials }).await?;
            recorder.set(|r| r.openai = Some(openai))
        });
    }
    if wants("capacity") {
        suites.add(Lane::Own, "capacity", async move {
            let settings = if quick {
                capacity::Settings { levels: vec![1, 2], lone: 1, rounds: 1, warm_up: false }
            } else {
                capacity::Settings { levels: args.capacity_levels.clone(), lone: 5, rounds: 3, warm_up: true }
            };
            eprintln!("bench: capacity: conversations at once on one Kokoro container, levels {:?}", settings.levels);
            let capacity = capacity::run(paths, &settings).await?;
            recorder.set(|r| r.capacity = Some(capacity))
        });
    }
    if wants("interrupt") {
        suites.add(Lane::Shared, "interrupt", async move {
            eprintln!("bench: interrupt: from the interrupt to the stream's end and the container's cancel");
            let interrupt = interrupt::run(paths, if quick { 1 } else { trials }, &args.moto_server).await?;
            recorder.set(|r| r.interrupt = Some(interrupt))
        });
    }
    if wants("agents") {
        suites.add(Lane::Shared, "agents", async move {
            eprintln!("bench: agent sources: time to first audio through each at {} tokens/s", agents::TOKENS_PER_SECOND);
            let agents = agents::run(paths, if quick { 1 } else { trials.min(10) }).await?;
            recorder.set(|r| r.agents = Some(agents))
        });
    }
    if wants("peer") {
        suites.add(Lane::Shared, "peer", async move {
            let n = if quick { 1 } else { args.peer_trials.max(1) };
            eprintln!("bench: peer: pipecat's Kokoro voice, kokoro-onnx alone and earshot, {n} interleaved rounds, the same model, text and pace");
            let peer_dir = std::fs::canonicalize(&args.peer_dir).map_err(|e| format!("{}: {e}", args.peer_dir.display()))?;
            let peer = peer::run(paths, &peer_dir, n, &args.peer_variant).await?;
            recorder.set(|r| r.peer = Some(peer))
        });
    }
    if wants("fastkokoro") {
        suites.add(Lane::Shared, "fastkokoro", async move {
            let (n, lengths) = if quick { (1, &fastkokoro::LENGTHS[..1]) } else { (trials, &fastkokoro::LENGTHS[..]) };
            eprintln!("bench: fastkokoro: earshot's /v1/audio/speech beside fastkokoro's, the same model, voice and texts, {n} interleaved rounds");
            let dir = std::fs::canonicalize(&args.fastkokoro_dir).map_err(|e| format!("{}: {e}", args.fastkokoro_dir.display()))?;
            let results = fastkokoro::run(paths, &dir, n, lengths).await?;
            recorder.set(|r| r.fastkokoro = Some(results))
        });
    }
    if wants("pacing") {
        suites.add(Lane::Own, "pacing", async move {
            eprintln!("bench: piece plan: paced against fixed, idle and beside CPU-bound processes, shapes {shapes:?}");
            let pacing = pacing::run(paths, if quick { 1 } else { trials.min(10) }, shapes, quick).await?;
            recorder.set(|r| r.pacing = Some(pacing))
        });
    }
    if wants("firstaudio") {
        suites.add(Lane::Shared, "firstaudio", async move {
            let n = if quick { 1 } else { args.first_audio_trials.max(1) };
            eprintln!(
                "bench: first audio: {n} trials per cell, shapes {shapes:?}{}",
                if args.earshot_baseline.is_some() { ", this build against the baseline" } else { " (this build only: no --earshot-baseline)" }
            );
            let firstaudio = firstaudio::run(paths, n, shapes, args.earshot_baseline.as_deref()).await?;
            recorder.set(|r| r.firstaudio = Some(firstaudio))
        });
    }
    if wants("container") {
        suites.add(Lane::Shared, "container", async move {
            eprintln!("bench: the Kokoro container alone");
            let container = container::run(paths, trials).await?;
            recorder.set(|r| r.container = Some(container))
        });
    }
    if wants("overhead") {
        suites.add(Lane::Shared, "overhead", async move {
            eprintln!("bench: orchestration overhead on each backend path");
            let overhead = overhead::run(paths, trials).await?;
            recorder.set(|r| r.overhead = Some(overhead))
        });
    }
    if wants("release") {
        suites.add(Lane::Shared, "release", async move {
            eprintln!("bench: release timing on the local Kokoro ({trials} rounds, shapes {shapes:?})");
            let settings =
                release::Settings { trials, shapes: shapes.clone(), tokens_per_second: 30.0, first_token_ms: 200, idle_release_ms: 150, fast_first_words: 4 };
            let release = release::run(paths, settings).await?;
            recorder.set(|r| r.release = Some(release))
        });
    }
    suites.run(quick).await?;
    let mut results = record.results.into_inner().map_err(|_| "a suite panicked while recording".to_string())?;
    results.seconds = record.started.elapsed().as_secs_f64();
    save(&args.out, &results)?;
    eprintln!("bench: wrote results.json and report.md in {} ({:.0} s)", args.out.display(), results.seconds);
    Ok(())
}

/// The lane of a suite in a quick run, which takes the two at once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lane {
    Own,
    Shared,
}

/// One suite of a run: it measures, then records what it measured.
type Suite<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + 'a>>;

/// The suites a run asked for, in the order a full run takes them, each with its lane and name.
#[derive(Default)]
struct Suites<'a>(Vec<(Lane, &'static str, Suite<'a>)>);

impl<'a> Suites<'a> {
    fn add(&mut self, lane: Lane, name: &'static str, suite: impl std::future::Future<Output = Result<(), String>> + 'a) {
        self.0.push((lane, name, Box::pin(suite)));
    }

    /// Every suite one after another, or (`lanes`) each lane's one after another, the two lanes at once;
    /// the first failure ends the run (the other lane's suite is dropped, and with it what it started).
    async fn run(self, lanes: bool) -> Result<(), String> {
        if !lanes {
            return one_after_another(self.0).await;
        }
        let (own, shared): (Vec<_>, Vec<_>) = self.0.into_iter().partition(|(lane, _, _)| *lane == Lane::Own);
        tokio::try_join!(one_after_another(own), one_after_another(shared)).map(|_| ())
    }
}

/// Runs suites one after another, stopping at the first that fails; each says how long it took.
async fn one_after_another(suites: Vec<(Lane, &'static str, Suite<'_>)>) -> Result<(), String> {
    for (_, name, suite) in suites {
        let started = std::time::Instant::now();
        suite.await?;
        eprintln!("bench: {name} took {:.0} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The run's results so far, saved as each suite records its own (a run cut short keeps what it had).
struct Recorder<'a> {
    results: std::sync::Mutex<Results>,
    out: &'a std::path::Path,
    started: std::time::Instant,
}

impl Recorder<'_> {
    fn set(&self, set: impl FnOnce(&mut Results)) -> Result<(), String> {
        let mut results = self.results.lock().map_err(|_| "a suite panicked while recording".to_string())?;
        set(&mut results);
        results.seconds = self.started.elapsed().as_secs_f64();
        save(self.out, &results)
    }
}

/// Writes results.json and report.md. Called after every suite, so that a run stopped half-way
/// keeps what it measured.
fn save(out: &std::path::Path, results: &Results) -> Result<(), String> {
    let json = serde_json::to_string_pretty(results).map_err(|e| e.to_string())?;
    let json_path = out.join("results.json");
    std::fs::write(&json_path, json).map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let report_path = out.join("report.md");
    std::fs::write(&report_path, report::markdown(results)).map_err(|e| format!("cannot write {}: {e}", report_path.display()))
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn shuffle_is_a_permutation_and_repeatable() {
        let mut a: Vec<u32> = (0..10).collect();
        let mut b = a.clone();
        Rng(7).shuffle(&mut a);
        Rng(7).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_ne!(a, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn every_cell_sits_in_every_place_and_after_every_other_alike() {
        for cells in [1, 2, 3, 6, 7, 8] {
            let rows = if cells % 2 == 1 { 2 * cells } else { cells };
            let orders = Rng(7).balanced_orders(cells, 2 * rows);
            assert_eq!(orders.len(), 2 * rows);
            for square in orders.chunks(rows) {
                let mut place = vec![vec![0; cells]; cells];
                let mut after = vec![vec![0; cells]; cells];
                for order in square {
                    let mut sorted = order.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, (0..cells).collect::<Vec<_>>(), "each round runs every cell once");
                    for (i, &c) in order.iter().enumerate() {
                        place[c][i] += 1;
                    }
                    for pair in order.windows(2) {
                        after[pair[1]][pair[0]] += 1;
                    }
                }
                let each = rows / cells;
                assert!(place.iter().flatten().all(|&n| n == each), "{cells} cells: places {place:?}");
                let pairs = (0..cells).flat_map(|c| (0..cells).filter(move |&b| b != c).map(move |b| (c, b)));
                let counts: Vec<usize> = pairs.map(|(c, b)| after[c][b]).collect();
                assert!(counts.iter().all(|&n| n == counts[0]), "{cells} cells: after {after:?}");
            }
        }
        // Rounds that are not a whole number of squares: the last square's first rows.
        assert_eq!(Rng(7).balanced_orders(6, 10).len(), 10);
    }
}
