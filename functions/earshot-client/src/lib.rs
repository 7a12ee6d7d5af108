//! A client of `POST /v1/speak`: it sends the request, decodes SSE or binary frames as they arrive
//! (any network chunking), and records what a client sees: when the response began, when the first
//! audio was decoded, when the stream ended. `earshot say`, the end-to-end tests and the benchmarks
//! all use it.

#![warn(missing_docs)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use earshot_core::protocol::{AudioFormat, Decoder, Delivery, ErrorInfo, ServerEvent, SessionInfo, TimingSource, WordTiming};
use earshot_core::timeline::Timeline;
use futures_util::StreamExt;

/// A request, as `POST /v1/speak` takes it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SpeakBody {
    /// What the agent is asked (1 to 4,000 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Text to speak as given, instead of a prompt (1 to 20,000 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The conversation so far, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Turn>>,
    /// The backend to speak with (`kokoro`, `polly`, `auto`); the gateway's default or its A/B split
    /// when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// A voice of the backend (`GET /v1/voices`); the backend's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    /// The answer's language, a BCP 47 tag; detected when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// When sentences go to speech: `incremental` (each as soon as it is complete, the default) or
    /// `buffered` (all of them once the agent has finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// How the stream is framed: `sse` or `binary`; taken from `CallOptions::delivery` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The audio's format (`pcm_16000`, `ulaw_8000`, …); the gateway's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// The conversation's id (1 to 128 of `A-Z a-z 0-9 - _ . :`); the gateway makes one when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// How fast to speak, 0.5 to 2.0 (1: the voice's own); the gateway's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// `ssml`: the text, or the agent's answer, is SSML of the gateway's portable subset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub markup: Option<String>,
}

/// What a client measured, in milliseconds since it sent the request.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ClientMarks {
    /// When the response's status and headers arrived.
    pub response_headers_ms: f64,
    /// When the first event was decoded.
    pub first_event_ms: Option<f64>,
    /// When the first audio chunk was decoded.
    pub first_audio_decoded_ms: Option<f64>,
    /// When the `done` event was decoded; `None` when the stream ended without one.
    pub done_ms: Option<f64>,
    /// Every audio chunk as it was decoded: when, and how many bytes of PCM it held.
    pub audio_chunks: Vec<(f64, usize)>,
    /// The sentence of each audio chunk, in the same order.
    pub audio_chunk_sentences: Vec<u32>,
    /// Milliseconds of audio in each chunk, in the same order (from its bytes, or for Ogg Opus from its
    /// pages' granule positions).
    pub audio_chunk_ms: Vec<f64>,
    /// Bytes of the response body, framing included.
    pub body_bytes: u64,
    /// When each event of [`Received::events`] was decoded, in the same order.
    #[serde(skip)]
    pub event_ms: Vec<f64>,
}

impl ClientMarks {
    /// Each audio chunk as a player takes it: when it was decoded, and how many milliseconds it plays.
    pub fn played_chunks(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.audio_chunks.iter().zip(&self.audio_chunk_ms).map(|(&(at, _), &ms)| (at, ms))
    }

    /// Plays the audio as the demo page's player does (each chunk starts when it is decoded or when
    /// the chunk before it ends, whichever is later) and returns the silences after the first chunk
    /// that are longer than `threshold_ms`, in milliseconds.
    pub fn playback_gaps(&self, threshold_ms: f64) -> Vec<f64> {
        let chunks = self.played_chunks();
        earshot_core::playback::play(chunks).iter().filter_map(|p| p.gap_ms).filter(|gap| *gap > threshold_ms).collect()
    }

    /// The same silences, told apart by where a listener hears them: before a sentence starts, or
    /// inside one (a stall: the voice stops mid-sentence).
    pub fn playback_silences(&self, threshold_ms: f64) -> Silences {
        let chunks = self.played_chunks();
        let mut out = Silences::default();
        let mut previous: Option<u32> = None;
        for (played, sentence) in earshot_core::playback::play(chunks).iter().zip(self.audio_chunk_sentences.iter().copied()) {
            if let Some(gap) = played.gap_ms.filter(|g| *g > threshold_ms) {
                if previous == Some(sentence) {
                    out.inside_sentences.push(gap);
                } else {
                    out.before_sentences.push(gap);
                }
            }
            previous = Some(sentence);
        }
        out
    }
}

