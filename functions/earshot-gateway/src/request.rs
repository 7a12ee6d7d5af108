//! `POST /v1/speak` bodies: parsed strictly (unknown fields and wrong types are errors) and checked
//! before any stream starts.

use std::time::Duration;

use axum::http::HeaderMap;
use earshot_core::agent::{AgentInput, Role, Turn};
use earshot_core::language::{Language, LanguageSource};
use earshot_core::output::OutputFormat;
use earshot_core::protocol::Delivery;
use earshot_core::scheduler::Release;
use earshot_core::speech::SpeakingRate;
use earshot_core::text::normalise;
use serde::Deserialize;

use crate::api_error::ApiError;
use crate::strict_json::StrictError;
use earshot_core::text::markup;
use earshot_core::text::ssml::Piece;

/// The JSON body, as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeakBody {
    /// What the agent is asked.
    pub prompt: Option<String>,
    /// Text to speak as given, instead of a prompt.
    pub text: Option<String>,
    /// The conversation so far, oldest first; without `prompt`, its last (user) turn is the prompt.
    pub messages: Option<Vec<Message>>,
    /// The backend to speak with (`kokoro`, `polly`); `auto` or left out: the gateway chooses.
    pub backend: Option<String>,
    /// A voice of the backend; the backend's default when left out.
    pub voice: Option<String>,
    /// The answer's language, a BCP 47 tag (`fr`, `zh-CN`); detected when left out.
    pub language: Option<String>,
    /// When sentences go to speech: `incremental` (default, each as soon as it is complete) or `buffered`
    /// (everything once the agent has finished).
    pub release: Option<String>,
    /// The stream's framing: `sse` or `binary`; when left out, binary where the `Accept` header asks for
    /// `application/vnd.earshot.frames.v1`, otherwise `sse`.
    pub format: Option<String>,
    /// The audio's format (`pcm_16000`, `ulaw_8000`, …); the deployment's, else the backend's PCM.
    pub output_format: Option<String>,
    /// 1 to 128 characters of letters, digits and `- _ . :`; generated when left out.
    pub conversation_id: Option<String>,
    /// How fast to speak, 0.5 to 2.0 (1: the voice's own); the deployment's when left out.
    pub rate: Option<f64>,
    /// `ssml`: the text, or the agent's answer, is SSML of the portable subset (docs/pronunciation.md);
    /// `none` or left out: plain text (the agent's Markdown made speakable).
    pub markup: Option<String>,
}

/// One turn of `messages`, as chat APIs write it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Whose turn: `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
}

/// Input limits, checked before a stream starts.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest body, in bytes.
    pub max_body_bytes: usize,
    /// The longest prompt, in characters.
    pub max_prompt_chars: usize,
    /// The longest text to speak, in characters.
    pub max_text_chars: usize,
    /// Earlier turns a request may carry in `messages`.
    pub max_messages: usize,
    /// Characters in all those turns together.
    pub max_history_chars: usize,
    /// The longest a client may take to send a request's body once its headers are in.
    pub body_timeout: Duration,
}

/// The request limits' defaults the settings' flags also read.
pub mod defaults {
    /// The longest prompt, in characters.
    pub const MAX_PROMPT_CHARS: usize = 4_000;
    /// The longest text to speak, in characters.
    pub const MAX_TEXT_CHARS: usize = 20_000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            max_prompt_chars: defaults::MAX_PROMPT_CHARS,
            max_text_chars: defaults::MAX_TEXT_CHARS,
            max_messages: 40,
            max_history_chars: 16_000,
            body_timeout: Duration::from_secs(10),
        }
    }
}

