//! What the HTTP agent sources share: how an HTTP failure becomes an agent error, text decoded from a
//! byte stream whose chunks may split a character, and a sender that stops when the conversation is
//! cancelled or the scheduler has gone.

use earshot_core::agent::{AgentError, AgentEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A failed answer's status and body as an agent error. The body's own message is kept when it has
/// one in the common `{"error": {"message": …}}` (or `{"message": …}`) shape; `who` names the service.
pub fn status_error(who: &str, status: reqwest::StatusCode, body: &str) -> AgentError {
    let (code, retryable) = match status.as_u16() {
        400 | 413 | 422 => ("agent_validation", false),
        401 | 403 => ("agent_access_denied", false),
        404 => ("agent_model_not_found", false),
        408 | 504 => ("agent_timeout", true),
        429 => ("agent_throttled", true),
        500..=599 => ("agent_unavailable", true),
        _ => ("agent_error", true),
    };
    AgentError::new(code, format!("{who} answered {status}: {}", body_message(body)), retryable)
}

/// The message of an error body, or the body itself, shortened.
pub fn body_message(body: &str) -> String {
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let message = json.pointer("/error/message").or_else(|| json.get("message")).or_else(|| json.get("error")).and_then(|m| m.as_str());
    let text = message.map(str::to_string).unwrap_or_else(|| body.trim().to_string());
    text.chars().take(300).collect()
}

/// A request that got no answer.
pub fn unreachable(who: &str, e: &reqwest::Error) -> AgentError {
    if e.is_timeout() {
        AgentError::new("agent_timeout", format!("{who} did not answer in time: {e}"), true)
    } else {
        AgentError::new("agent_unreachable", format!("cannot reach {who}: {e}"), true)
    }
}

/// Text from a byte stream: a character split across chunks is held until its last byte comes.
#[derive(Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// The text complete so far; an invalid sequence becomes U+FFFD rather than an error.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid_up_to = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(), // an incomplete character at the end
            Err(_) => {
                let text = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                return text;
            }
        };
        let rest = self.pending.split_off(valid_up_to);
        String::from_utf8(std::mem::replace(&mut self.pending, rest)).expect("checked above")
    }

    /// What is left at the end (an incomplete character, as U+FFFD).
    pub fn finish(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned()
    }
}

/// A byte stream made valid UTF-8 as it goes: each invalid sequence becomes U+FFFD and everything after
/// it flows on, and a character split across chunks is held until complete ([`Utf8Carry`]). An SSE
/// reader needs it in front: `eventsource-stream` keeps an invalid byte at the head of its buffer and
/// withholds every event after it until the body ends. The NDJSON and text readers decode the same way,
/// so every agent format treats invalid UTF-8 alike: replaced, and the answer goes on.
pub fn lossy_utf8<S, E>(body: S) -> impl futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    use futures_util::StreamExt;
    let state = (Box::pin(body), Utf8Carry::default(), false);
    Box::pin(futures_util::stream::unfold(state, |(mut body, mut carry, ended)| async move {
        if ended {
            return None;
        }
        match body.next().await {
            Some(Ok(bytes)) => Some((Ok(bytes::Bytes::from(carry.push(&bytes))), (body, carry, false))),
            Some(Err(e)) => Some((Err(e), (body, carry, true))),
            None => {
                let rest = carry.finish();
                (!rest.is_empty()).then(|| (Ok(bytes::Bytes::from(rest)), (body, carry, true)))
            }
        }
    }))
}

/// The most bytes one SSE event or NDJSON line may hold, by default: far more than any token, far less
/// than a machine's memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// The most of an error body read (for the log): the rest is never read.
pub const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// What ends a record of an agent's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordEnd {
    /// A blank line (an SSE event).
    BlankLine,
    /// A line end (an NDJSON line).
    Newline,
}

/// Why a bounded body stopped.
#[derive(Debug)]
pub enum BodyError<E> {
    /// A record went past its limit: the body is not read further.
    TooLarge(usize),
    /// The body itself failed.
    Body(E),
}

impl<E: std::fmt::Display> std::fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge(max) => write!(f, "a record is longer than {max} bytes"),
            BodyError::Body(e) => e.fmt(f),
        }
    }
}

