//! The wire protocol: what the encoders write is what the decoders read, however the bytes are
//! chunked; unknown types are skipped; malformed messages are errors; the documented example holds.

use bytes::Bytes;
use earshot_core::protocol::{
    binary, sse, AudioChunk, AudioFormat, Decoder, Delivery, Done, ErrorInfo, ProtocolError, SentenceEnd, SentenceText, ServerEvent, SessionInfo, TextDelta,
};
use earshot_core::timeline::Timeline;
use proptest::prelude::*;

fn conversation() -> Vec<ServerEvent> {
    vec![
        ServerEvent::Session(SessionInfo {
            v: 1,
            conversation_id: "c-1".into(),
            request_id: "r-1".into(),
            backend: "kokoro".into(),
            backend_reason: earshot_core::protocol::BackendReason::Default,
            arm: None,
            experiment: None,
            release: "incremental".into(),
            voice: "jf_alpha".into(),
            language: Some(earshot_core::language::Language::parse("fr").unwrap()),
            language_source: Some(earshot_core::language::LanguageSource::Request),
            audio: AudioFormat::pcm_s16le(24_000),
        }),
        ServerEvent::Text(TextDelta { text: "Sure.\n\"quoted\" ✓".into() }),
        ServerEvent::Sentence(SentenceText { index: 0, text: "Sure.".into() }),
        ServerEvent::Audio(AudioChunk { index: 0, seq: 0, pcm: Bytes::from(vec![1, 0, 255, 255, 0, 128]) }),
        ServerEvent::Audio(AudioChunk { index: 0, seq: 1, pcm: Bytes::from_static(b"{not json") }),
        ServerEvent::SentenceEnd(SentenceEnd { index: 0, audio_ms: 0.125, cached: false, skipped: None }),
        ServerEvent::Done(Done { timeline: Timeline { backend: "kokoro".into(), first_audio_sent_ms: Some(12.5), ..Default::default() } }),
        ServerEvent::Error(ErrorInfo::new("x", "line\nbreak", true)),
    ]
}

fn encode_all(delivery: Delivery, events: &[ServerEvent]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        out.extend_from_slice(&delivery.encode(e));
        if i == 2 {
            out.extend_from_slice(&delivery.keep_alive());
        }
    }
    out
}

fn decode_chunked(delivery: Delivery, bytes: &[u8], cuts: &[usize]) -> Result<Vec<ServerEvent>, ProtocolError> {
    let mut decoder = Decoder::new(delivery);
    let mut out = Vec::new();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.extend([0, bytes.len()]);
    points.sort_unstable();
    points.dedup();
    for w in points.windows(2) {
        out.extend(decoder.push(&bytes[w[0]..w[1]])?);
    }
    decoder.finish()?;
    Ok(out)
}

proptest! {
    #[test]
    fn any_chunking_decodes_the_same_messages(cuts in prop::collection::vec(0usize..5000, 0..40)) {
        for delivery in [Delivery::Sse, Delivery::Binary] {
            let bytes = encode_all(delivery, &conversation());
            prop_assert_eq!(decode_chunked(delivery, &bytes, &cuts).unwrap(), conversation());
        }
    }
}

#[test]
fn sse_accepts_any_line_ending_and_skips_comments_and_unknown_events() {
    let text = "event: later\r\ndata: {}\r\n\r\n: comment\revent: sentence\rdata: {\"index\":3,\rdata: \"text\":\"Hi.\"}\r\r";
    let mut d = sse::SseDecoder::default();
    let events = d.push(text.as_bytes()).unwrap();
    assert_eq!(events, vec![ServerEvent::Sentence(SentenceText { index: 3, text: "Hi.".into() })]);
}

#[test]
fn binary_skips_unknown_types_and_rejects_malformed_frames() {
    let mut bytes = vec![0x7f, 0, 0, 0, 3, 1, 2, 3];
    bytes.extend_from_slice(&binary::encode(&ServerEvent::Text(TextDelta { text: "a".into() })));
    let mut d = binary::BinaryDecoder::default();
    assert_eq!(d.push(&bytes).unwrap(), vec![ServerEvent::Text(TextDelta { text: "a".into() })]);

    let short_audio = [0x04, 0, 0, 0, 3, 0, 0, 0];
    assert!(matches!(binary::BinaryDecoder::default().push(&short_audio), Err(ProtocolError::Malformed { .. })));
    let bad_json = [0x03, 0, 0, 0, 1, b'{'];
    assert!(matches!(binary::BinaryDecoder::default().push(&bad_json), Err(ProtocolError::Malformed { .. })));
    let huge = [0x04, 0xff, 0xff, 0xff, 0xff];
    assert!(matches!(binary::BinaryDecoder::default().push(&huge), Err(ProtocolError::FrameTooLarge(..))));
    let mut cut = binary::BinaryDecoder::default();
    cut.push(&[0x02, 0, 0]).unwrap();
    assert_eq!(cut.finish(), Err(ProtocolError::Truncated));
}

#[test]
fn audio_that_looks_like_json_is_still_audio() {
    let chunk = ServerEvent::Audio(AudioChunk { index: 1, seq: 0, pcm: Bytes::from_static(b"{\"index\":9}") });
    let decoded = binary::BinaryDecoder::default().push(&binary::encode(&chunk)).unwrap();
    assert_eq!(decoded, vec![chunk]);
}

#[test]
fn the_documented_binary_example_holds() {
    let chunk = ServerEvent::Audio(AudioChunk { index: 2, seq: 0, pcm: Bytes::from_static(&[0x01, 0x00, 0xff, 0xff]) });
    assert_eq!(&binary::encode(&chunk)[..], &[0x04, 0, 0, 0, 0x0c, 0, 0, 0, 2, 0, 0, 0, 0, 0x01, 0x00, 0xff, 0xff]);
    let sse_bytes = sse::encode(&ServerEvent::Sentence(SentenceText { index: 0, text: "Sure.".into() }));
    assert_eq!(&sse_bytes[..], b"event: sentence\ndata: {\"index\":0,\"text\":\"Sure.\"}\n\n");
}
