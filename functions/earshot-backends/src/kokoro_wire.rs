//! The Kokoro container's messages, version 1 (see `infra/kokoro/PROTOCOL.md`): JSON control messages
//! in text frames, audio in binary frames that name their request. Shared by every transport that
//! reaches the container (a direct WebSocket here, SageMaker's bidirectional stream elsewhere).

use bytes::Bytes;
use earshot_core::language::Language;
use earshot_core::protocol::WordTiming;
use serde::Deserialize;

/// The kind byte of an audio frame; other kinds are reserved and skipped.
pub const AUDIO_KIND: u8 = 0x01;

/// `synthesize`, as JSON, asking for word timings (a container that predates them ignores the field).
pub fn synthesize(request_id: &str, text: &str, voice: &str, language: Option<&Language>, speed: f32) -> String {
    let mut message = serde_json::json!({"type": "synthesize", "v": 1, "request_id": request_id, "text": text, "voice": voice, "speed": speed, "words": true});
    if let Some(language) = language {
        message["language"] = serde_json::Value::from(language.as_str());
    }
    message.to_string()
}

/// `cancel`, as JSON.
pub fn cancel(request_id: &str) -> String {
    serde_json::json!({"type": "cancel", "v": 1, "request_id": request_id}).to_string()
}

/// `close`, as JSON.
pub fn close() -> String {
    serde_json::json!({"type": "close", "v": 1}).to_string()
}

/// A control message from the container.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ControlMessage {
    /// A request begins synthesis: its audio frames follow.
    Start {
        /// The request's id, as `synthesize` gave it.
        request_id: String,
        /// The rate of the request's PCM in Hz (24,000).
        sample_rate: u32,
    },
    /// The request's last audio frame has been sent.
    End {
        /// The request's id, as `synthesize` gave it.
        request_id: String,
        /// Seconds the container held the request's audio back so that it would play through (absent
        /// from containers older than the paced piece plan).
        #[serde(default)]
        held_seconds: Option<f64>,
        /// The container's time from the request leaving its queue to the first audio frame, and the
        /// time it waited in the queue before that (absent from older containers).
        #[serde(default)]
        first_audio_seconds: Option<f64>,
        /// Seconds the request waited in the container's queue before synthesis began (absent from older
        /// containers).
        #[serde(default)]
        queued_seconds: Option<f64>,
    },
    /// When each word of the piece whose audio follows is heard, from the request's first sample.
    Words {
        /// The request's id, as `synthesize` gave it.
        request_id: String,
        /// The piece's words in order, timed in milliseconds from the request's first sample.
        words: Vec<WordTiming>,
    },
    /// A request was cancelled: no audio of it follows.
    Cancelled {
        /// The request's id, as `synthesize` and `cancel` gave it.
        request_id: String,
        /// Whether the request was still queued or running when the `cancel` came (`false`: it had
        /// finished, or never was: nothing was stopped). Absent from containers before protocol 1.1.
        #[serde(default)]
        live: Option<bool>,
    },
    /// A request, or a message, was refused or failed; the connection stays usable.
    Error {
        /// The error's code (`unknown_voice`, `unsupported_script`, `queue_full`, …).
        code: String,
        /// What went wrong, in words.
        message: String,
        /// The request the error is about, when the message had a readable id.
        request_id: Option<String>,
    },
    /// The session is over: every queued request has finished after `close`.
    Closed {},
    /// The container is stopping: it serves the requests it has to their end, within `seconds`, and takes no
    /// new session (protocol 1.2).
    Draining {
        /// How long it serves at most.
        #[serde(default)]
        seconds: Option<f64>,
    },
    /// A message of a type this version does not know (a later version's), skipped.
    #[serde(other)]
    Unknown,
}

/// Reads a control message from a text frame's JSON.
pub fn parse_control(text: &str) -> Result<ControlMessage, String> {
    serde_json::from_str(text).map_err(|e| format!("unreadable control message from the container: {e}"))
}

/// An audio frame from the container.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioFrame {
    /// The id of the request whose audio this is.
    pub request_id: String,
    /// The frame's place in its request's audio: 0, 1, 2, …
    pub seq: u32,
    /// The audio: signed 16-bit little-endian mono PCM at the `Start` message's sample rate.
    pub pcm: Bytes,
}

/// Parses a binary frame: `Ok(None)` for a reserved kind (to be skipped), `Err` for a frame that
/// cannot be read.
pub fn parse_audio(frame: Bytes) -> Result<Option<AudioFrame>, String> {
    let Some(&kind) = frame.first() else { return Err("empty binary frame".into()) };
    if kind != AUDIO_KIND {
        return Ok(None);
    }
    let id_len = *frame.get(1).ok_or("audio frame without a request id length")? as usize;
    if id_len == 0 || frame.len() < 2 + id_len + 4 {
        return Err(format!("audio frame of {} bytes is too short for its header", frame.len()));
    }
    let request_id = std::str::from_utf8(&frame[2..2 + id_len]).map_err(|_| "audio frame request id is not UTF-8")?.to_string();
    let s = 2 + id_len;
    let seq = u32::from_be_bytes([frame[s], frame[s + 1], frame[s + 2], frame[s + 3]]);
    let pcm = frame.slice(s + 4..);
    if !pcm.len().is_multiple_of(2) {
        return Err("audio frame holds an odd number of bytes".into());
    }
    Ok(Some(AudioFrame { request_id, seq, pcm }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_example_frame() {
        let frame = Bytes::from_static(&[0x01, 0x02, b'r', b'1', 0, 0, 0, 0, 1, 0, 2, 0]);
        let audio = parse_audio(frame).unwrap().unwrap();
        assert_eq!(audio.request_id, "r1");
        assert_eq!(audio.seq, 0);
        assert_eq!(&audio.pcm[..], &[1, 0, 2, 0]);
    }

    #[test]
    fn skips_reserved_kinds_and_rejects_broken_frames() {
        assert_eq!(parse_audio(Bytes::from_static(&[0x02, 9, 9])).unwrap(), None);
        assert!(parse_audio(Bytes::from_static(&[0x01, 5, b'a'])).is_err());
        assert!(parse_audio(Bytes::new()).is_err());
    }

    #[test]
    fn reads_control_messages() {
        assert_eq!(
            parse_control(r#"{"type":"end","v":1,"request_id":"s0","samples":3}"#).unwrap(),
            ControlMessage::End { request_id: "s0".into(), held_seconds: None, first_audio_seconds: None, queued_seconds: None }
        );
        assert_eq!(
            parse_control(
                r#"{"type":"end","v":1,"request_id":"s1","samples":3,"stalls":0,"held_seconds":0.25,"first_audio_seconds":0.2,"queued_seconds":0.5}"#
            )
            .unwrap(),
            ControlMessage::End { request_id: "s1".into(), held_seconds: Some(0.25), first_audio_seconds: Some(0.2), queued_seconds: Some(0.5) }
        );
        assert_eq!(
            parse_control(r#"{"type":"words","v":1,"request_id":"s2","words":[{"text":"Hello","start_ms":90.0,"end_ms":440.0}]}"#).unwrap(),
            ControlMessage::Words { request_id: "s2".into(), words: vec![WordTiming { text: "Hello".into(), start_ms: 90.0, end_ms: 440.0 }] }
        );
        assert_eq!(parse_control(r#"{"type":"later","v":2}"#).unwrap(), ControlMessage::Unknown);
        assert!(parse_control("{").is_err());
    }
}
