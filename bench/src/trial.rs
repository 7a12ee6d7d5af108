//! One conversation as a benchmark trial: sent with the real client, checked for errors, and reduced
//! to the figures the report needs (times at the server and at the client, gaps, overhead).

use std::time::Duration;

use earshot_client::{speak, CallOptions, Received, SpeakBody};
use earshot_core::protocol::{Delivery, ServerEvent};
use serde::{Deserialize, Serialize};

/// What one conversation measured. Times are milliseconds: `server_*` from the request's arrival
/// at the gateway (its timeline), `client_*` from the moment the client sent it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measured {
    pub client_ttfa_ms: Option<f64>,
    pub server_ttfa_ms: Option<f64>,
    /// The first audio of the first sentence with at least [`SUBSTANTIVE_WORDS`] words.
    pub server_substantive_ms: Option<f64>,
    pub client_total_ms: Option<f64>,
    pub overhead_ms: Option<f64>,
    pub first_agent_token_ms: Option<f64>,
    /// Per sentence after the first: silence before it at real-time playback (server timeline).
    pub gaps_ms: Vec<f64>,
    pub underruns: usize,
    /// The underruns by cause: see [`Causes`].
    pub underrun_causes: Causes,
    /// Silences longer than [`CLIENT_GAP_THRESHOLD_MS`] a player starting each chunk on arrival would leave.
    pub client_gaps_ms: Vec<f64>,
    /// Of those, the silences inside a sentence (a stall: the voice stops mid-sentence).
    #[serde(default)]
    pub client_stalls_ms: Vec<f64>,
    pub sentences: usize,
    pub audio_ms: f64,
    pub body_bytes: u64,
    pub first_sentence: String,
}

/// A sentence of fewer words is an acknowledgement ("Sure.", "Great question!").
pub const SUBSTANTIVE_WORDS: usize = 4;
/// Client-side silences shorter than this are delivery jitter, not an audible gap (the demo page's
/// player starts each chunk on arrival, with no jitter buffer).
pub const CLIENT_GAP_THRESHOLD_MS: f64 = 20.0;

pub fn body(prompt: Option<&str>, text: Option<&str>, release: &str, backend: Option<&str>) -> SpeakBody {
    SpeakBody {
        prompt: prompt.map(str::to_string),
        text: text.map(str::to_string),
        release: Some(release.to_string()),
        backend: backend.map(str::to_string),
        ..Default::default()
    }
}

/// Runs one conversation; with `ttfa_only` the client goes away after the first audio chunk.
pub async fn run(url: &str, body: &SpeakBody, ttfa_only: bool) -> Result<Measured, String> {
    let options =
        CallOptions { delivery: Delivery::Sse, timeout: Duration::from_secs(600), stop_after_audio_chunks: ttfa_only.then_some(1), ..Default::default() };
    let received = speak(url, body, &options).await.map_err(|e| e.to_string())?;
    if let Some(error) = &received.error {
        return Err(format!("the conversation failed: {}: {}", error.code, error.message));
    }
    if !ttfa_only && received.timeline.is_none() {
        return Err("the stream ended without `done`".into());
    }
    Ok(measure(&received))
}

pub fn measure(r: &Received) -> Measured {
    let mut m = Measured {
        client_ttfa_ms: r.marks.first_audio_decoded_ms,
        client_total_ms: r.marks.done_ms,
        client_gaps_ms: r.marks.playback_gaps(CLIENT_GAP_THRESHOLD_MS),
        client_stalls_ms: r.marks.playback_silences(CLIENT_GAP_THRESHOLD_MS).inside_sentences,
        body_bytes: r.marks.body_bytes,
        audio_ms: r.marks.audio_chunk_ms.iter().sum(),
        ..Default::default()
    };
    let sentences: Vec<(u32, &str)> =
        r.events.iter().filter_map(|e| if let ServerEvent::Sentence(s) = e { Some((s.index, s.text.as_str())) } else { None }).collect();
    m.first_sentence = sentences.first().map(|s| s.1.to_string()).unwrap_or_default();
    if let Some(t) = &r.timeline {
        let d = t.derive();
        m.server_ttfa_ms = d.ttfa_ms;
        m.overhead_ms = d.orchestration_overhead_ms;
        m.gaps_ms = d.gaps_ms;
        m.underruns = d.underruns;
        m.underrun_causes = d.underrun_causes;
        m.first_agent_token_ms = t.first_agent_token_ms;
        m.sentences = t.sentences.len();
        if let Some(&(index, _)) = sentences.iter().find(|(_, text)| text.split_whitespace().count() >= SUBSTANTIVE_WORDS) {
            m.server_substantive_ms = t.sentences.iter().find(|s| s.index == index).and_then(|s| s.first_audio_sent_ms);
        }
    }
    m
}

/// The underruns by cause, as the timeline puts them down (text, backend, release).
pub use earshot_core::timeline::UnderrunCauses as Causes;