/// What a listener heard of an answer: to build the next turn's `messages` from after a barge-in
/// (docs/protocol.md, "After Stop"). The same rule as the browser client's `heardText`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Heard {
    /// What was heard: the sentences whose audio started, the last one cut at [`Cut::chars`].
    pub text: String,
    /// The sentences whose audio started, in order: index and whole text.
    pub sentences: Vec<(u32, String)>,
    /// The sentence the stop cut, if it cut one.
    pub cut: Option<Cut>,
}

/// Where a stop cut a sentence: as time into its audio, and as an estimated character offset (in
/// proportion to the audio heard, moved back to the start of the word it falls in).
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The index of the sentence cut.
    pub index: u32,
    /// Milliseconds of the sentence's audio heard before the stop.
    pub heard_ms: f64,
    /// Milliseconds of audio the sentence has in all (as received).
    pub audio_ms: f64,
    /// Characters (not bytes) of the sentence heard.
    pub chars: usize,
}

/// Silences a player would leave, by where they fall, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Silences {
    /// Silences before a sentence starts, in milliseconds.
    pub before_sentences: Vec<f64>,
    /// Silences inside a sentence (stalls: the voice stops mid-sentence), in milliseconds.
    pub inside_sentences: Vec<f64>,
}

/// A whole conversation as a client received it.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// The response's HTTP status.
    pub status: u16,
    /// The response's headers, as name and value.
    pub headers: Vec<(String, String)>,
    /// The last `session` message (another comes after a switch of backend); `None` when none came.
    pub session: Option<SessionInfo>,
    /// Every event, in the order it was decoded.
    pub events: Vec<ServerEvent>,
    /// Every audio chunk in order of arrival, concatenated.
    pub audio: Vec<u8>,
    /// The gateway's timeline of the conversation, from the `done` event.
    pub timeline: Option<Timeline>,
    /// The last `error` event, if one came.
    pub error: Option<ErrorInfo>,
    /// What the client measured.
    pub marks: ClientMarks,
}

impl Received {
    /// The value of the response header `name` (any case), if it came.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The audio's format, as the `session` message announced it; `None` when no `session` came.
    pub fn format(&self) -> Option<&AudioFormat> {
        self.session.as_ref().map(|s| &s.audio)
    }

    /// Audio bytes a millisecond in the announced format (24 kHz PCM mono when no `session` came).
    pub fn bytes_per_ms(&self) -> f64 {
        self.format().map_or(48.0, |f| f.sample_rate as f64 * f.channels as f64 * f.bytes_per_sample() as f64 / 1000.0)
    }

    /// The audio as 16-bit samples, decoded from the announced format (PCM, μ-law or A-law).
    pub fn samples(&self) -> Result<Vec<i16>, String> {
        let format = self.format().ok_or("no session message: the audio format is unknown")?;
        earshot_audio::decode(format, &self.audio).map_err(|e| e.to_string())
    }

    /// When the client decoded the first event that `wanted` picks (milliseconds since it sent the request):
    /// the first `text` is the agent's first token as the client learns it, a `sentence` its release.
    pub fn first_event_ms(&self, wanted: impl Fn(&ServerEvent) -> bool) -> Option<f64> {
        self.events.iter().zip(&self.marks.event_ms).find(|(e, _)| wanted(e)).map(|(_, &at)| at)
    }

    /// Sentence `index`'s words with when each is heard (milliseconds from its first sample), gathered from
    /// its `words` messages, and how they were timed (`None`: no words came).
    pub fn words(&self, index: u32) -> (Option<TimingSource>, Vec<WordTiming>) {
        let mut timing = None;
        let mut words = Vec::new();
        for event in &self.events {
            match event {
                ServerEvent::Words(w) if w.index == index => {
                    timing = Some(w.timing);
                    words.extend(w.words.iter().cloned());
                }
                // A second session speaks the answer anew: what came before it does not count.
                ServerEvent::Session(_) => {
                    timing = None;
                    words.clear();
                }
                _ => {}
            }
        }
        (timing, words)
    }

