//! The messages of a conversation, as typed values.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::language::{Language, LanguageSource};
use crate::timeline::Timeline;
pub use crate::words::WordTiming;

/// The protocol version carried by every `session` message.
pub const PROTOCOL_VERSION: u32 = 1;

/// The audio of a conversation: its encoding (`pcm_s16le`: PCM, little-endian signed 16-bit, interleaved
/// channels; `mulaw` and `alaw`: G.711, a byte a sample; `ogg_opus`: Ogg Opus, whole pages in each
/// audio message), rate and channels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AudioFormat {
    /// How the bytes encode the audio: `pcm_s16le`, `mulaw`, `alaw`, `ogg_opus`, `mp3`, `aac_adts` or `flac`.
    pub encoding: String,
    /// Samples a second of each channel, in Hz.
    pub sample_rate: u32,
    /// The number of channels (1: earshot's audio is mono).
    pub channels: u16,
}

impl AudioFormat {
    /// The `encoding` of PCM, signed 16-bit little-endian.
    pub const PCM_S16LE: &'static str = "pcm_s16le";
    /// The `encoding` of G.711 μ-law.
    pub const MULAW: &'static str = "mulaw";
    /// The `encoding` of G.711 A-law.
    pub const ALAW: &'static str = "alaw";
    /// The `encoding` of Ogg Opus (RFC 7845): each audio message is whole Ogg pages, the first holds the
    /// headers, and the answer's messages joined in order are one Ogg Opus stream.
    pub const OGG_OPUS: &'static str = "ogg_opus";
    /// The `encoding` of MP3 (MPEG Layer III): each audio message is whole frames.
    pub const MP3: &'static str = "mp3";
    /// The `encoding` of AAC-LC in ADTS frames: each audio message is whole frames.
    pub const AAC_ADTS: &'static str = "aac_adts";
    /// The `encoding` of FLAC: the first audio message starts with the stream's header, each holds whole frames.
    pub const FLAC: &'static str = "flac";

    /// Mono PCM, signed 16-bit little-endian, at `sample_rate` Hz.
    pub fn pcm_s16le(sample_rate: u32) -> Self {
        AudioFormat { encoding: Self::PCM_S16LE.into(), sample_rate, channels: 1 }
    }

    /// Bytes per sample of one channel: 1 for G.711, 2 for PCM; 1 for a compressed format, whose bytes
    /// are not samples (any count is whole).
    pub fn bytes_per_sample(&self) -> usize {
        match self.encoding.as_str() {
            Self::MULAW | Self::ALAW | Self::OGG_OPUS | Self::MP3 | Self::AAC_ADTS | Self::FLAC => 1,
            _ => 2,
        }
    }

    /// Whether the bytes are compressed (their count says nothing of the audio's length).
    pub fn is_compressed(&self) -> bool {
        matches!(self.encoding.as_str(), Self::OGG_OPUS | Self::MP3 | Self::AAC_ADTS | Self::FLAC)
    }

    /// Milliseconds of audio in `bytes` of it (not for a compressed format: see
    /// [`is_compressed`](Self::is_compressed)).
    pub fn duration_ms(&self, bytes: usize) -> f64 {
        let frames = bytes as f64 / (self.bytes_per_sample() as f64 * self.channels.max(1) as f64);
        frames * 1000.0 / self.sample_rate.max(1) as f64
    }
}

/// Why a backend speaks a conversation, as the `session` message and the response headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendReason {
    /// The request named it.
    Request,
    /// The gateway's default backend.
    Default,
    /// The A/B split chose it.
    Ab,
    /// The backend chosen first could not open, or failed before any audio.
    Failover,
    /// The backend chosen first was full (`busy`), and the conversation spilled over to this one.
    Overflow,
    /// The backend chosen first cannot speak the conversation's language; this one can.
    Language,
    /// A reason this client does not know (a newer server's).
    #[serde(other)]
    Unknown,
}

impl BackendReason {
    /// The reason as the wire writes it (`request`, `default`, `ab`, `failover`, `overflow`, `language`).
    pub fn as_str(self) -> &'static str {
        match self {
            BackendReason::Request => "request",
            BackendReason::Default => "default",
            BackendReason::Ab => "ab",
            BackendReason::Failover => "failover",
            BackendReason::Overflow => "overflow",
            BackendReason::Language => "language",
            BackendReason::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for BackendReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first message: who answers, how, and in what audio format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The protocol version ([`PROTOCOL_VERSION`]); a client that does not know it stops.
    pub v: u32,
    /// The conversation's id: the request's `conversation_id`, or the one generated when it gave none.
    pub conversation_id: String,
    /// This request's id, which the gateway's log and its error messages name.
    pub request_id: String,
    /// The backend that speaks the answer.
    pub backend: String,
    /// Why this backend.
    pub backend_reason: BackendReason,
    /// The A/B arm the split assigned, also when another backend speaks (overflow, failover):
    /// `backend` says which speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// The A/B experiment the arm belongs to, with the arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// When sentences go to speech: `incremental` (each as soon as it is complete) or `buffered` (once
    /// the agent has finished).
    pub release: String,
    /// The backend's voice the answer is spoken in.
    pub voice: String,
    /// The language the answer is spoken in, where known: the request's, or detected
    /// (`language_source` says which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// Where the language came from: `request` (the request named it) or `detected`; present with
    /// `language`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_source: Option<LanguageSource>,
    /// The format of every `audio` message from here on.
    pub audio: AudioFormat,
}

/// Agent text as it arrives, for captions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDelta {
    /// The agent's text since the last `text` message, as it came (it may hold Markdown).
    pub text: String,
}

