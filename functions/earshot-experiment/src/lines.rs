//! The gateway's metric lines, as records: one [`Answer`] per conversation that got a session, however
//! it ended (gateways before the `Ending` property wrote lines only for those that completed or failed),
//! one refusal per conversation a full backend turned away before it started. Anything else in a log
//! (the gateway's own log lines, Lambda's START/END/REPORT) is skipped.

use serde::Serialize;
use serde_json::Value;

/// One conversation, as its metric line tells it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// When the line was written (the EMF timestamp), milliseconds since the epoch.
    pub epoch_ms: u64,
    /// The arm the split assigned (`none`: the request chose its backend, or there is no split).
    pub arm: String,
    /// The experiment the split belongs to (`Experiment`); `None` where the line names none.
    pub experiment: Option<String>,
    /// The backend that spoke (another than the arm after overflow or failover).
    pub backend: String,
    /// None when no audio was sent (a failure before the first audio).
    pub ttfa_ms: Option<f64>,
    /// Silences inside sentences (`Stalls`): the voice stopped mid-sentence.
    pub stalls: f64,
    /// The length of those silences, summed, in milliseconds (`StallTime`).
    pub stall_ms: f64,
    /// Gaps longer than 5 ms a listener would hear (`Underruns`).
    pub underruns: f64,
    /// The `error` code of a failed conversation (`unknown` for a line that counts a failure without one).
    pub failure: Option<String>,
    /// How it ended: `completed`, `failed`, `interrupted`, `client_left`, `client_stalled`, `too_long`, `budget_spent`,
    /// `shutting_down` or `stopped` (lines without the property: `completed` or `failed`).
    pub ending: String,
    /// Milliseconds of audio the listener heard, where the line says.
    pub heard_ms: Option<f64>,
    /// The backend that was full, when another spoke instead (`OverflowFrom`).
    pub overflow_from: Option<String>,
    /// The backend that failed to open, when another spoke instead (`FailoverFrom`).
    pub failover_from: Option<String>,
    /// Characters the backend billed (Polly; 0 for backends that bill no characters).
    pub billed_characters: u64,
    /// Sentences spoken, and those played from the sentence cache (0 in lines of older gateways).
    pub sentences: u64,
    /// Sentences played from the sentence cache.
    pub cache_hits: u64,
    /// Characters the cache spared a billing backend (Polly).
    pub billed_characters_saved: u64,
    /// The conversation's wall time in the gateway (absent from lines of older gateways).
    pub compute_ms: Option<f64>,
    /// The function's memory, on Lambda.
    pub memory_mb: Option<u32>,
}

#[cfg(test)]
impl Answer {
    /// An answer of `backend`'s own arm with first audio at `ttfa_ms`, nothing else of note.
    pub(crate) fn plain(backend: &str, ttfa_ms: f64) -> Answer {
        Answer {
            epoch_ms: 0,
            arm: backend.into(),
            experiment: None,
            backend: backend.into(),
            ttfa_ms: Some(ttfa_ms),
            stalls: 0.0,
            stall_ms: 0.0,
            underruns: 0.0,
            failure: None,
            ending: "completed".into(),
            heard_ms: None,
            overflow_from: None,
            failover_from: None,
            billed_characters: 0,
            sentences: 0,
            cache_hits: 0,
            billed_characters_saved: 0,
            compute_ms: None,
            memory_mb: None,
        }
    }
}

/// Everything read from one or more logs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lines {
    /// Every conversation's line, in the order read.
    pub answers: Vec<Answer>,
    /// Conversations refused `503 backend_busy` before they started, per backend, with their times.
    pub refusals: Vec<(u64, String)>,
}

impl Lines {
    /// Reads every line of `text` (a log with metric lines among others).
    pub fn read(text: &str) -> Lines {
        let mut lines = Lines::default();
        lines.extend(text.lines());
        lines
    }

    /// Adds the metric lines among `lines`.
    pub fn extend<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for line in lines {
            match parse(line) {
                Some(Parsed::Answer(a)) => self.answers.push(*a),
                Some(Parsed::Refusal(at, backend)) => self.refusals.push((at, backend)),
                None => {}
            }
        }
    }

    /// The experiments named in the lines, most answers first.
    pub fn experiments(&self) -> Vec<(String, usize)> {
        let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
        for a in &self.answers {
            if let Some(e) = &a.experiment {
                *counts.entry(e.clone()).or_default() += 1;
            }
        }
        let mut out: Vec<(String, usize)> = counts.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }
}

enum Parsed {
    Answer(Box<Answer>),
    Refusal(u64, String),
}