    /// What a listener heard who played `played_ms` of the answer's audio, in order, then stopped
    /// (`None`: all of it). Each sentence lasts as long as the audio received for it.
    pub fn heard(&self, played_ms: Option<f64>) -> Heard {
        let mut heard = Heard::default();
        let mut before = 0.0;
        for event in &self.events {
            let ServerEvent::Sentence(sentence) = event else { continue };
            let audio_ms: f64 =
                self.marks.audio_chunk_ms.iter().zip(&self.marks.audio_chunk_sentences).filter(|(_, s)| **s == sentence.index).map(|(ms, _)| *ms).sum();
            if audio_ms <= 0.0 || played_ms.is_some_and(|played| played <= before) {
                break;
            }
            heard.sentences.push((sentence.index, sentence.text.clone()));
            match played_ms {
                Some(played) if played < before + audio_ms => {
                    let chars: Vec<char> = sentence.text.chars().collect();
                    let heard_ms = played - before;
                    // Cut at the last whole word heard where the sentence was timed word by word, else
                    // estimated from the share of its audio heard.
                    let (_, words) = self.words(sentence.index);
                    let offset = earshot_core::words::heard_chars(&sentence.text, &words, heard_ms)
                        .unwrap_or_else(|| earshot_core::words::word_start(&chars, (chars.len() as f64 * heard_ms / audio_ms).round() as usize));
                    heard.cut = Some(Cut { index: sentence.index, heard_ms, audio_ms, chars: offset });
                    break;
                }
                _ => before += audio_ms,
            }
        }
        let parts: Vec<String> = heard
            .sentences
            .iter()
            .map(|(index, text)| match &heard.cut {
                Some(cut) if cut.index == *index => text.chars().take(cut.chars).collect::<String>().trim_end().to_string(),
                _ => text.clone(),
            })
            .filter(|t| !t.is_empty())
            .collect();
        heard.text = parts.join(" ");
        heard
    }

    /// Writes the audio as a WAV file (16-bit PCM, whatever format it came in).
    pub fn write_wav(&self, path: &std::path::Path) -> Result<(), String> {
        let format = self.format().ok_or("no session message: the audio format is unknown")?;
        let spec = hound::WavSpec { channels: format.channels, sample_rate: format.sample_rate, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
        let samples = self.samples()?;
        let mut writer = hound::WavWriter::create(path, spec).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        for sample in samples {
            writer.write_sample(sample).map_err(|e| e.to_string())?;
        }
        writer.finalize().map_err(|e| e.to_string())
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The gateway could not be reached, or the request could not be built or signed.
    #[error("cannot reach {url}: {message}")]
    Connect {
        /// The URL called.
        url: String,
        /// What went wrong, in words.
        message: String,
    },
    /// The gateway refused the request before streaming.
    #[error("HTTP {status}: {code}: {message}")]
    Refused {
        /// The response's HTTP status.
        status: u16,
        /// The error's code (`invalid_request`, `unknown_voice`, …).
        code: String,
        /// The error's message.
        message: String,
    },
    /// The connection failed while the stream was being read.
    #[error("the stream broke: {0}")]
    Stream(String),
    /// The stream could not be decoded as the protocol frames it.
    #[error("the stream is malformed: {0}")]
    Protocol(#[from] earshot_core::protocol::ProtocolError),
}

/// Options of one call.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// How the stream is framed, SSE or binary frames (sent as `format` when the body names none).
    pub delivery: Delivery,
    /// The longest the whole call may take, from sending the request to the stream's end (120 s by
    /// default).
    pub timeout: Duration,
    /// Stop reading (and drop the connection) after this many audio chunks: a client going away.
    pub stop_after_audio_chunks: Option<usize>,
    /// A gateway token, sent as `Authorization: Bearer …` (token mode).
    pub bearer: Option<String>,
    /// Signs each request (a deployed gateway behind IAM: SigV4), given its method, URL, headers and body.
    pub signer: Option<Signer>,
}

/// Headers, as name and value.
pub type Headers = Vec<(String, String)>;

/// Signs a request given its method, URL, headers and body: the headers to add.
pub type SignFn = dyn Fn(&str, &str, &[(String, String)], &[u8]) -> Result<Headers, String> + Send + Sync;

/// A request signer (SigV4 for a gateway behind IAM, for example).
#[derive(Clone)]
pub struct Signer(pub std::sync::Arc<SignFn>);

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer")
    }
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions { delivery: Delivery::Sse, timeout: Duration::from_secs(120), stop_after_audio_chunks: None, bearer: None, signer: None }
    }
}

/// Interrupts a live conversation (`POST /v1/conversations/{id}/interrupt`): `Ok(())` once the gateway
/// accepted it (202); a refusal (404 for no live conversation, 501 where the gateway cannot reach
/// one) is [`ClientError::Refused`].
pub async fn interrupt(base: &str, conversation_id: &str) -> Result<(), ClientError> {
    interrupt_as(base, conversation_id, None).await
}