impl<E: std::fmt::Display> BodyError<E> {
    /// As an agent error: `agent_event_too_large`, or a broken stream.
    pub fn agent_error(&self, who: &str) -> AgentError {
        match self {
            BodyError::TooLarge(max) => AgentError::new("agent_event_too_large", format!("{who} sent an event longer than {max} bytes"), false),
            BodyError::Body(e) => AgentError::new("agent_stream_error", format!("{who}'s answer broke: {e}"), true),
        }
    }
}

/// Counts the content bytes of the record in progress (line ends are `\n`, `\r\n` or `\r`, as SSE
/// allows): a reader in front of a parser that would otherwise buffer a record without end.
struct RecordMeter {
    ends: RecordEnd,
    max: usize,
    size: usize,
    line_empty: bool,
    after_cr: bool,
}

impl RecordMeter {
    fn new(ends: RecordEnd, max: usize) -> Self {
        RecordMeter { ends, max, size: 0, line_empty: true, after_cr: false }
    }

    /// Whether `bytes` keep every record within the limit.
    fn take(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            let lf_of_crlf = b == b'\n' && self.after_cr;
            self.after_cr = b == b'\r';
            if lf_of_crlf {
                continue;
            }
            if b == b'\n' || b == b'\r' {
                if self.ends == RecordEnd::Newline || self.line_empty {
                    self.size = 0;
                }
                self.line_empty = true;
            } else {
                self.line_empty = false;
                self.size += 1;
                if self.size > self.max {
                    return false;
                }
            }
        }
        true
    }
}

/// `body` with each record held to `max` bytes: past it, one [`BodyError::TooLarge`] and the end, so
/// nothing behind it (an SSE parser, a line buffer) grows with the input.
pub fn bounded_records<S, E>(body: S, ends: RecordEnd, max: usize) -> impl futures_util::Stream<Item = Result<bytes::Bytes, BodyError<E>>> + Send + Unpin
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    use futures_util::StreamExt;
    let state = (Box::pin(body), RecordMeter::new(ends, max), false);
    Box::pin(futures_util::stream::unfold(state, |(mut body, mut meter, ended)| async move {
        if ended {
            return None;
        }
        match body.next().await {
            Some(Ok(bytes)) if meter.take(&bytes) => Some((Ok(bytes), (body, meter, false))),
            Some(Ok(_)) => Some((Err(BodyError::TooLarge(meter.max)), (body, meter, true))),
            Some(Err(e)) => Some((Err(BodyError::Body(e)), (body, meter, true))),
            None => None,
        }
    }))
}

