//! The Markdown report of one run: the machine, then each suite's figures as tables, with the
//! targets of the benchmark plan marked met or not. Every figure comes from `results.json` of the
//! same run; the plots (`plot.py`) are referenced by file name.

use std::fmt::Write;

use crate::load::Level;
use crate::release::{Config, Trial};
use crate::stats::{median, Summary};
use crate::Results;
use earshot_core::timeline::UNDERRUN_TOLERANCE_MS;

fn ms(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// "median / p90 / p99 (n)".
fn spread(values: &[f64]) -> String {
    match Summary::of(values) {
        Some(s) => format!("{} / {} / {} ({})", ms(s.median), ms(s.p90), ms(s.p99), s.n),
        None => "n/a".into(),
    }
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**not met**"
    }
}

pub fn markdown(r: &Results) -> String {
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(o, "# earshot benchmark report\n");
    if r.quick {
        let _ = writeln!(o, "> A quick run (`--quick`): one trial per cell, to keep the harness working. Its figures mean nothing.\n");
    }
    if let Some(m) = &r.machine {
        let _ = writeln!(o, "Produced by `{}` on {} in {:.0} minutes.\n", r.command, m.date, r.seconds / 60.0);
        let _ = writeln!(o, "| machine | |\n|---|---|");
        let _ = writeln!(
            o,
            "| CPU | {} ({} cores) |\n| memory | {:.1} GiB |\n| kernel | {} |\n| compiler | {} |\n| commit | {} |\n",
            m.cpu, m.cores, m.memory_gib, m.kernel, m.rustc, m.commit
        );
    }
    let _ = writeln!(o, "Figures are `median / p90 / p99 (trials)` in milliseconds unless named otherwise. Percentiles interpolate between the nearest ranks, as `earshot ab` and numpy compute them: with 20 trials, p99 lies between the two slowest. Absolute times move between runs on a shared machine; compare modes within this run.\n");
    if let Some(rel) = &r.release {
        release(o, rel);
    }
    if r.overhead.is_some() || r.release.is_some() {
        overhead(o, r);
    }
    if let Some(rel) = &r.release {
        gaps(o, rel);
    }
    if let Some(levels) = &r.load {
        load(o, levels);
    }
    if let Some(c) = &r.container {
        container(o, c);
    }
    if let Some(t) = &r.transport {
        transport(o, t);
    }
    if let Some(c) = &r.coldstart {
        coldstart(o, c);
    }
    if let Some(s) = &r.segmenter {
        segmenter(o, s);
    }
    if let Some(c) = &r.overload {
        overload(o, c);
    }
    if let Some(trials) = &r.polly {
        polly(o, trials);
    }
    if let Some(trials) = &r.interrupt {
        interrupt(o, trials);
    }
    if let Some(trials) = &r.agents {
        agents(o, trials);
    }
    if let Some(trials) = &r.pacing {
        pacing(o, trials);
    }
    if let Some(f) = &r.firstaudio {
        firstaudio(o, f);
    }
    if let Some(c) = &r.cache {
        cache(o, c);
    }
    if let Some(rows) = &r.formats {
        formats(o, rows);
    }
    if let Some(rows) = &r.owner {
        owner(o, rows);
    }
    if let Some(c) = &r.capacity {
        capacity(o, c);
    }
    if let Some(p) = &r.peer {
        peer(o, p);
    }
    if let Some(a) = &r.openai {
        openai(o, a);
    }
    if let Some(f) = &r.fastkokoro {
        fastkokoro(o, f);
    }
    out
}