/// [`interrupt`] with a gateway token (token mode).
pub async fn interrupt_as(base: &str, conversation_id: &str, bearer: Option<&str>) -> Result<(), ClientError> {
    interrupt_heard(base, conversation_id, bearer, None).await
}

/// [`interrupt_as`], saying how much of the answer's audio was played (`heard_ms`): the stream's
/// `interrupted` error then says what was heard, to the word (`heard`).
pub async fn interrupt_heard(base: &str, conversation_id: &str, bearer: Option<&str>, heard_ms: Option<f64>) -> Result<(), ClientError> {
    let url = format!("{}/v1/conversations/{}/interrupt", base.trim_end_matches('/'), conversation_id);
    let mut request = reqwest::Client::new().post(&url);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    if let Some(ms) = heard_ms {
        request = request.json(&serde_json::json!({ "heard_ms": ms }));
    }
    let response = request.send().await.map_err(|e| ClientError::Connect { url: url.clone(), message: e.to_string() })?;
    let status = response.status().as_u16();
    if status == 202 {
        return Ok(());
    }
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    let field = |name: &str| body["error"][name].as_str().unwrap_or("").to_string();
    Err(ClientError::Refused { status, code: field("code"), message: field("message") })
}

/// Sends one speak request to `base` (e.g. `http://127.0.0.1:8787`) and reads the whole stream.
pub async fn speak(base: &str, body: &SpeakBody, options: &CallOptions) -> Result<Received, ClientError> {
    let url = format!("{}/v1/speak", base.trim_end_matches('/'));
    let mut body = body.clone();
    if body.format.is_none() {
        body.format = Some(match options.delivery {
            Delivery::Sse => "sse".into(),
            Delivery::Binary => "binary".into(),
        });
    }
    let client = reqwest::Client::builder().timeout(options.timeout).build().map_err(|e| ClientError::Connect { url: url.clone(), message: e.to_string() })?;
    let sent = Instant::now();
    let ms = move || sent.elapsed().as_secs_f64() * 1000.0;
    // The body as bytes, so that a signer signs exactly what is sent.
    let bytes = serde_json::to_vec(&body).expect("a body serializes");
    let mut request = client.post(&url).header("content-type", "application/json").body(bytes.clone());
    if let Some(token) = &options.bearer {
        request = request.bearer_auth(token);
    }
    if let Some(Signer(sign)) = &options.signer {
        let headers = vec![("content-type".to_string(), "application/json".to_string())];
        for (name, value) in
            sign("POST", &url, &headers, &bytes).map_err(|message| ClientError::Connect { url: url.clone(), message: format!("cannot sign: {message}") })?
        {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.map_err(|e| ClientError::Connect { url: url.clone(), message: e.to_string() })?;
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response.headers().iter().map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string())).collect();
    if status >= 400 {
        let json: serde_json::Value = response.json().await.unwrap_or_default();
        return Err(ClientError::Refused {
            status,
            code: json["error"]["code"].as_str().unwrap_or("unknown").to_string(),
            message: json["error"]["message"].as_str().unwrap_or("").to_string(),
        });
    }
    let mut received = Received { status, headers, marks: ClientMarks { response_headers_ms: ms(), ..Default::default() }, ..Default::default() };
    let mut decoder = Decoder::new(options.delivery);
    let mut chunks = response.bytes_stream();
    let mut audio_chunks = 0usize;
    let mut clock: Option<earshot_audio::coded::ChunkClock> = None;
    while let Some(chunk) = chunks.next().await {
        let chunk: Bytes = chunk.map_err(|e| ClientError::Stream(e.to_string()))?;
        received.marks.body_bytes += chunk.len() as u64;
        for event in decoder.push(&chunk)? {
            received.marks.first_event_ms.get_or_insert_with(ms);
            match &event {
                ServerEvent::Session(s) => received.session = Some(s.clone()),
                ServerEvent::Audio(a) => {
                    let at = ms();
                    received.marks.first_audio_decoded_ms.get_or_insert(at);
                    received.marks.audio_chunks.push((at, a.pcm.len()));
                    received.marks.audio_chunk_sentences.push(a.index);
                    if clock.is_none() {
                        clock = received.format().and_then(|f| earshot_audio::coded::ChunkClock::for_encoding(&f.encoding));
                    }
                    let ms = match clock.as_mut() {
                        Some(clock) => clock.advance(&a.pcm),
                        None => a.pcm.len() as f64 / received.bytes_per_ms(),
                    };
                    received.marks.audio_chunk_ms.push(ms);
                    received.audio.extend_from_slice(&a.pcm);
                    audio_chunks += 1;
                }
                ServerEvent::Done(d) => {
                    received.timeline = Some(d.timeline.clone());
                    received.marks.done_ms = Some(ms());
                }
                ServerEvent::Error(e) => received.error = Some(e.clone()),
                _ => {}
            }
            received.events.push(event);
            received.marks.event_ms.push(ms());
        }
        if options.stop_after_audio_chunks.is_some_and(|n| audio_chunks >= n) {
            return Ok(received);
        }
    }
    decoder.finish()?;
    Ok(received)
}