/// A request that passed every check that needs no backend.
#[derive(Debug, Clone)]
pub struct SpeakRequest {
    /// What the agent is given: a prompt with the conversation so far, or text to speak as given.
    pub input: AgentInput,
    /// `None` or `auto`: the gateway chooses.
    pub backend: Option<String>,
    /// The voice the request names (a backend's, a blend, or one of OpenAI's names); `None`: the
    /// backend's voice for the language, else its default.
    pub voice: Option<crate::voice_ask::VoiceAsk>,
    /// The language the request names; `None`: detected ([`SpeakRequest::language`]).
    pub language: Option<Language>,
    /// When sentences go to speech: each as soon as it is complete, or all once the agent has finished.
    pub release: Release,
    /// How the stream is framed: server-sent events or binary frames.
    pub delivery: Delivery,
    /// The audio format the request names; `None`: the deployment's default.
    pub output: Option<OutputFormat>,
    /// How fast to speak, where the request says; `None`: the deployment's rate.
    pub rate: Option<SpeakingRate>,
    /// The conversation's id, the client's or one the gateway generated.
    pub conversation_id: String,
    /// Whether the client chose `conversation_id` (rather than the gateway generating one).
    pub conversation_id_given: bool,
    /// The API the request came through where it is not earshot's own (`openai_speech`): its metric
    /// line says so.
    pub api: Option<&'static str>,
    /// Whether the text, or the agent's answer, is read as SSML (`"markup": "ssml"`).
    pub ssml: bool,
}

impl SpeakRequest {
    /// The conversation's language and where it came from: the request's, else detected from the text to
    /// speak or, for an agent, from the prompt it answers (the answer's own first words come only after
    /// its voice is chosen, and choosing then would cost a session's opening in time to first audio).
    /// `None` where neither names nor shows one.
    pub fn language(&self) -> Option<(Language, LanguageSource)> {
        if let Some(language) = &self.language {
            return Some((language.clone(), LanguageSource::Request));
        }
        let sample: String = match &self.input {
            // SSML is detected on what it says, its tags left out (it was read whole when the request was).
            AgentInput::Text(t) if self.ssml => ssml_written(t).chars().take(DETECTION_SAMPLE_CHARS).collect(),
            AgentInput::Text(t) => t.chars().take(DETECTION_SAMPLE_CHARS).collect(),
            AgentInput::Prompt { prompt, .. } => prompt.chars().take(DETECTION_SAMPLE_CHARS).collect(),
        };
        earshot_core::language::detect(&sample).map(|l| (l, LanguageSource::Detected))
    }

    /// The characters the request sends to be spoken or answered: text, or a prompt and its earlier turns.
    pub fn input_chars(&self) -> usize {
        match &self.input {
            AgentInput::Text(t) => t.chars().count(),
            AgentInput::Prompt { prompt, history, .. } => prompt.chars().count() + history.iter().map(|t| t.content.chars().count()).sum::<usize>(),
        }
    }
}

/// How much of a text or prompt language detection reads: enough for trigrams to tell, bounded work.
const DETECTION_SAMPLE_CHARS: usize = 400;

