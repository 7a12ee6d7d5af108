//! The measurement contract: monotonic marks of one conversation, from the request's arrival.
//!
//! Every mark names the boundary it measures: when the agent's first token arrived, when each
//! sentence's text was complete, when it was released to speech, when the backend's first audio for
//! it came back, when its first audio left for the client. `done` carries the timeline to the client;
//! the gateway turns it into metrics.

use serde::{Deserialize, Serialize};

use crate::words::WordTiming;
use tokio::time::Instant;

/// Milliseconds since the request was received. Read from tokio's clock, so that under paused time
/// (tests) every mark is exact and the same on any machine; in production it is the monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose zero is now: started as the request is received.
    pub fn start() -> Self {
        Clock { origin: Instant::now() }
    }

    /// Milliseconds since the clock started.
    pub fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1000.0
    }
}

/// The marks of one sentence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SentenceMarks {
    /// The sentence's index in the answer, from 0.
    pub index: u32,
    /// The sentence's length, in characters.
    pub chars: usize,
    /// The segmenter released the sentence's text as complete.
    pub complete_ms: f64,
    /// The sentence was sent to the TTS backend (later than `complete_ms` only when buffered).
    pub released_ms: Option<f64>,
    /// The session was told the sentence before it was certain ([`crate::speech::SpeechCommand::Prepare`]:
    /// the answer's first sentence, once its full stop had come), and it was that sentence: a voice that
    /// started on it then began `complete_ms - prepared_ms` sooner. `None`: not prepared, or prepared
    /// otherwise and withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared_ms: Option<f64>,
    /// The backend's first audio for the sentence arrived.
    pub tts_first_audio_ms: Option<f64>,
    /// The sentence's first audio chunk was handed to the client connection.
    pub first_audio_sent_ms: Option<f64>,
    /// The backend finished the sentence.
    pub tts_done_ms: Option<f64>,
    /// Milliseconds of audio the sentence produced.
    pub audio_ms: f64,
    /// Audio chunks the backend gave for the sentence.
    pub audio_chunks: u32,
    /// Silences inside the sentence for the conversation's listener (see [`Timeline::note_audio_sent`]):
    /// a chunk handed to the client after the audio queued before it, earlier sentences' included, would
    /// have played out (by more than [`UNDERRUN_TOLERANCE_MS`]). The worst silence a listener hears: the
    /// voice stops mid-sentence.
    #[serde(default)]
    pub stalls: u32,
    /// Those silences together, in milliseconds.
    #[serde(default)]
    pub stall_ms: f64,
    /// How long the backend held the sentence's audio back so that it would play through rather than stop
    /// inside it (the Kokoro container's paced plan, when the machine is slower than real time); a busy
    /// endpoint's first sign. `None` when the backend does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_held_ms: Option<f64>,
    /// The backend's own time to the sentence's first audio, from reading the request (see
    /// [`crate::speech::FinishReport::own_first_audio_ms`]); `None` when the backend does not say.
    /// `tts_first_audio_ms - released_ms` less this is what the transport added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_own_first_audio_ms: Option<f64>,
    /// The sentence's audio came from the sentence cache: said before, not synthesized now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The sentence as written and its words as sent to the client: kept for the conversation's ending
    /// (what an interrupted listener heard, to the word), never sent in the timeline itself.
    #[serde(skip)]
    pub text: String,
    /// The sentence's words and when each is heard, as sent to the client in its `words` messages.
    #[serde(skip)]
    pub words: Vec<WordTiming>,
}

/// The conversation's listener, as the clients play: one clock from the answer's first audio, each chunk
/// starting when it arrives or when the audio queued before it (of any sentence) ends, whichever is later.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Listener {
    /// When the audio sent so far would have finished playing.
    pub until_ms: Option<f64>,
    /// The sentence of the last chunk sent.
    pub last_sentence: Option<u32>,
}

