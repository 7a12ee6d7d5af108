//! One conversation as a benchmark trial: sent with the real client, checked for errors, and reduced
//! to the figures the report needs (times at the server and at the client, gaps, overhead).

use std::time::Duration;

use earshot_client::{speak, CallOptions, Received, SpeakBody};
use earshot_core::playback;
use earshot_core::protocol::{Delivery, ServerEvent};
use earshot_core::timeline::{SentenceMarks, Timeline, UNDERRUN_TOLERANCE_MS};
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
    let bytes_per_ms = r.format().map_or(48.0, |f| f.sample_rate as f64 * f.channels as f64 * 2.0 / 1000.0);
    let mut m = Measured {
        client_ttfa_ms: r.marks.first_audio_decoded_ms,
        client_total_ms: r.marks.done_ms,
        client_gaps_ms: r.marks.playback_gaps(bytes_per_ms, CLIENT_GAP_THRESHOLD_MS),
        client_stalls_ms: r.marks.playback_silences(bytes_per_ms, CLIENT_GAP_THRESHOLD_MS).inside_sentences,
        body_bytes: r.marks.body_bytes,
        audio_ms: r.audio.len() as f64 / bytes_per_ms,
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
        m.underrun_causes = causes(t);
        m.first_agent_token_ms = t.first_agent_token_ms;
        m.sentences = t.sentences.len();
        if let Some(&(index, _)) = sentences.iter().find(|(_, text)| text.split_whitespace().count() >= SUBSTANTIVE_WORDS) {
            m.server_substantive_ms = t.sentences.iter().find(|s| s.index == index).and_then(|s| s.first_audio_sent_ms);
        }
    }
    m
}

/// Why each underrun happened. A sentence's audio is late when it is not there as the sentence
/// before it ends at real-time playback. It is *text-limited* when its text was not even complete
/// by then (the agent was still writing it: no gateway could have done better); *backend-limited*
/// when the text was complete in time but the backend's own latency for it, counted from its
/// release, would have made it late even if released the moment it was complete; *release-limited*
/// otherwise: the gateway held it (buffered release, the in-flight cap) or delivered it late.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Causes {
    pub text: usize,
    pub backend: usize,
    pub release: usize,
}

pub fn causes(t: &Timeline) -> Causes {
    let mut c = Causes::default();
    let heard: Vec<&SentenceMarks> = t.sentences.iter().filter(|s| s.first_audio_sent_ms.is_some()).collect();
    let played = playback::play(heard.iter().map(|s| (s.first_audio_sent_ms.unwrap_or_default(), s.audio_ms)));
    for (s, p) in heard.iter().zip(&played) {
        let Some(gap) = p.gap_ms.filter(|gap| *gap > UNDERRUN_TOLERANCE_MS) else { continue };
        // When the sentence before it finished playing.
        let end = p.ready_ms - gap;
        let latency = match (s.tts_first_audio_ms, s.released_ms) {
            (Some(first), Some(released)) => first - released,
            _ => 0.0,
        };
        if s.complete_ms >= end {
            c.text += 1;
        } else if s.complete_ms + latency >= end {
            c.backend += 1;
        } else {
            c.release += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use earshot_core::timeline::SentenceMarks;

    fn sentence(index: u32, complete: f64, released: f64, tts_first: f64, sent: f64, audio: f64) -> SentenceMarks {
        SentenceMarks {
            index,
            chars: 10,
            complete_ms: complete,
            released_ms: Some(released),
            tts_first_audio_ms: Some(tts_first),
            first_audio_sent_ms: Some(sent),
            tts_done_ms: None,
            audio_ms: audio,
            audio_chunks: 1,
            ..Default::default()
        }
    }

    #[test]
    fn underruns_are_put_down_to_the_text_the_backend_or_the_release() {
        let t = Timeline {
            sentences: vec![
                // Plays 100..400.
                sentence(0, 0.0, 0.0, 100.0, 100.0, 300.0),
                // Text complete at 500, after 400: text-limited. Plays 700..800.
                sentence(1, 500.0, 500.0, 700.0, 700.0, 100.0),
                // Complete at 600, released at once, but 300 ms of backend latency: backend-limited.
                // Plays 900..1000.
                sentence(2, 600.0, 600.0, 900.0, 900.0, 100.0),
                // Complete at 650, backend takes 100 ms, but held until 1000: release-limited.
                sentence(3, 650.0, 1000.0, 1100.0, 1100.0, 100.0),
                // Ready 2 ms after sentence 3 ends at 1200: jitter, not an underrun. Plays 1202..1302.
                sentence(4, 700.0, 700.0, 1202.0, 1202.0, 100.0),
                // In time: plays right after.
                sentence(5, 800.0, 800.0, 900.0, 900.0, 100.0),
            ],
            ..Default::default()
        };
        assert_eq!(causes(&t), Causes { text: 1, backend: 1, release: 1 });
        assert_eq!(t.derive().underruns, 3);
    }
}