/// A sentence released to speech.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentenceText {
    /// The sentence's index in the answer, from 0.
    pub index: u32,
    /// The sentence as it is spoken: speakable text, Markdown removed.
    pub text: String,
}

/// A piece of a sentence's audio. `seq` counts a sentence's chunks from 0.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioChunk {
    /// The index of the sentence it belongs to.
    pub index: u32,
    /// Its place among the sentence's chunks, from 0.
    pub seq: u32,
    /// The audio bytes, in the session's format (base64 in SSE's `data`; raw in a binary frame).
    pub pcm: Bytes,
}

/// The end of a sentence's audio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentenceEnd {
    /// The index of the sentence whose audio is complete.
    pub index: u32,
    /// Milliseconds of audio the sentence produced.
    pub audio_ms: f64,
    /// The sentence was said before: its audio came from the sentence cache (absent: synthesized now).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The voice could not speak the sentence and passed over it (`unsupported_script`: its letters
    /// are in a script the voice does not read); the answer goes on with the next. Absent: spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// How a sentence's word timings were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingSource {
    /// By the voice's own model (the Kokoro container's durations): exact to its frames.
    Model,
    /// From the sentence's audio, by earshot (a voice that gives none, or a sentence from the cache).
    Estimated,
    /// A source this client does not know (a newer server's).
    #[serde(other)]
    Unknown,
}

/// Some of a sentence's words and when each is heard: before the audio they end in (model timings, a
/// message per piece) or once its audio is complete, before its `sentence_end` (estimated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentenceWords {
    /// The index of the sentence the words belong to.
    pub index: u32,
    /// Who timed them: the voice's model, or earshot's estimate.
    pub timing: TimingSource,
    /// The words, in order, each with its start and end in milliseconds from the sentence's first sample.
    pub words: Vec<WordTiming>,
}

/// The end of the conversation, with its timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// The conversation's marks and totals, in milliseconds from the request's arrival.
    pub timeline: Timeline,
}

/// A failure. After an `error` the stream ends.
pub type ErrorInfo = crate::error::Error;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// `session`: the first message (again after a switch of backend before any audio).
    Session(SessionInfo),
    /// `text`: agent text as it arrives.
    Text(TextDelta),
    /// `sentence`: a sentence released to speech.
    Sentence(SentenceText),
    /// `audio`: a piece of a sentence's audio.
    Audio(AudioChunk),
    /// `words`: when some of a sentence's words are heard.
    Words(SentenceWords),
    /// `sentence_end`: a sentence's audio is complete.
    SentenceEnd(SentenceEnd),
    /// `done`: the conversation ended, with its timeline.
    Done(Done),
    /// `error`: a failure after the stream started; the stream ends.
    Error(ErrorInfo),
}

impl ServerEvent {
    /// The message's type name, as SSE's `event:` field carries it.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerEvent::Session(_) => "session",
            ServerEvent::Text(_) => "text",
            ServerEvent::Sentence(_) => "sentence",
            ServerEvent::Audio(_) => "audio",
            ServerEvent::Words(_) => "words",
            ServerEvent::SentenceEnd(_) => "sentence_end",
            ServerEvent::Done(_) => "done",
            ServerEvent::Error(_) => "error",
        }
    }

    /// The JSON body of a control message (everything but audio).
    pub(crate) fn control_json(&self) -> Option<Vec<u8>> {
        let json = match self {
            ServerEvent::Session(m) => serde_json::to_vec(m),
            ServerEvent::Text(m) => serde_json::to_vec(m),
            ServerEvent::Sentence(m) => serde_json::to_vec(m),
            ServerEvent::Words(m) => serde_json::to_vec(m),
            ServerEvent::SentenceEnd(m) => serde_json::to_vec(m),
            ServerEvent::Done(m) => serde_json::to_vec(m),
            ServerEvent::Error(m) => serde_json::to_vec(m),
            ServerEvent::Audio(_) => return None,
        };
        Some(json.expect("protocol messages always serialise"))
    }

    /// Parses a control message's JSON body, given its type. `None` for a type this version does not
    /// know (to be skipped).
    pub(crate) fn from_control_json(kind: &str, json: &[u8]) -> Option<Result<Self, serde_json::Error>> {
        Some(match kind {
            "session" => serde_json::from_slice(json).map(ServerEvent::Session),
            "text" => serde_json::from_slice(json).map(ServerEvent::Text),
            "sentence" => serde_json::from_slice(json).map(ServerEvent::Sentence),
            "words" => serde_json::from_slice(json).map(ServerEvent::Words),
            "sentence_end" => serde_json::from_slice(json).map(ServerEvent::SentenceEnd),
            "done" => serde_json::from_slice(json).map(ServerEvent::Done),
            "error" => serde_json::from_slice(json).map(ServerEvent::Error),
            _ => return None,
        })
    }
}