/// Root-mean-square level of 16-bit samples, from 0 (silence) to 1 (full scale).
pub fn rms(samples: &[i16]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|&s| (s as f64 / 32768.0).powi(2)).sum::<f64>() / samples.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playback_gaps_are_the_silences_a_player_would_leave() {
        // Each chunk plays for 100 ms.
        let marks =
            ClientMarks { audio_chunks: vec![(0.0, 200), (50.0, 200), (230.0, 200), (333.0, 200)], audio_chunk_ms: vec![100.0; 4], ..Default::default() };
        // The second chunk came while the first played; the third 30 ms after the second ended
        // (at 200); the fourth 3 ms after the third ended (at 330).
        assert_eq!(marks.playback_gaps(0.0), vec![30.0, 3.0]);
        assert_eq!(marks.playback_gaps(5.0), vec![30.0]);
    }

    #[test]
    fn heard_keeps_the_sentences_whose_audio_started_and_cuts_the_last_at_a_word() {
        let sentence = |index: u32, text: &str| ServerEvent::Sentence(earshot_core::protocol::SentenceText { index, text: text.into() });
        // Sentence 0 lasts one second, sentence 1 two (in two chunks of a second each).
        let received = Received {
            events: vec![sentence(0, "One two."), sentence(1, "Three four five six."), sentence(2, "Seven.")],
            marks: ClientMarks {
                audio_chunks: vec![(0.0, 48_000), (10.0, 48_000), (20.0, 48_000)],
                audio_chunk_sentences: vec![0, 1, 1],
                audio_chunk_ms: vec![1000.0, 1000.0, 1000.0],
                ..Default::default()
            },
            ..Default::default()
        };
        // All of it: sentence 2 has no audio, so it was never heard.
        let all = received.heard(None);
        assert_eq!((all.text.as_str(), all.sentences.len(), all.cut.clone()), ("One two. Three four five six.", 2, None));
        // 2 s: half into sentence 1, which is cut after "four" (10 of its 20 characters).
        let half = received.heard(Some(2000.0));
        assert_eq!(half.text, "One two. Three four");
        assert_eq!(half.cut, Some(Cut { index: 1, heard_ms: 1000.0, audio_ms: 2000.0, chars: 10 }));
        // Exactly at a sentence's end: nothing cut; before any audio: nothing heard.
        assert_eq!(received.heard(Some(1000.0)).text, "One two.");
        assert_eq!(received.heard(Some(1000.0)).cut, None);
        assert_eq!(received.heard(Some(0.0)), Heard::default());
    }

    #[test]
    fn a_silence_inside_a_sentence_is_told_from_one_before_a_sentence() {
        // Sentence 0 in two chunks, the second 40 ms after the first ran out (a stall); sentence 1 starts
        // 20 ms after sentence 0 ended (a gap before it).
        let marks = ClientMarks {
            audio_chunks: vec![(0.0, 200), (140.0, 200), (260.0, 200)],
            audio_chunk_sentences: vec![0, 0, 1],
            audio_chunk_ms: vec![100.0; 3],
            ..Default::default()
        };
        assert_eq!(marks.playback_silences(5.0), Silences { before_sentences: vec![20.0], inside_sentences: vec![40.0] });
    }
}

/// One earlier turn of a conversation, as `POST /v1/speak` takes it in `messages`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
}

impl Turn {
    /// A turn of the user's.
    pub fn user(content: impl Into<String>) -> Self {
        Turn { role: "user".into(), content: content.into() }
    }
    /// A turn of the assistant's (an earlier answer).
    pub fn assistant(content: impl Into<String>) -> Self {
        Turn { role: "assistant".into(), content: content.into() }
    }
}