/// Parses and checks a `POST /v1/speak` body with its headers (an `Accept` header may choose binary
/// frames) against `limits`; every refusal is a 4xx `ApiError`.
pub fn parse(body: &[u8], headers: &HeaderMap, limits: &Limits) -> Result<SpeakRequest, ApiError> {
    if body.len() > limits.max_body_bytes {
        return Err(ApiError::too_large("body_too_large", format!("the body is larger than {} bytes", limits.max_body_bytes)));
    }
    // Read as a JSON value first: serde would take a top-level array as the fields in order, and a
    // key given twice as its last value.
    let value = crate::strict_json::from_slice(body).map_err(|e| match e {
        StrictError::Syntax(e) => ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}")),
        StrictError::DuplicateKey(key) => ApiError::bad_request("invalid_request", format!("`{key}` is given twice; give each field once")),
        StrictError::TooManyValues => ApiError::bad_request(
            "invalid_request",
            format!("the body holds more than {} JSON values; a request holds a few dozen", crate::strict_json::MOST_VALUES),
        ),
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request("invalid_request", "the body must be one JSON object, such as {\"text\": \"Hello.\"}"));
    }
    let body = SpeakBody::deserialize(value).map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
    let input = match (body.prompt, body.text, body.messages) {
        (_, Some(_), Some(_)) => {
            return Err(ApiError::bad_request("conflicting_input", "`messages` go to the agent: give them with `prompt`, not with `text`"))
        }
        (Some(_), Some(_), None) => return Err(ApiError::bad_request("conflicting_input", "give either `prompt` or `text`, not both")),
        (None, None, None) => {
            return Err(ApiError::bad_request("missing_input", "give `prompt` (for the agent), `messages` (a conversation) or `text` (to speak as given)"))
        }
        (None, Some(t), None) => checked(t, "text", limits.max_text_chars).map(AgentInput::Text)?,
        (prompt, None, messages) => conversation(prompt, messages.unwrap_or_default(), limits)?,
    };
    let release = match body.release.as_deref() {
        None => Release::Incremental,
        Some(r) => r.parse().map_err(|e: String| ApiError::bad_request("invalid_release", e))?,
    };
    let delivery = match body.format.as_deref() {
        Some("sse") => Delivery::Sse,
        Some("binary") => Delivery::Binary,
        Some(other) => return Err(ApiError::bad_request("invalid_format", format!("unknown format `{other}` (expected sse or binary)"))),
        None => delivery_from_accept(headers),
    };
    let output = match body.output_format.as_deref() {
        None => None,
        Some(name) => Some(name.parse().map_err(|e: String| ApiError::bad_request("invalid_output_format", e))?),
    };
    let conversation_id_given = body.conversation_id.is_some();
    let conversation_id = match body.conversation_id {
        Some(id) => {
            check_conversation_id(&id)?;
            id
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    let input = match input {
        AgentInput::Prompt { prompt, history, .. } => AgentInput::Prompt { prompt, history, conversation_id: Some(conversation_id.clone()) },
        text => text,
    };
    let backend = body.backend.filter(|b| b != "auto");
    let voice = match body.voice.as_deref() {
        None => None,
        Some(v) if v.is_empty() || v.len() > 64 => return Err(ApiError::bad_request("unknown_voice", "`voice` must name a voice of GET /v1/voices")),
        Some(v) => Some(crate::voice_ask::VoiceAsk::read(v).map_err(|why| ApiError::bad_request("unknown_voice", why))?),
    };
    let language = match body.language.as_deref() {
        None => None,
        Some(tag) => Some(Language::parse(tag).map_err(|e| ApiError::bad_request("invalid_language", e))?),
    };
    let rate = match body.rate {
        None => None,
        Some(rate) => Some(SpeakingRate::from_factor(rate).map_err(|e| ApiError::bad_request("invalid_rate", format!("`rate`: {e}")))?),
    };
    let ssml = match body.markup.as_deref() {
        None | Some("none") => false,
        Some("ssml") => true,
        Some(other) => return Err(ApiError::bad_request("invalid_markup", format!("`markup` is `ssml` or `none`, not `{other}`"))),
    };
    // SSML to speak as given is read whole before any speech: a tag outside the subset is a 400 naming it.
    if let (true, AgentInput::Text(text)) = (ssml, &input) {
        let pieces =
            earshot_core::text::ssml::read(text).map_err(|e| ApiError::bad_request("invalid_ssml", format!("`text` is not SSML this gateway reads: {e}")))?;
        if !said(&pieces).chars().any(char::is_alphanumeric) {
            return Err(ApiError::bad_request("empty_text", "`text` says nothing once its SSML tags are set aside"));
        }
    }
    Ok(SpeakRequest { input, backend, voice, language, release, delivery, output, rate, conversation_id, conversation_id_given, api: None, ssml })
}

/// What an SSML document says, its tags left out (empty where it is not SSML of the subset).
fn ssml_written(document: &str) -> String {
    said(&earshot_core::text::ssml::read(document).unwrap_or_default())
}

/// The text of an SSML document's pieces, their tags left out, a space where a sentence was cut.
fn said(pieces: &[Piece]) -> String {
    pieces.iter().filter_map(|p| if let Piece::Text(t) = p { Some(markup::written(t).into_owned()) } else { None }).collect::<Vec<_>>().join(" ")
}

/// The prompt and the turns before it. Without `prompt`, the last message is the prompt and must be
/// the user's. The turns start with the user's and alternate (as Bedrock's Converse requires, and every
/// chat API accepts), so that a conversation is passed on to any source unchanged.
fn conversation(prompt: Option<String>, mut messages: Vec<Message>, limits: &Limits) -> Result<AgentInput, ApiError> {
    let prompt = match prompt {
        Some(p) => p,
        None => match messages.pop() {
            Some(last) if last.role == "user" => last.content,
            Some(_) => return Err(invalid_messages("the last of `messages` must be the user's when there is no `prompt`")),
            None => return Err(ApiError::bad_request("missing_input", "`messages` is empty and there is no `prompt`")),
        },
    };
    let prompt = checked(prompt, "prompt", limits.max_prompt_chars)?;
    if messages.len() > limits.max_messages {
        return Err(ApiError::too_large("too_many_messages", format!("`messages` has {} earlier turns; the limit is {}", messages.len(), limits.max_messages)));
    }
    let mut history = Vec::with_capacity(messages.len());
    let mut chars = 0;
    for (i, m) in messages.into_iter().enumerate() {
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(invalid_messages(&format!(
                    "messages[{i}].role is `{other}`; it must be `user` or `assistant` (the system prompt is the gateway's)"
                )))
            }
        };
        let expected = if i % 2 == 0 { Role::User } else { Role::Assistant };
        if role != expected {
            return Err(invalid_messages(&format!("messages[{i}] must be the {}'s: turns start with the user's and alternate", expected.as_str())));
        }
        if m.content.chars().all(invisible) {
            return Err(invalid_messages(&format!("messages[{i}].content is empty")));
        }
        if let Some(c) = markup::first_reserved(&m.content) {
            let message = format!("messages[{i}].content holds U+{:04X}, a private-use character this gateway keeps for itself", c as u32);
            return Err(ApiError::bad_request("reserved_character", message));
        }
        chars += m.content.chars().count();
        history.push(Turn { role, content: m.content });
    }
    if history.last().is_some_and(|t| t.role == Role::User) {
        return Err(invalid_messages("the turn before the prompt must be the assistant's: turns alternate"));
    }
    if chars > limits.max_history_chars {
        return Err(ApiError::too_large("messages_too_long", format!("`messages` hold {chars} characters; the limit is {}", limits.max_history_chars)));
    }
    Ok(AgentInput::Prompt { prompt, history, conversation_id: None })
}