/// The start of a failed response's body (at most [`MAX_ERROR_BODY_BYTES`], for the log): an error
/// page of any size is never read whole.
pub async fn error_body(response: reqwest::Response) -> String {
    use futures_util::StreamExt;
    let mut body = response.bytes_stream();
    let mut kept = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        let room = MAX_ERROR_BODY_BYTES - kept.len();
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if kept.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// An SSE reader's failure as an agent error: a record past its limit keeps its own code.
pub fn sse_error<E: std::fmt::Display>(e: eventsource_stream::EventStreamError<BodyError<E>>, who: &str) -> AgentError {
    match e {
        eventsource_stream::EventStreamError::Transport(body) => body.agent_error(who),
        other => AgentError::new("agent_stream_error", format!("{who}'s answer broke: {other}"), true),
    }
}

/// Sends to the scheduler unless the conversation was cancelled; `false` when the answer should stop.
pub async fn send(tx: &mpsc::Sender<Result<AgentEvent, AgentError>>, cancel: &CancellationToken, item: Result<AgentEvent, AgentError>) -> bool {
    let last = !matches!(item, Ok(AgentEvent::Delta(_) | AgentEvent::Pause));
    tokio::select! {
        _ = cancel.cancelled() => false,
        sent = tx.send(item) => sent.is_ok() && !last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter_accepts(ends: RecordEnd, max: usize, chunks: &[&[u8]]) -> bool {
        let mut meter = RecordMeter::new(ends, max);
        chunks.iter().all(|c| meter.take(c))
    }

    #[test]
    fn a_record_is_measured_across_chunks_and_reset_at_its_end() {
        // SSE: an event is everything up to a blank line, however many lines it has.
        assert!(meter_accepts(RecordEnd::BlankLine, 10, &[b"data: abc\n\n", b"data: abc\r\n\r\n", b"data: abc\r\rdata: x"]));
        assert!(!meter_accepts(RecordEnd::BlankLine, 10, &[b"data: a\n", b"data: b\n"]), "two lines of one event count together");
        assert!(!meter_accepts(RecordEnd::BlankLine, 10, &[b"data: abcd", b"efgh\n\n"]), "split across chunks");
        assert!(!meter_accepts(RecordEnd::BlankLine, 10, &[b"data: a\r\n", b"data: b\r\n"]), "CRLF is one line end, not a blank line");
        // NDJSON: each line alone.
        assert!(meter_accepts(RecordEnd::Newline, 10, &[b"{\"t\":\"a\"}\n{\"t\":\"b\"}\n"]));
        assert!(!meter_accepts(RecordEnd::Newline, 10, &[b"{\"text\": \"abcdef\"}"]));
    }

    #[tokio::test]
    async fn a_body_past_its_limit_ends_with_one_error_and_is_not_read_further() {
        use futures_util::StreamExt;
        let endless = futures_util::stream::repeat_with(|| Ok::<_, std::io::Error>(bytes::Bytes::from_static(&[b'x'; 4096])));
        let items: Vec<_> = bounded_records(endless, RecordEnd::Newline, 1 << 16).collect().await;
        assert_eq!(items.len(), 17, "16 chunks within the limit, then the error, then the end");
        assert!(matches!(items.last(), Some(Err(BodyError::TooLarge(65536)))));
        assert_eq!(BodyError::<std::io::Error>::TooLarge(9).agent_error("the agent").code, "agent_event_too_large");
    }

    #[test]
    fn a_character_split_across_chunks_is_held_until_complete() {
        let bytes = "ça va, 東京".as_bytes();
        let mut carry = Utf8Carry::default();
        let mut out = String::new();
        for chunk in bytes.chunks(1) {
            out.push_str(&carry.push(chunk));
        }
        out.push_str(&carry.finish());
        assert_eq!(out, "ça va, 東京");
        let mut carry = Utf8Carry::default();
        assert_eq!(carry.push(&[0xe6, 0x9d]), "");
        assert_eq!(carry.finish(), "\u{fffd}");
        assert_eq!(Utf8Carry::default().push(&[b'a', 0xff, b'b']), "a\u{fffd}b");
    }

    #[tokio::test]
    async fn an_invalid_byte_in_an_sse_stream_is_replaced_and_the_events_after_it_flow_at_once() {
        use eventsource_stream::Eventsource;
        use futures_util::StreamExt;
        // The body never ends: every event must come out of what has arrived, not wait for the end.
        let chunks: Vec<Result<bytes::Bytes, std::convert::Infallible>> = vec![Ok(bytes::Bytes::from_static(b"data: caf\xe9\n\ndata: more\n\n"))];
        let body = futures_util::stream::iter(chunks).chain(futures_util::stream::pending());
        let mut events = lossy_utf8(body).eventsource();
        let first = tokio::time::timeout(std::time::Duration::from_secs(1), events.next()).await.expect("not withheld").unwrap().unwrap();
        assert_eq!(first.data, "caf\u{fffd}");
        let second = tokio::time::timeout(std::time::Duration::from_secs(1), events.next()).await.expect("not withheld").unwrap().unwrap();
        assert_eq!(second.data, "more");
        // A character split across chunks is joined; one cut by the body's end is U+FFFD.
        let split: Vec<Result<bytes::Bytes, std::convert::Infallible>> =
            vec![Ok(bytes::Bytes::from_static(&[b'a', 0xe6])), Ok(bytes::Bytes::from_static(&[0x9d, 0xb1, 0xe4]))];
        let joined: Vec<bytes::Bytes> = lossy_utf8(futures_util::stream::iter(split)).map(Result::unwrap).collect().await;
        assert_eq!(joined.concat(), "a東\u{fffd}".as_bytes());
    }

    #[test]
    fn statuses_map_to_agent_codes_keeping_the_services_message() {
        let e = status_error(
            "the agent",
            reqwest::StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
        );
        assert_eq!((e.code.as_str(), e.retryable), ("agent_access_denied", false));
        assert!(e.message.contains("Incorrect API key provided"), "{}", e.message);
        assert_eq!(status_error("x", reqwest::StatusCode::TOO_MANY_REQUESTS, "slow down").code, "agent_throttled");
        assert_eq!(status_error("x", reqwest::StatusCode::NOT_FOUND, "").code, "agent_model_not_found");
        assert_eq!(status_error("x", reqwest::StatusCode::BAD_GATEWAY, "<html>").code, "agent_unavailable");
    }
}
