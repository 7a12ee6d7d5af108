//! The metrics a gateway logs, as CloudWatch Embedded Metric Format (EMF) lines on stdout: on Lambda,
//! CloudWatch Logs turns each line into metrics without an API call; under `earshot serve` the lines
//! are there to read. This is the only place that knows the metric names and their dimensions; the
//! dashboard charts them from `docs/metrics.json`, which a test here holds to what is emitted.
//!
//! Written with serde_json rather than an EMF crate: two small, fixed line shapes, documented at
//! <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>.

use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(test)]
use earshot_core::timeline::SentenceMarks;
use earshot_core::timeline::Timeline;
use serde_json::{json, Value};

fn epoch_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// How a conversation that got a session ended. Every one of them leaves a line with its ending, so
/// that an A/B arm whose listeners hang up is not judged by the ones who stayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ended {
    /// `done` was sent.
    #[default]
    Completed,
    /// The gateway ended it with an `error` of its own (the code is [`ConversationEnd::failure`]):
    /// an upstream failure, an answer too long, a panic (`internal`).
    Failed,
    /// Its owner interrupted it.
    Interrupted,
    /// The client went away.
    ClientLeft,
    /// The client took nothing for the client read limit.
    ClientStalled,
    /// It ran past the maximum length.
    TooLong,
    /// Its owner's character budget ran out mid-answer (`character_budget_spent`).
    BudgetSpent,
    /// The server stopped under it.
    ShuttingDown,
    /// Stopped from outside for a reason not named above.
    Stopped,
}

impl Ended {
    /// The name in the line's `Ending` (a dimension: a small, fixed set).
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Completed => "completed",
            Ended::Failed => "failed",
            Ended::Interrupted => "interrupted",
            Ended::ClientLeft => "client_left",
            Ended::ClientStalled => "client_stalled",
            Ended::TooLong => "too_long",
            Ended::BudgetSpent => "budget_spent",
            Ended::ShuttingDown => "shutting_down",
            Ended::Stopped => "stopped",
        }
    }

    /// Whether the listener stops playing when the conversation ends this way: what was still queued
    /// for them then is not heard. A conversation that ends by itself, or with an `error` the client
    /// reads after its audio, plays out what it was sent.
    pub fn stops_playback(self) -> bool {
        matches!(self, Ended::Interrupted | Ended::ClientLeft | Ended::ClientStalled)
    }
}

/// How a conversation ended, beside its timeline: what the A/B report (`earshot ab`) and the cost
/// widgets need that the timeline does not hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConversationEnd<'a> {
    /// How the conversation ended.
    pub ended: Ended,
    /// The request id the client was given (its `session` message): finds the line for a conversation.
    pub request_id: Option<&'a str>,
    /// The arm the split assigned and its experiment (none: the request chose, or no split).
    pub arm: Option<&'a str>,
    /// The experiment the arm belongs to (`EARSHOT_AB_EXPERIMENT`), with `arm`.
    pub experiment: Option<&'a str>,
    /// The `error` code, when the conversation ended with one.
    pub failure: Option<&'a str>,
    /// The conversation's wall time in the gateway, request to end: on Lambda, about the invocation's
    /// billed duration (a response stream bills until it ends).
    pub compute_ms: f64,
    /// The function's memory (Lambda's `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`), which prices that time.
    pub memory_mb: Option<u32>,
    /// The API the request came through, where not earshot's own (`openai_speech`).
    pub api: Option<&'a str>,
}

