//! SageMaker's response stream as AWS documents it, back into the container's messages.
//!
//! A `PayloadPart` is not a message: its `CompletionState` header says `PARTIAL` (more of the same message
//! follows) or `COMPLETE` (the message ends here), so a message the platform relays from the container's
//! WebSocket may arrive in several parts, to be joined in order before anything reads it. The `DataType`
//! header (`UTF8` or `BINARY`) is optional in the API reference, and AWS's own WebSocket bridge samples send
//! text as bytes, so it is not trusted either: a message is told apart by its own framing, which the
//! container's protocol (infra/kokoro/PROTOCOL.md) fixes: a control message is a JSON object (its first byte
//! `{`), an audio frame begins with its kind byte (`0x01`, never `{`). A part with no `CompletionState` is
//! taken as complete, as a stream that never splits would send it.
//!
//! Written by hand rather than taken from a crate: no crate reassembles these parts, and the rule is the
//! dozen lines below. What one message may hold is capped ([`MOST_MESSAGE_BYTES`]), since the parts' count
//! comes from the other side.

use bytes::{Bytes, BytesMut};
use earshot_backends::container_session::{Frame, TransportError};

/// The most bytes one message may hold, joined: an audio piece is a clause of at most 510 phonemes (about
/// 30 s, 1.4 MB of 24 kHz 16-bit audio), so this leaves room and still bounds a stream that never completes.
pub const MOST_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Parts joined until their message is complete.
#[derive(Default)]
pub struct PartJoiner {
    pending: BytesMut,
}

impl PartJoiner {
    /// Takes one part: the message it completes, or `None` while the message goes on.
    pub fn push(&mut self, completion_state: Option<&str>, bytes: &[u8]) -> Result<Option<Frame>, TransportError> {
        if self.pending.len() + bytes.len() > MOST_MESSAGE_BYTES {
            return Err(TransportError::new("backend_protocol", format!("a SageMaker message grew past {MOST_MESSAGE_BYTES} bytes without completing"), false));
        }
        self.pending.extend_from_slice(bytes);
        match completion_state {
            Some("PARTIAL") => Ok(None),
            Some("COMPLETE") | None => message(self.pending.split().freeze()).map(Some),
            Some(other) => Err(TransportError::new("backend_protocol", format!("a SageMaker part's CompletionState is `{other}`"), false)),
        }
    }

    /// Whether a message was begun and not completed (a stream that ends so has lost it).
    pub fn is_midway(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// A whole message, by its own framing: JSON for control, anything else audio (the container session reads
/// the audio frame's kind byte and skips kinds it does not know).
pub fn message(bytes: Bytes) -> Result<Frame, TransportError> {
    if bytes.first() != Some(&b'{') {
        return Ok(Frame::Binary(bytes));
    }
    String::from_utf8(bytes.to_vec())
        .map(Frame::Text)
        .map_err(|_| TransportError::new("backend_protocol", "a control message from the container is not UTF-8", false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(frame: Option<Frame>) -> &'static str {
        match frame {
            Some(Frame::Text(_)) => "message",
            Some(Frame::Binary(_)) => "audio",
            None => "midway",
        }
    }

    #[test]
    fn a_message_is_told_apart_by_its_own_framing() {
        let mut joiner = PartJoiner::default();
        let end = br#"{"type": "end", "id": "s1", "first_audio_seconds": 0.08}"#;
        assert_eq!(kind(joiner.push(Some("COMPLETE"), end).unwrap()), "message");
        assert_eq!(kind(joiner.push(None, end).unwrap()), "message", "no CompletionState: whole");
        // Audio whose samples happen to hold `{` is still audio: its first byte is the kind byte.
        assert_eq!(kind(joiner.push(None, &[0x01, 0x02, b's', b'1', 0, 0, 0, 0, 0x7B, 0x22]).unwrap()), "audio");
        assert_eq!(kind(joiner.push(None, &[0x02, 0x00]).unwrap()), "audio", "a reserved kind goes on to the session, which skips it");
        assert!(joiner.push(None, &[b'{', 0xFF, 0xFE]).is_err(), "JSON that is not UTF-8");
        assert!(joiner.push(Some("ALMOST"), b"{}").is_err());
    }

    #[test]
    fn partial_parts_are_joined_into_their_message_wherever_they_are_cut() {
        let text = r#"{"type": "words", "id": "s1", "words": [{"word": "café", "start": 0.1}]}"#.as_bytes();
        let audio: Vec<u8> = [0x01, 0x02, b's', b'1', 0, 0, 0, 1].into_iter().chain((0..=255u8).cycle().take(4800)).collect();
        for whole in [text, &audio[..]] {
            for cut in [1, 2, whole.len() / 3, whole.len() - 1] {
                let mut joiner = PartJoiner::default();
                assert!(joiner.push(Some("PARTIAL"), &whole[..cut]).unwrap().is_none());
                assert!(joiner.is_midway());
                let frame = joiner.push(Some("COMPLETE"), &whole[cut..]).unwrap().expect("the message");
                let joined = match frame {
                    Frame::Text(t) => t.into_bytes(),
                    Frame::Binary(b) => b.to_vec(),
                };
                assert_eq!(joined, whole, "cut at {cut}");
                assert!(!joiner.is_midway());
            }
        }
    }

    #[test]
    fn a_message_that_never_completes_is_bounded() {
        let mut joiner = PartJoiner::default();
        let part = vec![0x01; 1024 * 1024];
        let mut refused = false;
        for _ in 0..9 {
            match joiner.push(Some("PARTIAL"), &part) {
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.code, "backend_protocol");
                    refused = true;
                    break;
                }
            }
        }
        assert!(refused, "past {MOST_MESSAGE_BYTES} bytes the stream is refused");
    }
}