/// The timeline of one conversation. All times are milliseconds since the request was received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The backend that speaks the conversation (after a switch, the new one), as the metric lines and the
    /// `session` message say it.
    pub backend: String,
    /// The release policy: `incremental` or `buffered`.
    pub release: String,
    /// The TTS session was open (before the stream started).
    pub session_open_ms: Option<f64>,
    /// The agent's first text was read.
    pub first_agent_token_ms: Option<f64>,
    /// The agent finished its answer.
    pub agent_done_ms: Option<f64>,
    /// The agent's answer ended without its format's end marker (see `AgentEvent::DoneUnmarked`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_end_unmarked: bool,
    /// Time to first audio at the server: the first audio chunk handed to the client connection.
    pub first_audio_sent_ms: Option<f64>,
    /// The conversation finished.
    pub done_ms: Option<f64>,
    /// `audio` messages handed to the client.
    pub audio_chunks_sent: u32,
    /// Bytes of audio handed to the client, as sent: in the session's format (a μ-law answer is a byte
    /// a sample).
    pub audio_bytes_sent: u64,
    /// Milliseconds of audio handed to the client, every sentence's.
    #[serde(default)]
    pub audio_sent_ms: f64,
    /// Characters the backend billed, when it says (Polly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_characters: Option<u64>,
    /// The error that made the conversation fail over to `backend`, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover_from: Option<String>,
    /// The backend that was full when the conversation started here instead (`backend_reason: overflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow_from: Option<String>,
    /// The backend chosen first that could not speak the conversation's language
    /// (`backend_reason: language`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_from: Option<String>,
    /// The language the answer was spoken in, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Each sentence's marks, in index order.
    pub sentences: Vec<SentenceMarks>,
    /// Bookkeeping for the sentences' `stalls`.
    #[serde(skip)]
    pub listener: Listener,
}

/// A sentence starting this much after the previous one ended is not an underrun: that is the
/// jitter of passing a chunk along (a backend streaming at exactly real-time pace shows it), and a
/// player's scheduling absorbs it.
pub const UNDERRUN_TOLERANCE_MS: f64 = 5.0;

/// Figures derived from a timeline, as the metrics and benchmarks report them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// Time to first audio at the server.
    pub ttfa_ms: Option<f64>,
    /// Per sentence: backend first audio minus release.
    pub synthesis_latency_ms: Vec<f64>,
    /// Per sentence after the first: silence before it at real-time playback (0 when its audio was
    /// ready before the previous sentence finished playing).
    pub gaps_ms: Vec<f64>,
    /// Gaps longer than [`UNDERRUN_TOLERANCE_MS`].
    pub underruns: usize,
    /// Silences inside sentences (see [`SentenceMarks::stalls`]), counted apart from the gaps before them.
    #[serde(default)]
    pub stalls: usize,
    /// Those silences together, in milliseconds.
    #[serde(default)]
    pub stall_ms: f64,
    /// The underruns by cause: see [`UnderrunCauses`].
    #[serde(default)]
    pub underrun_causes: UnderrunCauses,
    /// What the backend held back so that sentences would play through (see
    /// [`SentenceMarks::backend_held_ms`]), summed; `None` when the backend says nothing of it.
    #[serde(default)]
    pub backend_held_ms: Option<f64>,
    /// Time to first audio minus the time the first sentence could have been released and the
    /// backend's own first-audio latency: what earshot itself added.
    pub orchestration_overhead_ms: Option<f64>,
}

/// Why each underrun happened. A sentence's audio is late when it is not there as the sentence before
/// it ends at real-time playback. It is *text-limited* when its text was not even complete by then
/// (the agent was still writing it: no gateway could have done better); *backend-limited* when the
/// text was complete in time but the backend's own latency for it, counted from its release, would
/// have made it late even if released the moment it was complete; *release-limited* otherwise: the
/// gateway held it (buffered release, the in-flight cap) or delivered it late.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnderrunCauses {
    /// Text-limited: the sentence's text was not yet complete when it was due.
    pub text: usize,
    /// Backend-limited: the backend's own latency would have made it late even if released at once.
    pub backend: usize,
    /// Release-limited: the gateway held it or delivered it late.
    pub release: usize,
}

impl Timeline {
    /// Sentences whose audio came from the sentence cache.
    pub fn cache_hits(&self) -> usize {
        self.sentences.iter().filter(|s| s.cached).count()
    }

    /// Characters of those sentences: what a backend that bills by the character did not bill.
    pub fn cached_characters(&self) -> u64 {
        self.sentences.iter().filter(|s| s.cached).map(|s| s.chars as u64).sum()
    }

    /// The marks of sentence `index`, to add to; `None` when the answer has no sentence of that index yet.
    pub fn sentence_mut(&mut self, index: u32) -> Option<&mut SentenceMarks> {
        self.sentences.iter_mut().find(|s| s.index == index)
    }