/// The line for one conversation that got a session, however it ended: its timings, with the backend, the
/// release mode and the A/B arm as dimensions (and billing per backend, when the backend says). The
/// arm alone is a dimension set too, so that the arms compare whole: a conversation counts in the arm
/// the split chose for it, whichever backend spoke (overflow, failover). Properties that are not
/// metrics (the experiment, the failure's code, where it overflowed or failed over from, the language
/// and the backend that could not speak it, the memory)
/// stay in the log line for `earshot ab` and Logs Insights.
pub fn conversation_line(timeline: &Timeline, namespace: &str, ending: &ConversationEnd, epoch_ms: u64) -> Value {
    let d = timeline.derive();
    let metrics = [
        ("TimeToFirstAudio", "Milliseconds"),
        ("SynthesisLatency", "Milliseconds"),
        ("InterSentenceGap", "Milliseconds"),
        ("Underruns", "Count"),
        ("UnderrunsText", "Count"),
        ("UnderrunsBackend", "Count"),
        ("UnderrunsRelease", "Count"),
        ("Stalls", "Count"),
        ("StallTime", "Milliseconds"),
        ("OrchestrationOverhead", "Milliseconds"),
        ("Sentences", "Count"),
        ("Overflows", "Count"),
        ("Failures", "Count"),
        ("ComputeTime", "Milliseconds"),
        ("AudioSent", "Milliseconds"),
        ("HeardTime", "Milliseconds"),
        ("AudioBytes", "Bytes"),
    ]
    .map(|(name, unit)| json!({"Name": name, "Unit": unit}));
    let mut line = json!({
        "_aws": {
            "Timestamp": epoch_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["Backend", "Release"], ["Backend", "Release", "Arm"], ["Arm"]],
                "Metrics": metrics,
            }]
        },
        "Backend": timeline.backend,
        "Release": timeline.release,
        "Arm": ending.arm.unwrap_or("none"),
        "SynthesisLatency": d.synthesis_latency_ms,
        "InterSentenceGap": d.gaps_ms,
        "Underruns": d.underruns,
        // Each gap before a sentence put down to its cause (the text, the backend, the release) ...
        "UnderrunsText": d.underrun_causes.text,
        "UnderrunsBackend": d.underrun_causes.backend,
        "UnderrunsRelease": d.underrun_causes.release,
        // ... and the silences inside sentences apart from them: the voice stopping mid-sentence.
        "Stalls": d.stalls,
        "StallTime": d.stall_ms,
        "Sentences": timeline.sentences.len(),
        // 1 when the conversation spilled here because its first backend was full: summed per arm,
        // it counts the overflows the A/B switch absorbed.
        "Overflows": u32::from(timeline.overflow_from.is_some()),
        // 1 when the conversation ended with an `error`: summed per arm, the arm's failures.
        "Failures": u32::from(ending.failure.is_some()),
        "ComputeTime": round_ms(ending.compute_ms),
        "Ending": ending.ended.as_str(),
        // Audio handed to the client, and what of it was heard: all of it unless the listener stopped
        // playing when the conversation ended (then what had played out by the end).
        "AudioSent": round_ms(timeline.audio_sent_ms),
        "HeardTime": round_ms(if ending.ended.stops_playback() { timeline.heard_by_ms(ending.compute_ms) } else { timeline.audio_sent_ms }),
        // The audio's bytes as sent, in the client's format (what a μ-law answer saves on the wire).
        "AudioBytes": timeline.audio_bytes_sent,
    });
    if let Some(ttfa) = d.ttfa_ms {
        line["TimeToFirstAudio"] = json!(ttfa);
    }
    if let Some(overhead) = d.orchestration_overhead_ms {
        line["OrchestrationOverhead"] = json!(overhead);
    }
    let properties = [
        ("RequestId", ending.request_id.map(Value::from)),
        ("Experiment", ending.experiment.map(Value::from)),
        ("FailureCode", ending.failure.map(Value::from)),
        ("OverflowFrom", timeline.overflow_from.as_deref().map(Value::from)),
        ("FailoverFrom", timeline.failover_from.as_deref().map(Value::from)),
        ("Language", timeline.language.as_deref().map(Value::from)),
        ("LanguageFrom", timeline.language_from.as_deref().map(Value::from)),
        ("MemoryMb", ending.memory_mb.map(Value::from)),
        ("Api", ending.api.map(Value::from)),
        // The answer's length as written, beside what was billed and charged (the voice is sent the
        // lexicon's and SSML's rewrites, which the owner's budget charges: docs/security.md).
        ("WrittenCharacters", Some(Value::from(timeline.sentences.iter().map(|s| s.chars as u64).sum::<u64>()))),
    ];
    for (name, value) in properties {
        if let Some(value) = value {
            line[name] = value;
        }
    }
    // Answers by the backend that spoke and by the arm assigned: the traffic split actually served.
    add_metric(&mut line, namespace, "Answers", "Count", json!(1), json!([["Backend"], ["Arm"], ["Backend", "Arm"]]));
    // Conversations by how they ended, overall and per arm: the rate of listeners who leave, by arm.
    add_metric(&mut line, namespace, "Conversations", "Count", json!(1), json!([["Ending"], ["Arm", "Ending"]]));
    // Figures that depend on the backend alone have a dimension set of their own: what a pacing backend held
    // back (Kokoro says it), and what a billing one billed (Polly says it; per arm too, for its cost).
    if let Some(held) = d.backend_held_ms {
        add_metric(&mut line, namespace, "BackendHeldTime", "Milliseconds", json!(held), json!([["Backend"]]));
    }
    if let Some(billed) = timeline.billed_characters {
        add_metric(&mut line, namespace, "BilledCharacters", "Count", json!(billed), json!([["Backend"], ["Arm"]]));
        // What the sentence cache spared the bill: its hits' characters, where the backend bills them.
        add_metric(&mut line, namespace, "BilledCharactersSaved", "Count", json!(timeline.cached_characters()), json!([["Backend"], ["Arm"]]));
    }
    // Sentences heard before and played from the cache: over `Sentences`, the hit rate.
    add_metric(&mut line, namespace, "CacheHits", "Count", json!(timeline.cache_hits()), json!([["Backend"], ["Arm"]]));
    line
}

fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Adds `name` to `line` with dimension sets of its own.
fn add_metric(line: &mut Value, namespace: &str, name: &str, unit: &str, value: Value, dimensions: Value) {
    line[name] = value;
    line["_aws"]["CloudWatchMetrics"].as_array_mut().expect("metric directives").push(json!({
        "Namespace": namespace,
        "Dimensions": dimensions,
        "Metrics": [{"Name": name, "Unit": unit}],
    }));
}

/// The line for a conversation a full backend refused before it started (`503 backend_busy`).
pub fn refusal_line(backend: &str, namespace: &str, epoch_ms: u64) -> Value {
    json!({
        "_aws": {"Timestamp": epoch_ms, "CloudWatchMetrics": [{"Namespace": namespace, "Dimensions": [["Backend"]], "Metrics": [{"Name": "BusyRefusals", "Unit": "Count"}]}]},
        "Backend": backend,
        "BusyRefusals": 1,
    })
}

/// The line for a connection `earshot serve` closed because a response made no write progress for the write
/// time (`Reason` `write_stalled`): the slot it held is free again, and how often that happens is counted.
pub fn connection_closed_line(reason: &str, namespace: &str, epoch_ms: u64) -> Value {
    json!({
        "_aws": {"Timestamp": epoch_ms, "CloudWatchMetrics": [{"Namespace": namespace, "Dimensions": [["Reason"]], "Metrics": [{"Name": "ConnectionsClosed", "Unit": "Count"}]}]},
        "Reason": reason,
        "ConnectionsClosed": 1,
    })
}

/// The line of a request or a sentence refused for the deployment's spend ceiling (`limit`: characters,
/// input or requests; [`crate::spend_ceiling`]).
pub fn spend_ceiling_line(limit: &str, namespace: &str, epoch_ms: u64) -> Value {
    json!({
        "_aws": {"Timestamp": epoch_ms, "CloudWatchMetrics": [{"Namespace": namespace, "Dimensions": [["Limit"]], "Metrics": [{"Name": "SpendCeilingReached", "Unit": "Count"}]}]},
        "Limit": limit,
        "SpendCeilingReached": 1,
    })
}

/// Logs a spend ceiling's refusal.
pub fn log_spend_ceiling(limit: &str, namespace: &str) {
    println!("{}", spend_ceiling_line(limit, namespace, epoch_ms()));
}

