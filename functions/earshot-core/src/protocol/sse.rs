//! Server-Sent Events delivery: `event: TYPE`, `data: JSON`, a blank line. Audio is base64 in the
//! JSON (`{"index":0,"seq":0,"data":"…"}`). Comments (`: keep-alive`) keep idle connections open.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{AudioChunk, ProtocolError, ServerEvent};

/// The response's `Content-Type`.
pub const CONTENT_TYPE: &str = "text/event-stream";

#[derive(Serialize, Deserialize)]
struct AudioJson {
    index: u32,
    seq: u32,
    data: String,
}

/// Encodes one message.
pub fn encode(event: &ServerEvent) -> Bytes {
    let data = match event {
        ServerEvent::Audio(a) => serde_json::to_vec(&AudioJson { index: a.index, seq: a.seq, data: BASE64.encode(&a.pcm) }).expect("audio JSON"),
        other => other.control_json().expect("control message"),
    };
    let mut out = Vec::with_capacity(data.len() + 32);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.kind().as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// A comment line that keeps the connection alive and is ignored by every client.
pub fn keep_alive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// Parses SSE incrementally: lines may end in `\n`, `\r\n` or `\r`, and may be split anywhere.
#[derive(Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The last byte was `\r`, so a following `\n` belongs to the same line ending.
    after_cr: bool,
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
}

impl SseDecoder {
    /// Feeds bytes as they arrive; returns the messages they complete, skipping comments and messages
    /// without an `event:` line or of a type this version does not know.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, ProtocolError> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line)? {
                        out.push(event);
                    }
                }
                _ => self.line.push(b),
            }
        }
        Ok(out)
    }

    /// Says whether the stream ended cleanly between messages.
    pub fn finish(&self) -> Result<(), ProtocolError> {
        if self.line.is_empty() && !self.has_data && self.event.is_none() {
            Ok(())
        } else {
            Err(ProtocolError::Truncated)
        }
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<ServerEvent>, ProtocolError> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Result<Option<ServerEvent>, ProtocolError> {
        let kind = self.event.take().unwrap_or_else(|| "message".into());
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return Ok(None);
        }
        let malformed = |detail: String| ProtocolError::Malformed { kind: kind.clone(), detail };
        if kind == "audio" {
            let json: AudioJson = serde_json::from_slice(&data).map_err(|e| malformed(e.to_string()))?;
            let pcm = BASE64.decode(json.data.as_bytes()).map_err(|e| malformed(e.to_string()))?;
            return Ok(Some(ServerEvent::Audio(AudioChunk { index: json.index, seq: json.seq, pcm: Bytes::from(pcm) })));
        }
        match ServerEvent::from_control_json(&kind, &data) {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(event)),
            Some(Err(e)) => Err(malformed(e.to_string())),
        }
    }
}