fn openai(o: &mut String, a: &crate::openai::Results) {
    let _ = writeln!(
        o,
        "## 20. OpenAI's speech API: the same floor as earshot's own
"
    );
    let _ = writeln!(
        o,
        "One `earshot serve` with the real Kokoro model, the cache off; `POST /v1/speak` with `text` and OpenAI's `POST /v1/audio/speech` (`response_format` `pcm`) alternate in a shuffled order, each text said once. The client's first audio from the request's send: the first audio event decoded (earshot's client), the first byte of the body (reqwest).\n"
    );
    let _ = writeln!(o, "| endpoint | first audio (median / p90 / p99 (n)) | median less /v1/speak |\n|---|---|---|");
    let base = median(&a.speak_ms);
    let _ = writeln!(o, "| `/v1/speak` (text) | {} | 0 |", spread(&a.speak_ms));
    let _ = writeln!(o, "| `/v1/audio/speech` (pcm) | {} | {} |", spread(&a.openai_ms), ms(median(&a.openai_ms) - base));
    if !a.mp3_ms.is_empty() {
        let _ = writeln!(o, "| `/v1/audio/speech` (mp3, the first whole frame) | {} | {} |", spread(&a.mp3_ms), ms(median(&a.mp3_ms) - base));
        let _ = writeln!(
            o,
            "
mp3's first frame less pcm's first byte for the same input, round by round: {} (goal: within 10 ms).",
            spread(&a.mp3_ms.iter().zip(&a.openai_ms).map(|(mp3, pcm)| mp3 - pcm).collect::<Vec<_>>())
        );
    }
    if !a.steady_mp3_ms.is_empty() {
        let lags: Vec<f64> = a.steady_mp3_ms.iter().zip(&a.steady_pcm_ms).map(|(mp3, pcm)| mp3 - pcm).collect();
        let _ = writeln!(
            o,
            "
The same pair on the synthetic voice (its first audio at a fixed time, so the model's spread is out): pcm {}, mp3 {}; mp3 less pcm in the same round: {} (goal: within 10 ms).",
            spread(&a.steady_pcm_ms),
            spread(&a.steady_mp3_ms),
            spread(&lags)
        );
    }
    let _ = writeln!(o);
}

fn fastkokoro(o: &mut String, f: &crate::fastkokoro::Results) {
    let _ = writeln!(
        o,
        "## 21. Beside fastkokoro: OpenAI's speech API on another Kokoro server
"
    );
    let _ = writeln!(
        o,
        "earshot's `POST /v1/audio/speech` (`earshot serve`, the Kokoro container, the cache off) beside fastkokoro {}'s (PyPI, ONNX Runtime), both on the container's model file and voice pack, the voice `jf_alpha`, raw PCM streamed; one, three and seven sentences of Japanese, cells interleaved in a shuffled order each round. At the client from the send: the first byte of audio and the whole answer.
",
        f.fastkokoro_version
    );
    let _ = writeln!(
        o,
        "| sentences | system | first byte (median / p90 / p99 (n)) | whole answer (median) | audio (median s) |
|---|---|---|---|---|"
    );
    for (at, n) in crate::fastkokoro::LENGTHS.iter().enumerate() {
        for (name, cells) in [("earshot", &f.earshot), ("fastkokoro", &f.fastkokoro)] {
            let Some(cell) = cells.get(at) else { continue };
            let _ = writeln!(o, "| {n} | {name} | {} | {} | {:.2} |", spread(&cell.first_ms), ms(median(&cell.whole_ms)), median(&cell.audio_s));
        }
    }
    let _ = writeln!(o);
}

/// "p50 / p90 / max (n)", and whether the values fall in two modes.
fn distribution(values: &[f64]) -> (String, String) {
    let spread = match Summary::of(values) {
        Some(s) => format!("{} / {} / {} ({})", ms(s.median), ms(s.p90), ms(s.max), s.n),
        None => "n/a".into(),
    };
    let modes = match crate::firstaudio::second_mode(values) {
        Some((step, below)) => format!("**bimodal**: a {} ms step above {:.0}% of trials", ms(step), below * 100.0),
        None if values.len() >= 10 => "one mode".into(),
        None => "too few trials".into(),
    };
    (spread, modes)
}

fn firstaudio(o: &mut String, f: &crate::firstaudio::Results) {
    use crate::firstaudio::Cell;
    let _ = writeln!(o, "## 14. First audio as a distribution\n");
    let _ = writeln!(
        o,
        "Each answer shape's first sentence spoken as `text`, then the shape itself through the scripted agent ({} tokens/s after {} ms), {}, and this build against a second container on the earlier fixed piece plan (`this-fixed`), in an order shuffled per round. Figures are `p50 / p90 / max (trials)`: the slowest trial is the one a user remembers. A second mode is a step of at least {} ms (and a quarter of the interquartile range) between consecutive sorted trials with a fifth of them on each side (fewer above it are a tail).\n",
        crate::firstaudio::TOKENS_PER_SECOND,
        crate::firstaudio::FIRST_TOKEN_MS,
        if f.baseline { "this build and the baseline against one container" } else { "this build" },
        crate::firstaudio::STEP_MS
    );
    let builds: Vec<&str> = if f.baseline { vec!["this", "baseline", "this-fixed"] } else { vec!["this", "this-fixed"] };
    let mut shapes: Vec<&str> = Vec::new();
    for t in &f.trials {
        if !shapes.contains(&t.shape.as_str()) {
            shapes.push(&t.shape);
        }
    }
    let _ = writeln!(o, "### What the transport adds to a sentence's first audio\n");
    let _ = writeln!(o, "The gateway's release of the sentence to the backend's first audio, less the container's own time for it (from reading the request to sending its first audio, as the container reports it in `GET /stats`).\n");
    let _ = writeln!(
        o,
        "| shape | build | release → first audio | container's own | transport added | modes of release → first audio |\n|---|---|---|---|---|---|"
    );
    for shape in &shapes {
        for build in &builds {
            let cell: Vec<&crate::firstaudio::Trial> = f.trials.iter().filter(|t| t.shape == *shape && t.build == *build && t.cell == Cell::Sentence).collect();
            let released: Vec<f64> = cell.iter().filter_map(|t| t.release_to_first_audio_ms).collect();
            let own: Vec<f64> = cell.iter().filter_map(|t| t.container_own_ms).collect();
            let added: Vec<f64> = cell.iter().filter_map(|t| t.transport_ms()).collect();
            let (r, modes) = distribution(&released);
            let _ = writeln!(o, "| {shape} | {build} | {r} | {} | {} | {modes} |", distribution(&own).0, distribution(&added).0);
        }
    }
    let _ = writeln!(o, "\n### Each answer's distance from its floor\n");
    let _ = writeln!(o, "The floor is the first sentence's text complete (the agent's configured first-token delay plus its pace) plus the container's own median time for that sentence; distance is the client's time to first audio less the floor.\n");
    let _ = writeln!(
        o,
        "| shape | first sentence | floor | build | client time to first audio | distance from the floor | modes |\n|---|---|---:|---|---|---|---|"
    );
    for floor in &f.floors {
        for build in &builds {
            let ttfa: Vec<f64> =
                f.trials.iter().filter(|t| t.shape == floor.shape && t.build == *build && t.cell == Cell::Answer).filter_map(|t| t.client_ttfa_ms).collect();
            let distance: Vec<f64> = ttfa.iter().map(|t| t - floor.floor_ms).collect();
            let (d, modes) = distribution(&distance);
            let _ = writeln!(
                o,
                "| {} | \"{}\" | {} | {build} | {} | {d} | {modes} |",
                floor.shape,
                floor.first_sentence,
                ms(floor.floor_ms),
                distribution(&ttfa).0
            );
        }
    }
    let _ = writeln!(o);
}

fn pacing(o: &mut String, trials: &[crate::pacing::Trial]) {
    let _ = writeln!(o, "## 13. Piece plan: stalls inside sentences, idle and beside CPU-bound processes\n");
    let _ = writeln!(
        o,
        "The Kokoro container renders a piece whole before it sends any of it. *fixed* is the earlier plan (a short first clause, then runs of up to 150 phonemes); *paced* (the default) sizes each piece by the audio queued ahead of the listener and the engine's measured speed, and holds a sentence's audio when even that cannot keep up. Each answer at {} tokens/s, incremental release, the real model; a CPU-bound process is `while :; do :; done`, running for the whole cell (this machine has {} cores). The client plays each chunk on arrival: a silence over {} ms inside a sentence is a stall; *silence per answer* adds every silence it hears after the first audio (before sentences and inside them). Median / p90 / p99 (n), ms.\n",
        crate::pacing::TOKENS_PER_SECOND,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        crate::trial::CLIENT_GAP_THRESHOLD_MS
    );
    let _ = writeln!(o, "| load | shape | plan | client time to first audio | answers with a stall | stalls inside sentences | silence per answer | audio per answer |\n|---|---|---|---|---|---|---|---|");
    let cell = |load: &str, shape: &str, plan: &str| -> Vec<&crate::pacing::Trial> {
        trials.iter().filter(|t| t.load == load && t.shape == shape && t.plan == plan).collect()
    };
    let mut shapes: Vec<&str> = Vec::new();
    for t in trials {
        if !shapes.contains(&t.shape.as_str()) {
            shapes.push(&t.shape);
        }
    }
    // `+ 0.0`: an empty f64 sum is -0.0.
    let silence = |c: &[&crate::pacing::Trial]| c.iter().map(|t| t.measured.client_gaps_ms.iter().sum::<f64>() + 0.0).collect::<Vec<_>>();
    let ttfa = |c: &[&crate::pacing::Trial]| c.iter().filter_map(|t| t.measured.client_ttfa_ms).collect::<Vec<_>>();
    let (mut paced_stalls, mut silence_ok, mut ttfa_idle_delta) = (0usize, true, Vec::new());
    let mut busier: Vec<String> = Vec::new();
    for (load, hogs) in crate::pacing::LOADS {
        for shape in &shapes {
            for plan in crate::pacing::PLANS {
                let c = cell(load, shape, plan);
                if c.is_empty() {
                    continue;
                }
                let stalls: Vec<f64> = c.iter().flat_map(|t| t.measured.client_stalls_ms.iter().copied()).collect();
                if plan == "paced" {
                    paced_stalls += stalls.len();
                }
                let _ = writeln!(
                    o,
                    "| {load} | {shape} | {plan} | {} | {} of {} | {} | {} | {:.1} s |",
                    spread(&ttfa(&c)),
                    c.iter().filter(|t| !t.measured.client_stalls_ms.is_empty()).count(),
                    c.len(),
                    if stalls.is_empty() { "none".to_string() } else { format!("{}: {}", stalls.len(), spread(&stalls)) },
                    spread(&silence(&c)),
                    median(&c.iter().map(|t| t.measured.audio_ms).collect::<Vec<_>>()) / 1000.0,
                );
            }
            let (fixed, paced) = (cell(load, shape, "fixed"), cell(load, shape, "paced"));
            if !fixed.is_empty() && !paced.is_empty() {
                let delta = median(&silence(&paced)) - median(&silence(&fixed));
                // The goals are set for an idle machine and one CPU-bound process; busier loads are shown.
                if hogs <= 1 {
                    silence_ok &= delta <= crate::trial::CLIENT_GAP_THRESHOLD_MS;
                } else {
                    busier.push(format!("{shape} {delta:+.0} ms"));
                }
                if load == "idle" {
                    ttfa_idle_delta.push(median(&ttfa(&paced)) - median(&ttfa(&fixed)));
                }
            }
        }
    }
    let worst = ttfa_idle_delta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let _ = writeln!(o, "\n| goal (paced) | result | |\n|---|---|---|");
    let _ = writeln!(o, "| no stall inside a sentence, every load and shape | {paced_stalls} stalls | {} |", met(paced_stalls == 0));
    let _ = writeln!(
        o,
        "| silence per answer no higher than fixed, idle and beside one process (median, each shape, within the {} ms a listener cannot hear) | | {} |",
        crate::trial::CLIENT_GAP_THRESHOLD_MS,
        met(silence_ok)
    );
    let _ = writeln!(o, "| idle time to first audio at most 50 ms above fixed (median, worst shape) | {} ms | {} |\n", ms(worst), met(worst <= 50.0));
    if !busier.is_empty() {
        let _ =
            writeln!(o, "Beside more CPU-bound processes than cores (not a goal), silence per answer, paced less fixed (medians): {}.\n", busier.join(", "));
    }
}

fn agents(o: &mut String, trials: &[crate::agents::Trial]) {
    let _ = writeln!(
        o,
        "## 12. Agent sources: the same answer through each
"
    );
    let _ = writeln!(
        o,
        "The `{}` answer at {} tokens/s from each source into the real Kokoro: the scripted agent inside the gateway, and the stand-ins of an OpenAI-compatible endpoint, an HTTP agent (SSE) and an agent on AgentCore Runtime (through the AWS SDK), which the gateway reaches over the network. Median / p90 / p99 (n), ms. A source's own cost is what it adds between its first token and the first audio (the stand-ins send their first token one token interval in, the scripted agent at once): the last two columns.\n",
        crate::agents::PROMPT,
        crate::agents::TOKENS_PER_SECOND
    );
    let _ = writeln!(o, "| source | first agent token | first audio at server | first audio at client | first token to first audio | Δ of that vs scripted |\n|---|---|---|---|---|---|");
    let mut sources: Vec<&str> = Vec::new();
    for t in trials {
        if !sources.contains(&t.source.as_str()) {
            sources.push(&t.source);
        }
    }
    let server = |source: &str| trials.iter().filter(|t| t.source == source).filter_map(|t| t.measured.server_ttfa_ms).collect::<Vec<_>>();
    let after_token = |source: &str| {
        trials.iter().filter(|t| t.source == source).filter_map(|t| Some(t.measured.server_ttfa_ms? - t.measured.first_agent_token_ms?)).collect::<Vec<_>>()
    };
    let baseline = sources.first().and_then(|s| Summary::of(&after_token(s))).map(|s| s.median);
    for source in &sources {
        let cell: Vec<&crate::agents::Trial> = trials.iter().filter(|t| t.source == *source).collect();
        let delta = match (baseline, Summary::of(&after_token(source))) {
            (Some(b), Some(s)) => format!("{:+.0} ms", s.median - b),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            o,
            "| {source} | {} | {} | {} | {} | {delta} |",
            spread(&cell.iter().filter_map(|t| t.measured.first_agent_token_ms).collect::<Vec<_>>()),
            spread(&server(source)),
            spread(&cell.iter().filter_map(|t| t.measured.client_ttfa_ms).collect::<Vec<_>>()),
            spread(&after_token(source)),
        );
    }
    let _ = writeln!(o);
}

fn overload(o: &mut String, configs: &[crate::overload::Config]) {
    let _ = writeln!(
        o,
        "## 9. Overload: more conversations at once than the container admits
"
    );
    let _ = writeln!(o, "A burst of N conversations (the `brief` answer, held to its end) starts at once against the real model on this machine, in each configuration in turn, with a fresh container. *Admitted* conversations speak through Kokoro; *spilled* ones start on the other arm (`overflow`; the synthetic voice stands in for Polly here); *refused* ones get `503 backend_busy`. Client times: to the first audio decoded, or to the refusal.
");
    let _ = writeln!(o, "| configuration | container cap | conversations (failed) | admitted: time to first audio | spilled: share, time to first audio | refused: share, time to the answer |
|---|---|---|---|---|---|");
    for c in configs {
        let of = |kind: &str| c.outcomes.iter().filter(|x| x.kind == kind).map(|x| x.client_ms).collect::<Vec<f64>>();
        let total = (c.outcomes.len() + c.errors.len()).max(1) as f64;
        let share = |v: &[f64]| format!("{:.0} %", 100.0 * v.len() as f64 / total);
        let (admitted, spilled, refused) = (of("admitted"), of("spilled"), of("refused"));
        let _ = writeln!(
            o,
            "| {} | {} | {} ({}) | {} | {}, {} | {}, {} |",
            c.name,
            c.cap.map_or("none".to_string(), |n| n.to_string()),
            c.outcomes.len() + c.errors.len(),
            c.errors.len(),
            spread(&admitted),
            share(&spilled),
            spread(&spilled),
            share(&refused),
            spread(&refused)
        );
        for e in &c.errors {
            let _ = writeln!(o, "|  | error: {} | | | | |", e.replace('|', "/"));
        }
    }
    let _ = writeln!(o);
}

fn cell<'a>(rel: &'a crate::release::Results, shape: &'a str, config: Config, release: &'a str) -> impl Iterator<Item = &'a Trial> + 'a {
    rel.trials.iter().filter(move |t| t.shape == shape && t.config == config && t.release == release)
}

fn release(o: &mut String, rel: &crate::release::Results) {
    let s = &rel.settings;
    let _ = writeln!(o, "## 1. Release timing: incremental vs buffered (local Kokoro, onnx on CPU)\n");
    let _ = writeln!(
        o,
        "The scripted agent writes at {} tokens/s after a {} ms first-token delay; the same model, voice and agent serve both modes, and the cells of each round run in a shuffled order. *Server* times are from the request's arrival to the first audio chunk handed to the connection; *client* times from the request being sent to the first audio chunk decoded. The *first substantive sentence* is the first with at least {} words (after an acknowledgement such as \"Sure.\"). ![release timing](release.png)\n",
        s.tokens_per_second, s.first_token_ms, crate::trial::SUBSTANTIVE_WORDS
    );
    for shape in &s.shapes {
        let _ = writeln!(o, "### Shape `{shape}`\n");
        let _ = writeln!(o, "| | incremental | buffered | buffered ÷ incremental (medians) |\n|---|---|---|---|");
        type Pick = fn(&Trial) -> Option<f64>;
        let rows: [(&str, Pick); 4] = [
            ("time to first audio, server", |t| t.measured.server_ttfa_ms),
            ("time to first audio, client", |t| t.measured.client_ttfa_ms),
            ("first substantive sentence, server", |t| t.measured.server_substantive_ms),
            ("total (client, stream ended)", |t| t.measured.client_total_ms),
        ];
        for (name, pick) in rows {
            let inc: Vec<f64> = cell(rel, shape, Config::Default, "incremental").filter_map(pick).collect();
            let buf: Vec<f64> = cell(rel, shape, Config::Default, "buffered").filter_map(pick).collect();
            let _ = writeln!(o, "| {name} | {} | {} | {:.2}× |", spread(&inc), spread(&buf), median(&buf) / median(&inc));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "### The floor and earshot's distance from it\n");
    let _ = writeln!(o, "The floor of a shape is the moment its first sentence's text was complete (the agent's first token, median of the timelines, plus the tokens to the sentence's end at the agent's pace) plus that sentence synthesized alone on an open session (median). The distance is the client's time to first audio minus the floor: what waiting for the segmenter, the release, the model's queue and the trip to the client cost. (Client times are used because the idle-release and fast-first cells stop reading at the first audio, before the server's timeline arrives; the client's clock starts up to a few milliseconds before the server's, see the client−server row below.) The fast first fragment can beat the floor: it releases a clause before the sentence ends.\n");
    let _ = writeln!(o, "| shape | first sentence | text complete | synthesized alone | floor | distance: default (idle release on) | idle release off | fast first fragment on |\n|---|---|---|---|---|---|---|---|");
    for f in &rel.floors {
        let distance = |config: Config| -> String {
            let d: Vec<f64> = cell(rel, &f.shape, config, "incremental").filter_map(|t| t.measured.client_ttfa_ms).map(|t| t - f.floor_ms).collect();
            spread(&d)
        };
        let alone: Vec<f64> = rel.floor_trials.iter().filter(|t| t.shape == f.shape).map(|t| t.synthesis_first_audio_ms).collect();
        let _ = writeln!(
            o,
            "| {} | \"{}\" | {} | {} | {} | {} | {} | {} |",
            f.shape,
            f.first_sentence,
            ms(f.text_complete_ms),
            spread(&alone),
            ms(f.floor_ms),
            distance(Config::Default),
            distance(Config::IdleOff),
            distance(Config::FastFirst)
        );
    }
    let offset: Vec<f64> = rel.trials.iter().filter_map(|t| Some(t.measured.client_ttfa_ms? - t.measured.server_ttfa_ms?)).collect();
    let _ = writeln!(o, "\nClient minus server time to first audio, full conversations (connection set-up, HTTP, decoding): {}.", spread(&offset));
    let _ = writeln!(o, "\n![distance from the floor](floor.png)\n");
}

fn overhead(o: &mut String, r: &Results) {
    let _ = writeln!(o, "## 2. Orchestration overhead\n");
    let _ = writeln!(o, "Time to first audio minus the moment the first sentence could be released (complete; for buffered release, the answer complete) and minus the backend's own first-audio latency, from each conversation's timeline. Target: under 5 ms median and 20 ms p99.\n");
    let _ = writeln!(o, "| path | overhead | target |\n|---|---|---|");
    let mut row = |name: String, values: Vec<f64>| {
        let ok = Summary::of(&values).is_some_and(|s| s.median < 5.0 && s.p99 < 20.0);
        let _ = writeln!(o, "| {name} | {} | {} |", spread(&values), met(ok));
    };
    if let Some(rel) = &r.release {
        for release in ["incremental", "buffered"] {
            let v: Vec<f64> =
                rel.trials.iter().filter(|t| t.config == Config::Default && t.release == release).filter_map(|t| t.measured.overhead_ms).collect();
            row(format!("Kokoro over its WebSocket, every shape, {release}"), v);
        }
    }
    if let Some(trials) = &r.overhead {
        for (path, name) in [
            ("kokoro-websocket", "Kokoro over its WebSocket, text input"),
            ("sagemaker-standin", "Kokoro through the SageMaker stand-in (real SDK, HTTP/2, event stream), text input"),
            ("polly-standin", "Polly stand-in (real SDK; Kokoro's voice), text input"),
        ] {
            row(name.into(), trials.iter().filter(|t| t.path == path).filter_map(|t| t.measured.overhead_ms).collect());
        }
        let _ = writeln!(o, "\nThe same conversations' time to first audio at the client, for scale:\n\n| path | client time to first audio |\n|---|---|");
        for path in ["kokoro-websocket", "sagemaker-standin", "polly-standin"] {
            let v: Vec<f64> = trials.iter().filter(|t| t.path == path).filter_map(|t| t.measured.client_ttfa_ms).collect();
            let _ = writeln!(o, "| {path} | {} |", spread(&v));
        }
    }
    let _ = writeln!(o);
}

fn gaps(o: &mut String, rel: &crate::release::Results) {
    let _ = writeln!(o, "## 3. Gaps between sentences\n");
    let _ = writeln!(o, "For each sentence after the first: was its audio at the server before the sentence before it finished playing, at real-time playback from its first audio? An underrun is a sentence that was not, by more than {UNDERRUN_TOLERANCE_MS} ms; its length is the silence. *Client* gaps replay the chunks as the demo page's player schedules them (each on arrival or when the previous ends) and count silences over {} ms. Full conversations of the default configuration.\n", crate::trial::CLIENT_GAP_THRESHOLD_MS);
    let _ = writeln!(o, "Each underrun is put down to one cause: *text* (the sentence's text was not complete when the sentence before it ended: the agent was still writing it), *backend* (complete in time, but the backend's own latency for it would have made it late even if released at once), *release* (the gateway held it: buffered release, the in-flight cap, or late delivery).\n");
    let _ = writeln!(o, "*Client stalls* are the client gaps that fall inside a sentence: the voice stops mid-sentence, the worst silence a listener hears.\n");
    let _ = writeln!(o, "| shape | release | sentences | conversations with an underrun | underruns (text / backend / release) | underrun length | client gaps | client stalls inside a sentence |\n|---|---|---|---|---|---|---|---|");
    for shape in &rel.settings.shapes {
        for release in ["incremental", "buffered"] {
            let trials: Vec<&Trial> = cell(rel, shape, Config::Default, release).collect();
            let lengths: Vec<f64> = trials.iter().flat_map(|t| t.measured.gaps_ms.iter().copied().filter(|g| *g > UNDERRUN_TOLERANCE_MS)).collect();
            let client: Vec<f64> = trials.iter().flat_map(|t| t.measured.client_gaps_ms.iter().copied()).collect();
            let stalls: Vec<f64> = trials.iter().flat_map(|t| t.measured.client_stalls_ms.iter().copied()).collect();
            let _ = writeln!(
                o,
                "| {shape} | {release} | {} | {} of {} | {} ({}) | {} | {} | {} |",
                trials.first().map_or(0, |t| t.measured.sentences),
                trials.iter().filter(|t| t.measured.underruns > 0).count(),
                trials.len(),
                trials.iter().map(|t| t.measured.underruns).sum::<usize>(),
                causes(trials.iter().map(|t| &t.measured)),
                spread(&lengths),
                if client.is_empty() { "none".to_string() } else { format!("{} gaps: {}", client.len(), spread(&client)) },
                if stalls.is_empty() { "none".to_string() } else { format!("{} stalls: {}", stalls.len(), spread(&stalls)) }
            );
        }
    }
    let _ = writeln!(o, "\n![gaps](gaps.png)\n");
}

fn load(o: &mut String, levels: &[Level]) {
    let _ = writeln!(o, "## 4. Load: many conversations on one `earshot serve` (synthetic voice)\n");
    let _ = writeln!(o, "**The backend here is synthetic**: a tone at real-time pace after a fixed 200 ms first-audio latency, overlapping earlier sentences' audio as a backend faster than real time does. No model could serve hundreds of conversations on this machine; this measures earshot itself (agent pacing, segmenting, scheduling, encoding, streaming). The scripted agent answers `brief` at 30 tokens/s; conversations start evenly over one second; the client runs on the same machine and shares its cores. Each level has a fresh server; memory is its peak resident size minus its idle size after one conversation, over N.\n");
    let _ = writeln!(o, "Underruns are counted by cause as in section 3. The `brief` answer opens with \"Sure.\", a third of a second of audio, while the next sentence takes the agent about half a second to write: that underrun is the text's, at any N. Underruns the load causes are backend- or release-limited ones, and client gaps beyond those at N = 1.\n");
    let _ = writeln!(o, "| N | conversations (failed) | client time to first audio | added over N = 1 | underruns (text / backend / release) | underrun length | client gaps > 20 ms | server CPU (cores) | CPU ms per conversation | KB per conversation |\n|---|---|---|---|---|---|---|---|---|---|");
    for l in levels {
        let ttfa: Vec<f64> = l.trials.iter().filter_map(|t| t.client_ttfa_ms).collect();
        let _ = writeln!(
            o,
            "| {} | {} ({}) | {} | {} | {} ({}) | {} | {} | {:.2} | {:.1} | {:.0} |",
            l.conversations,
            l.trials.len() + l.failed,
            l.failed,
            spread(&ttfa),
            spread(&l.added_ttfa_ms),
            l.trials.iter().map(|t| t.underruns).sum::<usize>(),
            causes(l.trials.iter()),
            spread(&l.trials.iter().flat_map(|t| t.gaps_ms.iter().copied().filter(|g| *g > UNDERRUN_TOLERANCE_MS)).collect::<Vec<_>>()),
            l.trials.iter().map(|t| t.client_gaps_ms.len()).sum::<usize>(),
            l.server_cores,
            l.server_cpu_ms_per_conversation,
            l.kb_per_conversation
        );
        for e in &l.errors {
            let _ = writeln!(o, "|  | error: {} | | | | | | | | |", e.replace('|', "/"));
        }
    }
    if let Some(top) = levels.iter().max_by_key(|l| l.conversations) {
        let p99 = Summary::of(&top.added_ttfa_ms).map_or(f64::NAN, |s| s.p99);
        let underruns: usize = top.trials.iter().map(|t| t.underrun_causes.backend + t.underrun_causes.release).sum();
        let _ = writeln!(
            o,
            "\nTargets at N = {}: p99 added time to first audio under 20 ms: {} ({} ms); no underruns beyond the text's: {} ({}); under 256 KB per conversation: {} ({:.0} KB); no failed conversation: {}.",
            top.conversations,
            met(p99 < 20.0),
            ms(p99),
            met(underruns == 0),
            underruns,
            met(top.kb_per_conversation < 256.0),
            top.kb_per_conversation,
            met(top.failed == 0)
        );
    }
    let _ = writeln!(o, "\n![load](load.png)\n");
}

fn container(o: &mut String, trials: &[crate::container::Trial]) {
    let _ = writeln!(o, "## 5. The Kokoro container alone (onnx, CPU)\n");
    let _ = writeln!(o, "One sentence per fresh session over the container's WebSocket, short and long interleaved. *All audio ready* is when the last piece arrived: the earliest a server that synthesizes the whole request before answering (as the reference sample does) could send its first byte. Real-time factor: synthesis time over audio time (under 1 is faster than real time).\n");
    let _ = writeln!(o, "| sentence | characters | audio (s) | audio chunks | first audio (per-piece streaming) | all audio ready (whole request) | whole ÷ first (medians) | real-time factor |\n|---|---|---|---|---|---|---|---|");
    for name in ["short", "long"] {
        let t: Vec<&crate::container::Trial> = trials.iter().filter(|t| t.sentence == name).collect();
        let Some(first) = t.first() else { continue };
        let f: Vec<f64> = t.iter().map(|t| t.first_audio_ms).collect();
        let w: Vec<f64> = t.iter().map(|t| t.whole_ms).collect();
        let rtf: Vec<f64> = t.iter().map(|t| t.rtf).collect();
        let _ = writeln!(
            o,
            "| {name} | {} | {:.1} | {} | {} | {} | {:.1}× | {:.2} (p90 {:.2}) |",
            first.chars,
            first.audio_ms / 1000.0,
            first.chunks,
            spread(&f),
            spread(&w),
            median(&w) / median(&f),
            median(&rtf),
            Summary::of(&rtf).map_or(f64::NAN, |s| s.p90)
        );
    }
    let _ = writeln!(o);
}

fn transport(o: &mut String, t: &serde_json::Value) {
    let _ = writeln!(o, "## 6. Transport: SSE with base64 vs binary frames\n");
    let _ = writeln!(o, "{} s of 24 kHz 16-bit mono audio (48,000 bytes per second of PCM), encoded by the gateway's encoder and decoded by the client's decoder from 1,400-byte network pieces, in one process (the `transport` suite of `earshot-bench`). CPU is microseconds per second of audio, best of several passes.\n", t["audio_seconds"]);
    let _ =
        writeln!(o, "| chunk | format | bytes per audio second | over raw PCM | encode µs per audio s | decode µs per audio s |\n|---|---|---|---|---|---|");
    for row in t["rows"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "| {} ms | {} | {:.0} | +{:.1}% | {:.1} | {:.1} |",
            row["chunk_ms"],
            row["format"].as_str().unwrap_or(""),
            row["bytes_per_audio_second"].as_f64().unwrap_or(f64::NAN),
            row["overhead_pct"].as_f64().unwrap_or(f64::NAN),
            row["encode_us_per_audio_second"].as_f64().unwrap_or(f64::NAN),
            row["decode_us_per_audio_second"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let _ = writeln!(o);
}

fn coldstart(o: &mut String, c: &crate::coldstart::Results) {
    let _ = writeln!(o, "## 7. Cold start and size\n");
    let first: Vec<f64> = c.trials.iter().map(|t| t.first_byte_ms).collect();
    let conv1: Vec<f64> = c.trials.iter().map(|t| t.first_conversation_ttfa_ms).collect();
    let conv2: Vec<f64> = c.trials.iter().map(|t| t.second_conversation_ttfa_ms).collect();
    let rss: Vec<f64> = c.trials.iter().map(|t| t.rss_kb_after_start as f64 / 1024.0).collect();
    let _ = writeln!(o, "| | |\n|---|---|");
    let _ = writeln!(o, "| `earshot serve` process start to the first byte of `GET /healthz` | {} |", spread(&first));
    let _ = writeln!(o, "| its first conversation, client time to first audio (synthetic voice, no latency) | {} |", spread(&conv1));
    let _ = writeln!(o, "| its second conversation | {} |", spread(&conv2));
    let _ = writeln!(o, "| resident memory after start (MB) | {} |", spread(&rss));
    match (c.bootstrap_bytes, c.bootstrap_stripped_bytes) {
        (Some(b), stripped) => {
            let _ = writeln!(
                o,
                "| Lambda bootstrap, release build, {} | {:.1} MB{} |",
                c.bootstrap_target,
                b as f64 / 1e6,
                stripped.map_or(String::new(), |s| format!(", {:.1} MB stripped", s as f64 / 1e6))
            );
        }
        (None, _) => {
            let _ = writeln!(o, "| Lambda bootstrap | not built in this run |");
        }
    }
    let _ = writeln!(o);
}

fn segmenter(o: &mut String, s: &serde_json::Value) {
    let _ = writeln!(o, "## 8. Segmenter throughput\n");
    let _ = writeln!(
        o,
        "An LLM-like answer generated from a fixed seed, pushed in 3-6 character chunks as an agent streams (the `segmenter` suite of `earshot-bench`, best of {} passes).\n",
        s["passes"]
    );
    let _ = writeln!(o, "| size (MB) | sentences | MB/s | ns per byte | normalise + split MB/s |\n|---|---|---|---|---|");
    for row in s["rows"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "| {:.1} | {} | {:.1} | {:.2} | {:.1} |",
            row["megabytes"].as_f64().unwrap_or(f64::NAN),
            row["sentences"],
            row["mb_per_s"].as_f64().unwrap_or(f64::NAN),
            row["ns_per_byte"].as_f64().unwrap_or(f64::NAN),
            row["normalise_and_split_mb_per_s"].as_f64().unwrap_or(f64::NAN)
        );
    }
    if let Some(scaling) = s["scaling"].as_f64() {
        let _ = writeln!(o, "\nScaling: nanoseconds per byte at the largest size are {scaling:.2}× those at the smallest (1.0 is linear).");
    }
    if let Some(rows) = s["pauses"]["rows"].as_array() {
        let _ = writeln!(
            o,
            "\nThe release decision where agents pause: the real scheduler in virtual time, answers chunked as OpenAI's and Bedrock's streams chunk them, a pause of 100 to 500 ms after every full stop; the old rule (every end released after the 150 ms idle window) beside the new (an ambiguous end waits for what settles it, up to 2 s). First audio is modelled from when the voice was told (Kokoro: the first sentence prepared at its full stop; Polly: never prepared).\n"
        );
        let _ = writeln!(o, "| rule | first sentence | wrong splits | Kokoro first audio, median (ms) | worst | Polly first audio, median (ms) | worst |\n|---|---|---|---|---|---|---|");
        for row in rows {
            let _ = writeln!(
                o,
                "| {} | {} | {} of {} | {:.0} | {:.0} | {:.0} | {:.0} |",
                row["rule"].as_str().unwrap_or("?"),
                row["first_end"].as_str().unwrap_or("?"),
                row["wrong_splits"],
                row["cases"],
                row["kokoro_first_audio_ms_median"].as_f64().unwrap_or(f64::NAN),
                row["kokoro_first_audio_ms_worst"].as_f64().unwrap_or(f64::NAN),
                row["polly_first_audio_ms_median"].as_f64().unwrap_or(f64::NAN),
                row["polly_first_audio_ms_worst"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    if let Some(rows) = s["lexicon"].as_array() {
        let _ = writeln!(
            o,
            "\nA pronunciation lexicon's cost per sentence (one `apply`, before any voice gets the sentence: time to first audio grows by it once):\n"
        );
        let _ = writeln!(o, "| entries | median (µs) | worst (µs) |\n|---|---|---|");
        for row in rows {
            let _ = writeln!(
                o,
                "| {} | {:.2} | {:.2} |",
                row["entries"],
                row["median_us"].as_f64().unwrap_or(f64::NAN),
                row["worst_us"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    if let Some(rows) = s["spoken"].as_array() {
        let _ = writeln!(o, "\nThe spoken forms' cost per sentence (one pass of a language's rules, in the Kokoro container's session):\n");
        let _ = writeln!(o, "| sentences | n | median (µs) | worst (µs) |\n|---|---|---|---|");
        for row in rows {
            let _ = writeln!(
                o,
                "| {} | {} | {:.2} | {:.2} |",
                row["sentences_of"].as_str().unwrap_or(""),
                row["count"],
                row["median_us"].as_f64().unwrap_or(f64::NAN),
                row["worst_us"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    let _ = writeln!(o);
}

/// "text / backend / release" underrun counts over some conversations.
fn causes<'a>(trials: impl Iterator<Item = &'a crate::trial::Measured>) -> String {
    let (mut text, mut backend, mut release) = (0, 0, 0);
    for t in trials {
        text += t.underrun_causes.text;
        backend += t.underrun_causes.backend;
        release += t.underrun_causes.release;
    }
    format!("{text} / {backend} / {release}")
}

fn polly(o: &mut String, trials: &[crate::polly::Trial]) {
    let _ = writeln!(o, "## 10. Polly: how sentence boundaries are found\n");
    let _ = writeln!(
        o,
        "The same four-sentence text through the Polly stand-in (real SDK; Kokoro's voice), with this build's backend (*{}*: each sentence on its own stream, complete at its `StreamClosedEvent`, a spare stream opened ahead) and, when the run names a baseline build, the earlier backend (*{}*: one stream per conversation, a sentence taken as complete after 300 ms without audio). Cells shuffled per round. Gaps: silence before each sentence after the first at real-time playback (server timeline).\n",
        crate::polly::CURRENT,
        crate::polly::BASELINE
    );
    let _ = writeln!(o, "| design | conversations | client time to first audio | orchestration overhead | gaps between sentences | time to done | billed characters |\n|---|---|---|---|---|---|---|");
    for design in [crate::polly::CURRENT, crate::polly::BASELINE] {
        let cell: Vec<&crate::polly::Trial> = trials.iter().filter(|t| t.design == design).collect();
        if cell.is_empty() {
            continue;
        }
        let pick = |f: &dyn Fn(&crate::polly::Trial) -> Option<f64>| -> Vec<f64> { cell.iter().filter_map(|t| f(t)).collect() };
        let gaps: Vec<f64> = cell.iter().flat_map(|t| t.measured.gaps_ms.iter().copied()).collect();
        let _ = writeln!(
            o,
            "| {design} | {} | {} | {} | {} | {} | {} |",
            cell.len(),
            spread(&pick(&|t| t.measured.client_ttfa_ms)),
            spread(&pick(&|t| t.measured.overhead_ms)),
            spread(&gaps),
            spread(&pick(&|t| t.server_done_ms)),
            spread(&pick(&|t| t.billed_characters.map(|b| b as f64))),
        );
    }
    let _ = writeln!(o);
}

fn interrupt(o: &mut String, trials: &[crate::interrupt::Trial]) {
    let _ = writeln!(o, "## 11. Interrupts: from the request to silence upstream\n");
    let _ = writeln!(
        o,
        "A long answer speaking through the real model is interrupted (`POST /v1/conversations/{{id}}/interrupt`) once the container is at work. Times from the interrupt being sent: its answer, the end of the client's stream (`error interrupted`), and the container's `/stats` showing no request at work (its `cancel` arrived). Through DynamoDB, the speaking gateway reads the table every {} ms.\n",
        crate::interrupt::POLL_MS
    );
    let _ = writeln!(o, "| path | trials (ended `interrupted`) | interrupt answered | stream ended | container idle |\n|---|---|---|---|---|");
    let mut paths: Vec<&str> = Vec::new();
    for t in trials {
        if !paths.contains(&t.path.as_str()) {
            paths.push(&t.path);
        }
    }
    for path in paths {
        let cell: Vec<&crate::interrupt::Trial> = trials.iter().filter(|t| t.path == path).collect();
        let interrupted = cell.iter().filter(|t| t.code.as_deref() == Some("interrupted")).count();
        let _ = writeln!(
            o,
            "| {path} | {} ({interrupted}) | {} | {} | {} |",
            cell.len(),
            spread(&cell.iter().map(|t| t.answered_ms).collect::<Vec<_>>()),
            spread(&cell.iter().map(|t| t.stream_ended_ms).collect::<Vec<_>>()),
            spread(&cell.iter().filter_map(|t| t.container_idle_ms).collect::<Vec<_>>()),
        );
    }
    let _ = writeln!(o);
}

fn cache(o: &mut String, c: &crate::cache::Results) {
    let _ = writeln!(o, "## 15. Sentence cache: a sentence said again, and what Polly is spared\n");
    let _ = writeln!(
        o,
        "Each round speaks a sentence never said before (the model's first time), then the same sentence again (the cache's), through `earshot serve` on the Kokoro container with no warm-up, the text given at once.\n"
    );
    let _ = writeln!(o, "| first sentence | n | client first audio (median / p90) | release to first audio at the gateway (median / p90) |");
    let _ = writeln!(o, "|---|---|---|---|");
    let row = |o: &mut String, name: &str, client: Vec<f64>, release: Vec<f64>| {
        let summary = |v: &[f64]| crate::stats::Summary::of(v).map_or("-".to_string(), |s| format!("{} / {}", ms(s.median), ms(s.p90)));
        let _ = writeln!(o, "| {name} | {} | {} | {} |", client.len(), summary(&client), summary(&release));
    };
    row(
        o,
        "the model (miss)",
        c.first_audio.iter().filter_map(|p| p.miss.client_ttfa_ms).collect(),
        c.first_audio.iter().filter_map(|p| p.miss_release_to_audio_ms).collect(),
    );
    row(
        o,
        "the cache (hit)",
        c.first_audio.iter().filter_map(|p| p.hit.client_ttfa_ms).collect(),
        c.first_audio.iter().filter_map(|p| p.hit_release_to_audio_ms).collect(),
    );
    let cached = c.first_audio.iter().filter(|p| p.hit_was_cached).count();
    let _ = writeln!(o, "\n{cached} of {} second times came from the cache.\n", c.first_audio.len());
    let d = &c.day;
    let share = |part: u64, whole: u64| if whole == 0 { "-".to_string() } else { format!("{:.0}%", 100.0 * part as f64 / whole as f64) };
    let _ = writeln!(
        o,
        "A scripted day: {} answers (an opener, one of eight bodies, a closer) through the Polly stand-in with the cache on: {} of {} sentences from the cache; Polly billed {} characters and was spared {} ({} of what it would have billed).\n",
        d.answers,
        d.cache_hits,
        d.sentences,
        d.billed_characters,
        d.saved_characters,
        share(d.saved_characters, d.billed_characters + d.saved_characters)
    );
    let summary = |v: &[f64]| crate::stats::Summary::of(v).map_or("-".to_string(), |s| format!("{} / {} (n = {})", ms(s.median), ms(s.p90), s.n));
    let _ = writeln!(o, "The shared tier (an S3 prefix; here moto's server on loopback, so the figure is the tier's own cost, not S3's network time): a second gateway with an empty memory replays some of the day's answers.\n");
    let _ = writeln!(o, "| sentence | release to first audio at the gateway (median / p90) |");
    let _ = writeln!(o, "|---|---|");
    let _ = writeln!(o, "| synthesized by Polly (the stand-in, Kokoro's voice) | {} |", summary(&d.polly_release_to_audio_ms));
    let _ = writeln!(o, "| fetched from the shared tier (each sentence's first time on the second gateway) | {} |\n", summary(&d.shared_release_to_audio_ms));
}

/// What conversion to the client's audio format costs, and each format's bytes.
fn formats(o: &mut String, rows: &[crate::formats::Row]) {
    let _ = writeln!(o, "## 16. Audio formats: what conversion adds to first audio, and the bytes each sends\n");
    let _ = writeln!(
        o,
        "The gateway's encoder in process, fed a 3 s sentence as a voice sends it (a 400 ms first piece, then 200 ms pieces), from Kokoro's 24 kHz and Polly's 16 kHz. Converting the first piece is what conversion adds to first audio; the target is 5 ms at p99. Bytes are a second of audio's, as binary frames carry them and as SSE writes them (base64).\n"
    );
    let _ = writeln!(
        o,
        "| format | from | first piece (median / p90 / p99 (n)) | later pieces (median / p99) | setup (median) | p99 ≤ 5 ms | bytes/s | SSE bytes/s |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for row in rows {
        let first = Summary::of(&row.first_chunk_ms);
        let later = Summary::of(&row.chunk_ms).map_or("n/a".to_string(), |s| format!("{} / {}", ms(s.median), ms(s.p99)));
        let _ = writeln!(
            o,
            "| {} | {} kHz | {} | {} | {} | {} | {:.0} | {:.0} |",
            row.format,
            row.source_rate as f64 / 1000.0,
            spread(&row.first_chunk_ms),
            later,
            ms(median(&row.setup_ms)),
            met(first.is_some_and(|s| s.p99 <= 5.0)),
            row.bytes_per_second,
            row.sse_bytes_per_second
        );
    }
    let _ = writeln!(o);
}

fn owner(o: &mut String, rows: &[crate::owner::Row]) {
    let _ = writeln!(o, "## 17. Owner checks: what a caller's places and character budget add to first audio\n");
    let _ = writeln!(
        o,
        "Three gateways in token mode with the synthetic voice (its own first audio a fixed 20 ms), one caller's token, the cells in a shuffled order each round: the checks off (`--max-conversations-per-owner 0 --max-chars-per-owner-hour 0 --max-input-chars-per-owner-hour 0 --max-requests-per-owner-minute 0`), kept in the process (`earshot serve`'s defaults), and kept in the DynamoDB interrupt table as on Lambda (moto's server on this machine: a local round trip). The client's time to first audio; the difference is each cell's median less the first's.\n"
    );
    let _ = writeln!(o, "| cell | first audio (median / p90 / p99 (n)) | median less the checks off |");
    let _ = writeln!(o, "|---|---|---|");
    let base = rows.first().map(|r| median(&r.client_ttfa_ms)).unwrap_or(f64::NAN);
    for row in rows {
        let _ = writeln!(o, "| {} | {} | {} |", row.cell, spread(&row.client_ttfa_ms), ms(median(&row.client_ttfa_ms) - base));
    }
    let _ = writeln!(o);
}

fn capacity(o: &mut String, c: &crate::capacity::Results) {
    let _ = writeln!(o, "## 18. Capacity: conversations one Kokoro container holds at once\n");
    let _ = writeln!(
        o,
        "The real model on this machine's CPU, admitting everyone, behind `earshot serve`. Each level is k conversations (the `brief` answer, held to its end) whose starts are spread over a second, in bursts; it holds when the p95 of their first audio at the client is within the budget, twice the median of conversations alone ({}; budget {} ms), and none stalls inside a sentence for more than {} ms. The knee is the last level of the unbroken holding run; the suite stops at the first level that fails. It judges as `infra/kokoro/measure_capacity.py` judges the container alone (`bench/results/capacity/`), here through the gateway as a caller hears it.\n",
        spread(&c.lone_ms),
        ms(c.budget_ms),
        crate::capacity::STALL_MS
    );
    let _ = writeln!(o, "| conversations at once | first audio | stalled | failed | holds |");
    let _ = writeln!(o, "|---|---|---|---|---|");
    for l in &c.levels {
        let stalled = l.worst_stall_ms.iter().filter(|&&s| s > crate::capacity::STALL_MS).count();
        let _ =
            writeln!(o, "| {} | {} | {} | {} | {} |", l.conversations, spread(&l.first_audio_ms), stalled, l.errors.len(), if l.holds { "yes" } else { "no" });
    }
    let _ = match c.knee {
        Some(k) => writeln!(
            o,
            "\nKnee: {}{k} conversations at once; about {:.0} answers an hour if answers of {:.1} s of audio kept arriving that many at a time (an upper bound: a steady rate is not measured).\n",
            if c.bounded { "" } else { "at least " },
            crate::capacity::answers_an_hour(k, c.answer_audio_s),
            c.answer_audio_s
        ),
        None => writeln!(o, "\nNo knee: one conversation at a time did not hold its own budget.\n"),
    };
}

/// Paired differences as "median, p10 / p90, k of n below zero".
fn paired(differences: &[f64]) -> String {
    match Summary::of(differences) {
        Some(s) => {
            let ahead = differences.iter().filter(|d| **d < 0.0).count();
            let at = |p: f64| earshot_core::stats::percentile_sorted(differences, p);
            format!("{}, {} / {}, {ahead} of {}", ms(s.median), ms(at(10.0)), ms(at(90.0)), s.n)
        }
        None => "n/a".into(),
    }
}

fn peer(o: &mut String, p: &crate::peer::Results) {
    use crate::peer::{cell_values, Summary, System, CHUNK_CHARS, FLOOR_SLACK_MS, TOKENS_PER_SECOND};
    let _ = writeln!(o, "## 19. Peer: earshot beside pipecat on the same model\n");
    let _ = writeln!(
        o,
        "pipecat 1.14's `KokoroTTSService` (kokoro-onnx in its process, its default sentence aggregation), kokoro-onnx called directly on the first sentence, and `earshot serve` with the local Kokoro container: the same int8 model file, voice and text, the answer streamed to both in pieces of {CHUNK_CHARS} characters at {TOKENS_PER_SECOND} a second, the cells of a round in a balanced order (each cell in every place of a round, and right after every other cell, equally often: a Williams design), every container idle before each. First audio is counted from the first piece (pipecat: at the end of its pipeline, with no transport; earshot: decoded by the client). *Round by round* is earshot's first audio less pipecat's in the same round (the two ran back to back, so the machine's own slow spells touch both): its median and spread say more than the difference of the medians where the model's own spread is hundreds of milliseconds. *Released* is when the first sentence went to the voice; the floor is earshot's release plus the direct call's median; distances are medians less the floor.\n"
    );
    let _ = writeln!(o, "| answer | first sentence | pipecat first audio | earshot first audio | earshot − pipecat | round by round: median, p10 / p90, rounds earshot was ahead | released: pipecat / earshot | direct call | floor | distance: pipecat / earshot | goals |");
    let _ = writeln!(o, "|---|---|---|---|---:|---|---|---|---:|---|---|");
    for (answer, sentence) in &p.first_sentences {
        let cell = |system: System| cell_values(&p.trials, answer, system, |t| Some(t.first_audio_ms));
        let s = Summary::of(&p.trials, answer);
        let goals = s.goals();
        let _ = writeln!(
            o,
            "| {answer} | {sentence} | {} | {} | **{}** | {} | {} / {} | {} | {} | {} / {} | ahead {}; floor + {FLOOR_SLACK_MS} {}; complete in time {} |",
            spread(&cell(System::Pipecat)),
            spread(&cell(System::Earshot)),
            ms(s.earshot - s.pipecat),
            paired(&crate::peer::paired_differences(&p.trials, answer)),
            ms(s.pipecat_released),
            ms(s.complete),
            spread(&cell(System::Direct)),
            ms(s.floor),
            ms(s.pipecat - s.floor),
            ms(s.earshot - s.floor),
            met(goals[0]),
            met(goals[1]),
            met(goals[2]),
        );
    }
    let _ = writeln!(
        o,
        "\nTrial by trial, where earshot's first audio goes: the release, its own voice's first audio after it (the gateway's `SynthesisLatency`: the container and the model's render in it), and what earshot added over that voice (the SSE hop and the client's decoding), beside pipecat's first audio after its own release and the direct call. The model's spread is in the voice and the direct call alike; what earshot adds is measured without it.\n"
    );
    let _ = writeln!(o, "| answer | earshot: release | its voice after the release | earshot over its voice | pipecat after its release | direct call |");
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for (answer, _) in &p.first_sentences {
        let _ = writeln!(
            o,
            "| {answer} | {} | {} | {} | {} | {} |",
            spread(&cell_values(&p.trials, answer, System::Earshot, |t| t.released_ms)),
            spread(&cell_values(&p.trials, answer, System::Earshot, |t| t.voice_ms)),
            spread(&crate::peer::over_the_voice(&p.trials, answer)),
            spread(&cell_values(&p.trials, answer, System::Pipecat, |t| Some(t.first_audio_ms - t.released_ms?))),
            spread(&cell_values(&p.trials, answer, System::Direct, |t| Some(t.first_audio_ms))),
        );
    }
    let mut variants: Vec<&str> = p.trials.iter().filter_map(|t| t.variant.as_deref()).collect();
    variants.sort();
    variants.dedup();
    if !variants.is_empty() {
        let _ = writeln!(o, "\nearshot under other settings of its container or gateway (`EARSHOT_*`), in the same rounds (what each setting is worth):\n");
        let _ = writeln!(o, "| answer | settings | earshot first audio | less the default's median |");
        let _ = writeln!(o, "|---|---|---|---:|");
        for (answer, _) in &p.first_sentences {
            let base = Summary::of(&p.trials, answer).earshot;
            for v in &variants {
                let values: Vec<f64> = p.trials.iter().filter(|t| &t.answer == answer && t.variant.as_deref() == Some(v)).map(|t| t.first_audio_ms).collect();
                let _ = writeln!(o, "| {answer} | `{v}` | {} | {} |", spread(&values), ms(median(&values) - base));
            }
        }
    }
    let _ = writeln!(o);
}