fn invalid_messages(message: &str) -> ApiError {
    ApiError::bad_request("invalid_messages", message)
}

/// Text to speak as given (`field` names it for the caller), checked as `/v1/speak`'s `text` is.
pub(crate) fn checked_text(value: String, field: &str, max: usize) -> Result<String, ApiError> {
    checked_as(value, field, true, max)
}

fn checked(value: String, field: &str, max: usize) -> Result<String, ApiError> {
    checked_as(value, field, field == "text", max)
}

fn checked_as(value: String, field: &str, spoken_as_given: bool, max: usize) -> Result<String, ApiError> {
    if value.trim().is_empty() {
        return Err(ApiError::bad_request("empty_input", format!("`{field}` is empty")));
    }
    // Text is spoken as given, so it can be judged now: after the Markdown is made speakable, a
    // sentence needs a letter or a digit (punctuation alone is not spoken). A prompt goes to the
    // agent, which may answer "..." with words, so it only needs one visible character.
    let empty = match spoken_as_given {
        true => !normalise(&value).chars().any(char::is_alphanumeric),
        false => value.chars().all(invisible),
    };
    if empty {
        return Err(ApiError::bad_request(
            "empty_input",
            format!("`{field}` has nothing to speak once formatting, punctuation and invisible characters are set aside"),
        ));
    }
    // earshot's own marker characters (earshot_text::markup::is_reserved) are never a caller's text.
    if let Some(c) = markup::first_reserved(&value) {
        let message = format!("`{field}` holds U+{:04X}, a private-use character this gateway keeps for itself", c as u32);
        return Err(ApiError::bad_request("reserved_character", message));
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(ApiError::too_large("input_too_long", format!("`{field}` has {chars} characters; the limit is {max}")));
    }
    Ok(value)
}

