//! Binary delivery: each message is a frame of one type byte, a big-endian `u32` payload length and
//! the payload. Control payloads are JSON; an audio payload is the sentence index and the chunk's
//! sequence number (big-endian `u32` each) followed by raw PCM. A frame type this version does not
//! know is skipped whole; a frame that cannot be read is an error, never a guess. The type byte, not
//! the payload's first byte, says what a frame holds.

use bytes::{BufMut, Bytes, BytesMut};

use super::{AudioChunk, ProtocolError, ServerEvent};

/// The response's `Content-Type` (and the `Accept` that asks for binary delivery).
pub const CONTENT_TYPE: &str = "application/vnd.earshot.frames.v1";
/// The largest payload a frame may carry.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;
const HEADER: usize = 5;

/// Frame type bytes.
pub mod kind {
    /// A keep-alive: an empty payload.
    pub const KEEP_ALIVE: u8 = 0x00;
    /// `session`, as JSON.
    pub const SESSION: u8 = 0x01;
    /// `text`, as JSON.
    pub const TEXT: u8 = 0x02;
    /// `sentence`, as JSON.
    pub const SENTENCE: u8 = 0x03;
    /// `audio`: the sentence index and sequence number (`u32` BE each), then the audio bytes.
    pub const AUDIO: u8 = 0x04;
    /// `sentence_end`, as JSON.
    pub const SENTENCE_END: u8 = 0x05;
    /// `done`, as JSON.
    pub const DONE: u8 = 0x06;
    /// `error`, as JSON.
    pub const ERROR: u8 = 0x07;
    /// `words`, as JSON.
    pub const WORDS: u8 = 0x08;
}

fn type_byte(event: &ServerEvent) -> u8 {
    match event {
        ServerEvent::Session(_) => kind::SESSION,
        ServerEvent::Text(_) => kind::TEXT,
        ServerEvent::Sentence(_) => kind::SENTENCE,
        ServerEvent::Audio(_) => kind::AUDIO,
        ServerEvent::Words(_) => kind::WORDS,
        ServerEvent::SentenceEnd(_) => kind::SENTENCE_END,
        ServerEvent::Done(_) => kind::DONE,
        ServerEvent::Error(_) => kind::ERROR,
    }
}

fn type_name(byte: u8) -> Option<&'static str> {
    Some(match byte {
        kind::SESSION => "session",
        kind::TEXT => "text",
        kind::SENTENCE => "sentence",
        kind::AUDIO => "audio",
        kind::SENTENCE_END => "sentence_end",
        kind::DONE => "done",
        kind::ERROR => "error",
        kind::WORDS => "words",
        _ => return None,
    })
}

/// Encodes one message as a frame.
pub fn encode(event: &ServerEvent) -> Bytes {
    let mut out;
    match event {
        ServerEvent::Audio(a) => {
            out = BytesMut::with_capacity(HEADER + 8 + a.pcm.len());
            out.put_u8(kind::AUDIO);
            out.put_u32((8 + a.pcm.len()) as u32);
            out.put_u32(a.index);
            out.put_u32(a.seq);
            out.put_slice(&a.pcm);
        }
        other => {
            let json = other.control_json().expect("control message");
            out = BytesMut::with_capacity(HEADER + json.len());
            out.put_u8(type_byte(other));
            out.put_u32(json.len() as u32);
            out.put_slice(&json);
        }
    }
    out.freeze()
}

/// An empty frame of the keep-alive type.
pub fn keep_alive() -> Bytes {
    Bytes::from_static(&[kind::KEEP_ALIVE, 0, 0, 0, 0])
}

/// Reads frames incrementally, whatever the chunking.
#[derive(Default)]
pub struct BinaryDecoder {
    buf: BytesMut,
}

impl BinaryDecoder {
    /// Feeds bytes as they arrive; returns the messages of the frames they complete, skipping frames of
    /// a type this version does not know.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, ProtocolError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            if self.buf.len() < HEADER {
                break;
            }
            let ty = self.buf[0];
            let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
            if len > MAX_FRAME {
                return Err(ProtocolError::FrameTooLarge(len, MAX_FRAME));
            }
            if self.buf.len() < HEADER + len {
                break;
            }
            let frame = self.buf.split_to(HEADER + len).freeze();
            let payload = frame.slice(HEADER..);
            let Some(name) = type_name(ty) else { continue };
            let malformed = |detail: String| ProtocolError::Malformed { kind: name.into(), detail };
            if ty == kind::AUDIO {
                if payload.len() < 8 {
                    return Err(malformed(format!("audio payload of {} bytes has no header", payload.len())));
                }
                let index = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                let seq = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                out.push(ServerEvent::Audio(AudioChunk { index, seq, pcm: payload.slice(8..) }));
                continue;
            }
            match ServerEvent::from_control_json(name, &payload) {
                Some(Ok(event)) => out.push(event),
                Some(Err(e)) => return Err(malformed(e.to_string())),
                None => {}
            }
        }
        Ok(out)
    }

    /// Says whether the stream ended cleanly between frames.
    pub fn finish(&self) -> Result<(), ProtocolError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::Truncated)
        }
    }
}