/// A metric line: a JSON object with EMF's `_aws` (alone on its line, as the gateway writes it and as
/// CloudWatch Logs keeps the message).
fn parse(line: &str) -> Option<Parsed> {
    let line = line.trim();
    if !line.starts_with('{') || !line.contains("\"_aws\"") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    let epoch_ms = v["_aws"]["Timestamp"].as_u64()?;
    let text = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
    let number = |name: &str| v.get(name).and_then(Value::as_f64);
    let backend = text("Backend")?;
    if v.get("BusyRefusals").is_some() {
        return Some(Parsed::Refusal(epoch_ms, backend));
    }
    // A conversation's line has its arm and its failure count (both always written).
    let arm = text("Arm")?;
    let failed = number("Failures")? > 0.0;
    Some(Parsed::Answer(Box::new(Answer {
        epoch_ms,
        arm,
        experiment: text("Experiment"),
        backend,
        ttfa_ms: number("TimeToFirstAudio"),
        stalls: number("Stalls").unwrap_or(0.0),
        stall_ms: number("StallTime").unwrap_or(0.0),
        underruns: number("Underruns").unwrap_or(0.0),
        failure: failed.then(|| text("FailureCode").unwrap_or_else(|| "unknown".into())),
        ending: text("Ending").unwrap_or_else(|| if failed { "failed" } else { "completed" }.into()),
        heard_ms: number("HeardTime"),
        overflow_from: text("OverflowFrom"),
        failover_from: text("FailoverFrom"),
        billed_characters: v.get("BilledCharacters").and_then(Value::as_u64).unwrap_or(0),
        sentences: v.get("Sentences").and_then(Value::as_u64).unwrap_or(0),
        cache_hits: v.get("CacheHits").and_then(Value::as_u64).unwrap_or(0),
        billed_characters_saved: v.get("BilledCharactersSaved").and_then(Value::as_u64).unwrap_or(0),
        compute_ms: number("ComputeTime"),
        memory_mb: v.get("MemoryMb").and_then(Value::as_u64).and_then(|m| u32::try_from(m).ok()),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_lines_are_read_and_everything_else_is_skipped() {
        let log = r#"2026-12-02T08:00:00Z  INFO earshot: conversation completed
START RequestId: 1 Version: $LATEST
{"_aws":{"Timestamp":1000,"CloudWatchMetrics":[]},"Backend":"polly","Release":"incremental","Arm":"kokoro","Experiment":"voices","TimeToFirstAudio":412.5,"Stalls":1,"StallTime":80.0,"Underruns":2,"Failures":0,"OverflowFrom":"kokoro","BilledCharacters":120,"ComputeTime":2300.0,"MemoryMb":1024}
{"_aws":{"Timestamp":2000,"CloudWatchMetrics":[]},"Backend":"kokoro","Release":"incremental","Arm":"kokoro","Failures":1,"FailureCode":"backend_gone"}
{"_aws":{"Timestamp":3000,"CloudWatchMetrics":[]},"Backend":"kokoro","BusyRefusals":1}
{"_aws":{"Timestamp":4000,"CloudWatchMetrics":[]},"Backend":"kokoro","Release":"incremental","Arm":"kokoro","Failures":0,"Ending":"client_left","AudioSent":3000.0,"HeardTime":1200.5}
{"not":"a metric line"}
{"_aws": broken
"#;
        let lines = Lines::read(log);
        assert_eq!(lines.answers.len(), 3);
        let first = &lines.answers[0];
        assert_eq!((first.arm.as_str(), first.backend.as_str(), first.experiment.as_deref()), ("kokoro", "polly", Some("voices")));
        assert_eq!((first.ttfa_ms, first.stalls, first.stall_ms, first.underruns), (Some(412.5), 1.0, 80.0, 2.0));
        assert_eq!((first.billed_characters, first.compute_ms, first.memory_mb, first.failure.as_deref()), (120, Some(2300.0), Some(1024), None));
        assert_eq!(first.overflow_from.as_deref(), Some("kokoro"));
        let failed = &lines.answers[1];
        assert_eq!((failed.failure.as_deref(), failed.ttfa_ms, failed.compute_ms), (Some("backend_gone"), None, None));
        assert_eq!((first.ending.as_str(), failed.ending.as_str()), ("completed", "failed"), "older lines: the ending from the failure count");
        let left = &lines.answers[2];
        assert_eq!((left.ending.as_str(), left.heard_ms, left.failure.as_deref()), ("client_left", Some(1200.5), None));
        assert_eq!(lines.refusals, vec![(3000, "kokoro".to_string())]);
        assert_eq!(lines.experiments(), vec![("voices".to_string(), 1)]);
    }
}