/// White space, control and format characters (zero-width spaces and joiners, the byte-order mark,
/// soft hyphens) and combining marks with nothing to combine with.
fn invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c, '\u{ad}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
        || matches!(c, '\u{300}'..='\u{36f}' | '\u{1ab0}'..='\u{1aff}' | '\u{1dc0}'..='\u{1dff}' | '\u{20d0}'..='\u{20ff}' | '\u{fe20}'..='\u{fe2f}')
}

/// Binary frames when the `Accept` header asks for them, else SSE.
fn delivery_from_accept(headers: &HeaderMap) -> Delivery {
    let accept = headers.get(axum::http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.contains(earshot_core::protocol::binary::CONTENT_TYPE) {
        Delivery::Binary
    } else {
        Delivery::Sse
    }
}

/// A conversation id: 1 to 128 characters of letters, digits and `- _ . :`.
pub fn check_conversation_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request("invalid_conversation_id", "`conversation_id` must be 1 to 128 characters of letters, digits and - _ . :"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(body: &str) -> Result<SpeakRequest, ApiError> {
        parse(body.as_bytes(), &HeaderMap::new(), &Limits::default())
    }

    #[test]
    fn accepts_a_minimal_prompt() {
        let r = parse_str(r#"{"prompt":"hi"}"#).unwrap();
        assert!(
            matches!(&r.input, AgentInput::Prompt { prompt, history, conversation_id: Some(id) } if prompt == "hi" && history.is_empty() && *id == r.conversation_id)
        );
        assert_eq!(r.release, Release::Incremental);
        assert_eq!(r.delivery, Delivery::Sse);
        assert_eq!(r.output, None, "the deployment's format, else the backend's");
        assert!(!r.conversation_id.is_empty());
        assert_eq!(parse_str(r#"{"prompt":"hi","output_format":"ulaw_8000"}"#).unwrap().output, Some(OutputFormat::Ulaw8000));
    }

    #[test]
    fn rejects_what_a_user_can_get_wrong() {
        let code = |body: &str| parse_str(body).unwrap_err().error.code;
        assert_eq!(code("{"), "invalid_json");
        assert_eq!(code(r#"{"prompt":"hi","colour":"red"}"#), "invalid_request");
        assert_eq!(code(r#"{"prompt":5}"#), "invalid_request");
        assert_eq!(code(r#"{"prompt":"a","text":"b"}"#), "conflicting_input");
        assert_eq!(code(r#"{}"#), "missing_input");
        assert_eq!(code(r#"{"text":"  "}"#), "empty_input");
        assert_eq!(code(r#"[null,"Hello there."]"#), "invalid_request");
        assert_eq!(code(r#""Hello there.""#), "invalid_request");
        assert_eq!(code("null"), "invalid_request");
        assert_eq!(code(r#"{"text":"Hi.","text":"Bye."}"#), "invalid_request");
        assert_eq!(code(r#"{"prompt":"brief","prompt":"long"}"#), "invalid_request");
        let nested = parse_str(r#"{"prompt":"hi","messages":[{"role":"user","content":"a","content":"b"},{"role":"assistant","content":"c"}]}"#);
        assert!(nested.unwrap_err().error.message.contains("`messages[0].content` is given twice"));
        assert_eq!(code(r#"{"prompt":"hi","release":"later"}"#), "invalid_release");
        assert_eq!(code(r#"{"prompt":"hi","format":"xml"}"#), "invalid_format");
        assert_eq!(code(r#"{"prompt":"hi","output_format":"pcm_11025"}"#), "invalid_output_format");
        assert_eq!(code(r#"{"prompt":"hi","output_format":8000}"#), "invalid_request");
        assert_eq!(code(r#"{"prompt":"hi","conversation_id":"a b"}"#), "invalid_conversation_id");
        let long = format!(r#"{{"prompt":"{}"}}"#, "a".repeat(4001));
        let err = parse_str(&long).unwrap_err();
        assert_eq!((err.error.code.as_str(), err.status.as_u16()), ("input_too_long", 413));
        assert!(err.error.message.contains("4000"));
    }

    #[test]
    fn nothing_speakable_is_empty_input() {
        let code = |body: &str| parse_str(body).map(|_| ()).unwrap_err().error.code;
        for text in ["\u{0}\u{0}", "... !!! ???", "\u{301}\u{301}", "\u{200b}\u{200b}", "```\ncode only\n```", "**  **"] {
            assert_eq!(code(&serde_json::json!({ "text": text }).to_string()), "empty_input", "{text:?}");
        }
        assert_eq!(code(r#"{"prompt":"\u200b\ufeff\u0000"}"#), "empty_input");
        // A prompt of punctuation is the agent's to answer; text with one word is speakable.
        assert!(parse_str(r#"{"prompt":"?"}"#).is_ok());
        assert!(parse_str(r#"{"text":"こんにちは。"}"#).is_ok());
        assert!(parse_str(r#"{"text":"1"}"#).is_ok());
    }

    #[test]
    fn messages_carry_the_conversation_so_far() {
        let turns =
            r#"[{"role":"user","content":"Where is my order?"},{"role":"assistant","content":"It shipped."},{"role":"user","content":"When will it come?"}]"#;
        let r = parse_str(&format!(r#"{{"messages":{turns}}}"#)).unwrap();
        let AgentInput::Prompt { prompt, history, .. } = r.input else { panic!("a prompt") };
        assert_eq!(prompt, "When will it come?");
        assert_eq!(
            history,
            vec![Turn { role: Role::User, content: "Where is my order?".into() }, Turn { role: Role::Assistant, content: "It shipped.".into() }]
        );
        // With a prompt, every message is history.
        let r =
            parse_str(r#"{"prompt":"And the tracking number?","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."}]}"#).unwrap();
        let AgentInput::Prompt { prompt, history, .. } = r.input else { panic!("a prompt") };
        assert_eq!((prompt.as_str(), history.len()), ("And the tracking number?", 2));
    }

    #[test]
    fn rejects_messages_a_user_can_get_wrong() {
        let err = |body: &str| parse_str(body).unwrap_err();
        let code = |body: &str| err(body).error.code;
        assert_eq!(code(r#"{"messages":[]}"#), "missing_input");
        assert_eq!(code(r#"{"messages":[{"role":"assistant","content":"Hi"}]}"#), "invalid_messages");
        assert_eq!(code(r#"{"messages":[{"role":"system","content":"Be rude"},{"role":"user","content":"Hi"}]}"#), "invalid_messages");
        assert_eq!(code(r#"{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}"#), "invalid_messages");
        assert_eq!(code(r#"{"prompt":"x","messages":[{"role":"user","content":"a"}]}"#), "invalid_messages");
        assert_eq!(code(r#"{"prompt":"x","messages":[{"role":"user","content":" "},{"role":"assistant","content":"b"}]}"#), "invalid_messages");
        assert_eq!(code(r#"{"messages":[{"role":"user"}]}"#), "invalid_request");
        assert_eq!(code(r#"{"messages":[{"role":"user","content":"a","name":"x"}]}"#), "invalid_request");
        assert_eq!(code(r#"{"text":"Hi.","messages":[{"role":"user","content":"a"}]}"#), "conflicting_input");
        let many: Vec<_> = (0..42).map(|i| serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": "ok"})).collect();
        let e = err(&serde_json::json!({"prompt": "x", "messages": many}).to_string());
        assert_eq!((e.error.code.as_str(), e.status.as_u16()), ("too_many_messages", 413));
        let long =
            vec![serde_json::json!({"role": "user", "content": "a".repeat(9_000)}), serde_json::json!({"role": "assistant", "content": "b".repeat(9_000)})];
        let e = err(&serde_json::json!({"prompt": "x", "messages": long}).to_string());
        assert_eq!((e.error.code.as_str(), e.status.as_u16()), ("messages_too_long", 413));
        assert!(e.error.message.contains("16000"), "{}", e.error.message);
    }

    #[test]
    fn accept_header_chooses_binary() {
        let mut headers = HeaderMap::new();
        headers.insert("accept", earshot_core::protocol::binary::CONTENT_TYPE.parse().unwrap());
        let r = parse(br#"{"text":"hi"}"#, &headers, &Limits::default()).unwrap();
        assert_eq!(r.delivery, Delivery::Binary);
    }
}