    /// Notes a chunk of sentence `index`, `duration_ms` long, handed to the client at `sent_ms`. The same
    /// listener as the clients' (the demo page's player and `earshot_client`'s `playback_silences`): a
    /// chunk that comes after everything queued before it has played out leaves a silence; inside a
    /// sentence (the chunk before it was the same sentence's) that silence is a stall of the sentence,
    /// before a sentence it is a gap ([`Derived::gaps_ms`]). Audio of earlier sentences still queued
    /// ahead counts: a chunk that is late for its own sentence's start may be on time for the listener.
    pub fn note_audio_sent(&mut self, index: u32, sent_ms: f64, duration_ms: f64) {
        let inside = self.listener.last_sentence == Some(index);
        let start = match self.listener.until_ms {
            None => sent_ms,
            Some(until) => {
                let silence = sent_ms - until;
                if inside && silence > UNDERRUN_TOLERANCE_MS {
                    if let Some(marks) = self.sentence_mut(index) {
                        marks.stalls += 1;
                        marks.stall_ms += silence;
                    }
                }
                sent_ms.max(until)
            }
        };
        self.listener = Listener { until_ms: Some(start + duration_ms), last_sentence: Some(index) };
        self.audio_sent_ms += duration_ms;
    }

    /// Of the audio handed to the client, what its listener had heard by `at_ms` at real-time playback:
    /// all of it less what was still queued ahead of them then. For a conversation stopped at `at_ms`
    /// whose client stops playing (an interrupt, a client that left), this is how much was heard.
    pub fn heard_by_ms(&self, at_ms: f64) -> f64 {
        let queued = self.listener.until_ms.map_or(0.0, |until| (until - at_ms).max(0.0));
        (self.audio_sent_ms - queued).max(0.0)
    }