/// Logs a closed connection's line.
pub fn log_connection_closed(reason: &str, namespace: &str) {
    println!("{}", connection_closed_line(reason, namespace, epoch_ms()));
}

/// Logs a conversation's line, with the function's memory where Lambda says it.
pub fn log_conversation(timeline: &Timeline, namespace: &str, ending: ConversationEnd) {
    let memory_mb = std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").ok().and_then(|m| m.parse().ok());
    println!("{}", conversation_line(timeline, namespace, &ConversationEnd { memory_mb, ..ending }, epoch_ms()));
}

/// Logs a refusal's line.
pub fn log_refusal(backend: &str, namespace: &str) {
    println!("{}", refusal_line(backend, namespace, epoch_ms()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_conversation_line_names_its_dimensions_and_metrics() {
        let t = Timeline { backend: "kokoro".into(), release: "buffered".into(), first_audio_sent_ms: Some(42.0), ..Default::default() };
        let line =
            conversation_line(&t, "earshot", &ConversationEnd { arm: Some("a"), experiment: Some("voices"), compute_ms: 812.3456, ..Default::default() }, 1);
        assert_eq!(line["Backend"], "kokoro");
        assert_eq!(line["Release"], "buffered");
        assert_eq!(line["Arm"], "a");
        assert_eq!(line["TimeToFirstAudio"], 42.0);
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0], json!(["Backend", "Release"]));
        assert!(line.get("BilledCharacters").is_none());
        assert_eq!(line["Failures"], 0);
        assert_eq!((line["Experiment"].as_str(), line["ComputeTime"].as_f64(), line["Answers"].as_u64()), (Some("voices"), Some(812.346), Some(1)));
        assert!(line.get("FailureCode").is_none() && line.get("MemoryMb").is_none());

        let polly = Timeline {
            backend: "polly".into(),
            billed_characters: Some(120),
            overflow_from: Some("kokoro".into()),
            language: Some("fr".into()),
            language_from: Some("synthetic".into()),
            ..Default::default()
        };
        let line = conversation_line(&polly, "earshot", &ConversationEnd { failure: Some("backend_gone"), memory_mb: Some(1024), ..Default::default() }, 1);
        assert_eq!(line["BilledCharacters"], 120);
        assert_eq!((line["Failures"].as_u64(), line["FailureCode"].as_str()), (Some(1), Some("backend_gone")));
        assert_eq!((line["OverflowFrom"].as_str(), line["MemoryMb"].as_u64(), line["Arm"].as_str()), (Some("kokoro"), Some(1024), Some("none")));
        assert!(line.get("Experiment").is_none());
        assert_eq!((line["Language"].as_str(), line["LanguageFrom"].as_str()), (Some("fr"), Some("synthetic")));
        assert_eq!(line["_aws"]["CloudWatchMetrics"][3]["Dimensions"], json!([["Backend"], ["Arm"]]));
        assert_eq!((line["Ending"].as_str(), line["Conversations"].as_u64()), (Some("completed"), Some(1)));
    }

    #[test]
    fn the_cache_s_hits_are_counted_and_what_they_spared_a_billing_backend() {
        let sentence = |index: u32, chars: usize, cached: bool| earshot_core::timeline::SentenceMarks { index, chars, cached, ..Default::default() };
        let polly = Timeline {
            backend: "polly".into(),
            billed_characters: Some(30),
            sentences: vec![sentence(0, 5, true), sentence(1, 30, false)],
            ..Default::default()
        };
        let line = conversation_line(&polly, "earshot", &ConversationEnd::default(), 1);
        assert_eq!((line["CacheHits"].as_u64(), line["BilledCharactersSaved"].as_u64(), line["Sentences"].as_u64()), (Some(1), Some(5), Some(2)));
        assert!(line["WrittenCharacters"].as_u64().is_some_and(|n| n > 0), "the written length beside the billed: {line}");
        let kokoro = Timeline { backend: "kokoro".into(), sentences: vec![sentence(0, 5, true)], ..Default::default() };
        let line = conversation_line(&kokoro, "earshot", &ConversationEnd::default(), 1);
        assert_eq!(line["CacheHits"].as_u64(), Some(1));
        assert!(line.get("BilledCharactersSaved").is_none(), "a backend that bills nothing saves nothing");
    }

    #[test]
    fn what_was_heard_stops_where_the_listener_stopped_playing() {
        // Three seconds of audio handed over by 1 s, playing from 500 ms: 2.5 s queued at 1 s.
        let mut t = Timeline { backend: "kokoro".into(), sentences: vec![SentenceMarks::default()], ..Default::default() };
        t.note_audio_sent(0, 500.0, 3000.0);
        let line = |ended| conversation_line(&t, "earshot", &ConversationEnd { ended, compute_ms: 1000.0, ..Default::default() }, 1);
        for ended in [Ended::Interrupted, Ended::ClientLeft, Ended::ClientStalled] {
            let l = line(ended);
            assert_eq!((l["Ending"].as_str(), l["AudioSent"].as_f64(), l["HeardTime"].as_f64()), (Some(ended.as_str()), Some(3000.0), Some(500.0)));
        }
        // Ended by itself or with an error after its audio: what was sent plays out.
        for ended in [Ended::Completed, Ended::Failed, Ended::TooLong, Ended::ShuttingDown] {
            assert_eq!(line(ended)["HeardTime"].as_f64(), Some(3000.0), "{ended:?}");
        }
    }

    /// `(metric, dimension set)` for every metric a line declares, with a check that the line holds
    /// a value for the metric and for each dimension, as EMF requires.
    fn declared(line: &Value) -> BTreeSet<(String, Vec<String>)> {
        let mut out = BTreeSet::new();
        for directive in line["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
            for dims in directive["Dimensions"].as_array().unwrap() {
                let dims: Vec<String> = dims.as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect();
                for d in &dims {
                    assert!(line.get(d).is_some_and(Value::is_string), "dimension {d} has no value in {line}");
                }
                for metric in directive["Metrics"].as_array().unwrap() {
                    out.insert((metric["Name"].as_str().unwrap().to_string(), dims.clone()));
                }
            }
        }
        out
    }

    #[test]
    fn what_is_emitted_is_the_metrics_contract_the_dashboard_reads() {
        // Every shape of line: a conversation with audio and billing, and a refusal.
        let full = Timeline {
            backend: "polly".into(),
            release: "incremental".into(),
            first_audio_sent_ms: Some(300.0),
            billed_characters: Some(12),
            overflow_from: Some("kokoro".into()),
            ..Default::default()
        };
        let mut emitted = declared(&conversation_line(&full, "earshot", &ConversationEnd { arm: Some("b"), ..Default::default() }, 1));
        // A Kokoro conversation whose container held a sentence back.
        let held = SentenceMarks { backend_held_ms: Some(250.0), ..Default::default() };
        let kokoro = Timeline { backend: "kokoro".into(), release: "incremental".into(), sentences: vec![held], ..Default::default() };
        let line = conversation_line(&kokoro, "earshot", &ConversationEnd::default(), 1);
        assert_eq!(line["BackendHeldTime"], 250.0);
        emitted.extend(declared(&line));
        emitted.extend(declared(&refusal_line("kokoro", "earshot", 1)));
        emitted.extend(declared(&spend_ceiling_line("characters", "earshot", 1)));

        let path =
            std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("../../docs/metrics.json");
        let contract: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("docs/metrics.json")).expect("JSON");
        let mut promised = BTreeSet::new();
        for metric in contract["metrics"].as_array().unwrap() {
            for dims in metric["dimensions"].as_array().unwrap() {
                let dims: Vec<String> = dims.as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect();
                promised.insert((metric["name"].as_str().unwrap().to_string(), dims));
            }
        }
        assert_eq!(emitted, promised, "left: emitted by the gateway; right: docs/metrics.json");
    }
}
