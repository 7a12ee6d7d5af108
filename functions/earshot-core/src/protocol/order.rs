//! The protocol's ordering rules (`docs/protocol.md`, "Messages") as one checker: every test that
//! checks a stream uses it (the scheduler's virtual-time suites, the end-to-end suites), and a client
//! may use it to verify what a server sent.

use std::collections::HashMap;

use super::ServerEvent;

/// Checks `events` (a whole stream, or a prefix of one) against the ordering the protocol promises;
/// returns the first rule broken. A stream that ends without `done` or `error` is not a break here
/// (a client that left reads a prefix); whether it had to end with one is the caller's to say.
pub fn check_order(events: &[ServerEvent]) -> Result<(), String> {
    let mut announced: u32 = 0;
    let mut ended: u32 = 0;
    let mut next_seq: HashMap<u32, u32> = HashMap::new();
    let mut audio_seen = false;
    // A whole sample's bytes in the session's format (PCM 2, G.711 1).
    let mut sample_bytes = 2;
    // Where each sentence's last word ended: words never go back or overlap.
    let mut words_end: HashMap<u32, f64> = HashMap::new();
    for (i, event) in events.iter().enumerate() {
        let last = i + 1 == events.len();
        match event {
            _ if i == 0 && !matches!(event, ServerEvent::Session(_)) => return Err(format!("event 0: `{}` before `session`", event.kind())),
            ServerEvent::Session(_) if audio_seen => return Err(format!("event {i}: a second `session` after audio")),
            ServerEvent::Session(s) => sample_bytes = s.audio.bytes_per_sample() * s.audio.channels.max(1) as usize,
            ServerEvent::Text(_) => {}
            ServerEvent::Sentence(s) => {
                if s.index != announced {
                    return Err(format!("event {i}: sentence {} announced, expected {announced}", s.index));
                }
                announced += 1;
            }
            ServerEvent::Audio(a) => {
                audio_seen = true;
                if a.index >= announced {
                    return Err(format!("event {i}: audio for sentence {} before its `sentence`", a.index));
                }
                if a.index < ended {
                    return Err(format!("event {i}: audio for sentence {} after its `sentence_end`", a.index));
                }
                if a.index > ended {
                    return Err(format!("event {i}: audio for sentence {} before sentence {ended} ended", a.index));
                }
                let seq = next_seq.entry(a.index).or_insert(0);
                if a.seq != *seq {
                    return Err(format!("event {i}: audio seq {} of sentence {}, expected {seq}", a.seq, a.index));
                }
                *seq += 1;
                if a.pcm.len() % sample_bytes != 0 {
                    return Err(format!("event {i}: audio of {} bytes (not whole samples of {sample_bytes} bytes)", a.pcm.len()));
                }
            }
            ServerEvent::Words(w) => {
                if w.index >= announced || w.index < ended {
                    return Err(format!("event {i}: words of sentence {} outside its `sentence` … `sentence_end`", w.index));
                }
                if w.index != ended {
                    return Err(format!("event {i}: words of sentence {} before sentence {ended} ended", w.index));
                }
                let last = words_end.entry(w.index).or_insert(0.0);
                for word in &w.words {
                    if word.start_ms < *last - 0.05 || word.end_ms < word.start_ms {
                        return Err(format!("event {i}: word {:?} of sentence {} out of order or overlapping", word.text, w.index));
                    }
                    *last = word.end_ms;
                }
            }
            ServerEvent::SentenceEnd(e) => {
                if e.index >= announced || e.index < ended {
                    return Err(format!("event {i}: sentence_end {} unannounced or repeated", e.index));
                }
                if e.index != ended {
                    return Err(format!("event {i}: sentence_end {} out of order (expected {ended})", e.index));
                }
                ended += 1;
            }
            ServerEvent::Done(_) | ServerEvent::Error(_) if !last => return Err(format!("event {i}: `{}` is not the last event", event.kind())),
            ServerEvent::Done(_) if ended != announced => return Err(format!("`done` with {ended} of {announced} sentences ended")),
            ServerEvent::Done(_) | ServerEvent::Error(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::protocol::{AudioChunk, AudioFormat, BackendReason, Done, ErrorInfo, SentenceEnd, SentenceText, SessionInfo};

    fn session() -> ServerEvent {
        ServerEvent::Session(SessionInfo {
            v: 1,
            conversation_id: "c".into(),
            request_id: "r".into(),
            backend: "kokoro".into(),
            backend_reason: BackendReason::Default,
            arm: None,
            experiment: None,
            release: "incremental".into(),
            voice: "af_heart".into(),
            language: None,
            language_source: None,
            audio: AudioFormat::pcm_s16le(24_000),
        })
    }
    fn sentence(index: u32) -> ServerEvent {
        ServerEvent::Sentence(SentenceText { index, text: "Hi.".into() })
    }
    fn audio(index: u32, seq: u32) -> ServerEvent {
        ServerEvent::Audio(AudioChunk { index, seq, pcm: Bytes::from_static(&[0, 0]) })
    }
    fn end(index: u32) -> ServerEvent {
        ServerEvent::SentenceEnd(SentenceEnd { index, audio_ms: 1.0, cached: false, skipped: None })
    }
    fn done() -> ServerEvent {
        ServerEvent::Done(Done { timeline: Default::default() })
    }

    #[test]
    fn a_well_ordered_stream_passes_and_each_rule_catches_its_break() {
        let good = vec![session(), sentence(0), sentence(1), audio(0, 0), audio(0, 1), end(0), audio(1, 0), end(1), done()];
        assert_eq!(check_order(&good), Ok(()));
        let error = ServerEvent::Error(ErrorInfo::new("interrupted", "stop", false));
        let broken: Vec<(&str, Vec<ServerEvent>)> = vec![
            ("no session first", vec![sentence(0)]),
            ("a session after audio", vec![session(), sentence(0), audio(0, 0), session()]),
            ("sentences out of order", vec![session(), sentence(1)]),
            ("audio before its sentence", vec![session(), audio(0, 0)]),
            ("audio after its end", vec![session(), sentence(0), audio(0, 0), end(0), audio(0, 1)]),
            ("audio of a later sentence first", vec![session(), sentence(0), sentence(1), audio(1, 0)]),
            ("a gap in seq", vec![session(), sentence(0), audio(0, 1)]),
            ("an odd length", vec![session(), sentence(0), ServerEvent::Audio(AudioChunk { index: 0, seq: 0, pcm: Bytes::from_static(&[0]) })]),
            ("an end repeated", vec![session(), sentence(0), end(0), end(0)]),
            ("an end out of order", vec![session(), sentence(0), sentence(1), end(1)]),
            ("done before the end", vec![session(), sentence(0), done()]),
            ("something after the error", vec![session(), error.clone(), sentence(0)]),
        ];
        for (rule, events) in broken {
            assert!(check_order(&events).is_err(), "{rule}: not caught");
        }
        assert_eq!(check_order(&[session(), sentence(0), error]), Ok(()), "an error may end a stream anywhere");
    }
}