    /// The figures the metrics and benchmarks report, derived from these marks.
    pub fn derive(&self) -> Derived {
        let mut d = Derived { ttfa_ms: self.first_audio_sent_ms, ..Default::default() };
        d.stalls = self.sentences.iter().map(|s| s.stalls as usize).sum();
        d.stall_ms = self.sentences.iter().map(|s| s.stall_ms).sum();
        d.backend_held_ms = self.sentences.iter().filter_map(|s| s.backend_held_ms).reduce(|a, b| a + b);
        for s in &self.sentences {
            if let (Some(first), Some(released)) = (s.tts_first_audio_ms, s.released_ms) {
                d.synthesis_latency_ms.push(first - released);
            }
        }
        // Simulated real-time playback: each sentence starts when its audio is there and the one
        // before it has finished playing, and plays for its audio and the stalls inside it.
        let heard: Vec<&SentenceMarks> = self.sentences.iter().filter(|s| s.first_audio_sent_ms.is_some()).collect();
        let played = crate::playback::play(heard.iter().map(|s| (s.first_audio_sent_ms.unwrap_or_default(), s.audio_ms + s.stall_ms)));
        for (s, p) in heard.iter().zip(&played) {
            let Some(gap) = p.gap_ms else { continue };
            d.gaps_ms.push(gap);
            if gap <= UNDERRUN_TOLERANCE_MS {
                continue;
            }
            d.underruns += 1;
            // When the sentence before it finished playing.
            let end = p.ready_ms - gap;
            let latency = match (s.tts_first_audio_ms, s.released_ms) {
                (Some(first), Some(released)) => first - released,
                _ => 0.0,
            };
            let cause = if s.complete_ms >= end {
                &mut d.underrun_causes.text
            } else if s.complete_ms + latency >= end {
                &mut d.underrun_causes.backend
            } else {
                &mut d.underrun_causes.release
            };
            *cause += 1;
        }
        if let Some(first) = self.sentences.first() {
            if let (Some(sent), Some(tts_first), Some(released)) = (first.first_audio_sent_ms, first.tts_first_audio_ms, first.released_ms) {
                let eligible =
                    if self.release == "buffered" { first.complete_ms.max(self.agent_done_ms.unwrap_or(first.complete_ms)) } else { first.complete_ms };
                d.orchestration_overhead_ms = Some((sent - tts_first) + (released - eligible));
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(index: u32, complete: f64, released: f64, first: f64, sent: f64, audio: f64) -> SentenceMarks {
        SentenceMarks {
            index,
            chars: 10,
            complete_ms: complete,
            released_ms: Some(released),
            tts_first_audio_ms: Some(first),
            first_audio_sent_ms: Some(sent),
            tts_done_ms: None,
            audio_ms: audio,
            audio_chunks: 1,
            ..Default::default()
        }
    }

    #[test]
    fn derives_latency_gaps_and_overhead() {
        let t = Timeline {
            release: "incremental".into(),
            first_audio_sent_ms: Some(501.0),
            sentences: vec![
                sentence(0, 100.0, 100.5, 500.0, 501.0, 1000.0),
                sentence(1, 300.0, 300.0, 900.0, 901.0, 500.0),
                sentence(2, 400.0, 400.0, 2200.0, 2201.0, 500.0),
                // Ready 3 ms after sentence 2 ends at 2701: jitter, not an underrun.
                sentence(3, 500.0, 500.0, 2703.0, 2704.0, 100.0),
            ],
            ..Default::default()
        };
        let d = t.derive();
        assert_eq!(d.synthesis_latency_ms, vec![399.5, 600.0, 1800.0, 2203.0]);
        // Sentence 1 was ready at 901, before sentence 0 ended at 1501; sentence 2 came 200 ms late.
        assert_eq!(d.gaps_ms, vec![0.0, 200.0, 3.0]);
        assert_eq!(d.underruns, 1);
        assert_eq!(d.orchestration_overhead_ms, Some(1.5));
    }

    #[test]
    fn what_was_heard_by_a_moment_is_the_audio_sent_less_what_was_still_queued() {
        let mut t = Timeline { sentences: vec![SentenceMarks { index: 0, ..Default::default() }], ..Default::default() };
        assert_eq!(t.heard_by_ms(1000.0), 0.0, "nothing sent, nothing heard");
        // Two seconds of audio handed over at once at 100 ms: playing until 2100.
        t.note_audio_sent(0, 100.0, 1000.0);
        t.note_audio_sent(0, 100.0, 1000.0);
        assert_eq!(t.audio_sent_ms, 2000.0);
        assert_eq!(t.heard_by_ms(600.0), 500.0);
        assert_eq!(t.heard_by_ms(5000.0), 2000.0, "all of it once it has played out");
    }

    #[test]
    fn stalls_are_counted_by_one_listener_with_earlier_audio_queued_ahead() {
        let mut t = Timeline { sentences: vec![sentence(0, 0.0, 0.0, 0.0, 0.0, 0.0), sentence(1, 0.0, 0.0, 100.0, 100.0, 0.0)], ..Default::default() };
        // Sentence 0 plays 0..1000. Sentence 1's first chunk arrives at 100 and waits; it plays 1000..1500.
        t.note_audio_sent(0, 0.0, 1000.0);
        t.note_audio_sent(1, 100.0, 500.0);
        // Its second chunk arrives at 1200: late for a clock started at the sentence's own first audio
        // (100 + 500), on time for the listener, who is still hearing it until 1500.
        t.note_audio_sent(1, 1200.0, 200.0);
        assert_eq!((t.sentences[1].stalls, t.sentences[1].stall_ms), (0, 0.0));
        // Its third arrives at 1800, 100 ms after the listener ran out at 1700: a stall.
        t.note_audio_sent(1, 1800.0, 100.0);
        assert_eq!((t.sentences[1].stalls, t.sentences[1].stall_ms), (1, 100.0));
        // A late first chunk of a sentence is a gap before it, never a stall inside it.
        t.sentences.push(sentence(2, 0.0, 0.0, 2500.0, 2500.0, 0.0));
        t.note_audio_sent(2, 2500.0, 100.0);
        assert_eq!(t.sentences[2].stalls, 0);
        t.sentences[0].audio_ms = 1000.0;
        t.sentences[1].audio_ms = 800.0;
        t.sentences[1].stall_ms = 100.0;
        t.sentences[2].audio_ms = 100.0;
        // Sentence 1 plays 1000..1900 (800 ms of audio and 100 of stall); sentence 2 comes 600 ms after.
        assert_eq!(t.derive().gaps_ms, vec![0.0, 600.0]);
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
        let d = t.derive();
        assert_eq!(d.underrun_causes, UnderrunCauses { text: 1, backend: 1, release: 1 });
        assert_eq!(d.underruns, 3);
    }
}
