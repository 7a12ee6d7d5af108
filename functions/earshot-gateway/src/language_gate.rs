//! The answer's language, read from its first sentence where the request and the prompt did not tell it.
//!
//! The voice is chosen when the conversation starts, before the agent's first word ([`crate::conversation`]):
//! from the request's `language`, else from the text or the prompt. A prompt of a word or two (`hi`, `brief`)
//! tells nothing, and an agent may answer in another language than it was asked in. For such a conversation
//! this relay sits between the scheduler and the session until the answer's first sentence and detects its
//! language ([`decide`]). Where routing for it gives another backend or voice, the relay opens that session
//! and hands the sentence to it; where the same voice speaks it but its front end must be told (French read
//! as French, not as English; the spoken forms of French and Mandarin), every sentence goes with the
//! language. Either way the client is told in a second `session`, before any audio (`backend_reason`
//! `language` for a new session). Otherwise nothing changes. The voice is settled before the first audio:
//! a conversation never changes voice mid-answer.
//!
//! What it costs: nothing where the first sentence is in the language the voice was chosen for; one
//! session's opening before the first audio where another voice must speak it.
//!
//! After the first sentence the relay only forwards, with one task each way, so that neither direction ever
//! waits on the other and the bounded channels on both sides keep their backpressure.

use std::sync::Arc;

use earshot_core::language::{self, Language};
use earshot_core::protocol::AudioFormat;
use earshot_core::protocol::BackendReason;
use earshot_core::speech::Switch;
use earshot_core::speech::{SpeechCommand, SpeechError, SpeechEvent, SpeechSession};
use earshot_core::text::spoken;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Claims;
use crate::config::Gateway;
use crate::owner::Owner;
use crate::request::SpeakRequest;
use crate::route::{open, route};

/// The relay's channels: small, as the session's own channels already buffer.
const GATE_CHANNEL: usize = 8;

/// What the relay needs to route the conversation again for the language it turns out to be in.
pub(crate) struct Reroute {
    pub gw: Arc<Gateway>,
    pub request: SpeakRequest,
    pub scope: Option<Claims>,
    pub owner: Owner,
    /// The backend, voice and audio format the conversation opened with.
    pub backend: String,
    pub voice: String,
    pub format: AudioFormat,
    pub cancel: CancellationToken,
}

/// What the first sentence's language calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing: the session speaks it as it should without being told.
    Keep,
    /// The same backend and voice, told the language with each sentence (for its front end and the
    /// spoken forms), and the client told in a second `session`.
    Tell,
    /// Another backend or voice: a new session, opened for the language.
    Reopen,
}

/// What a conversation opened as `backend` in `voice` needs for a first sentence in `language`, routed
/// for it to `routed` (backend, voice): another session where the backend or voice differs; the language
/// told where the spoken forms have rules for it or the voice's own reading would take another language
/// (the Kokoro container, told no language, reads Latin script as English, Han as Chinese, kana as
/// Japanese); nothing otherwise.
pub(crate) fn decide(backend: &str, voice: &str, routed: (&str, &str), language: &Language, text: &str) -> Decision {
    if routed != (backend, voice) {
        Decision::Reopen
    } else if spoken::has_rules(language) || language::read_by_script(text) != *language {
        Decision::Tell
    } else {
        Decision::Keep
    }
}

/// Puts the relay between the scheduler and `session`; see the module docs.
pub(crate) fn wrap(session: SpeechSession, reroute: Reroute) -> SpeechSession {
    let (commands, from_scheduler) = mpsc::channel(GATE_CHANNEL);
    let (to_scheduler, events) = mpsc::channel(GATE_CHANNEL);
    let (format, voice) = (session.format.clone(), session.voice.clone());
    let tasks = reroute.gw.tasks().clone();
    tasks.spawn(relay(session, reroute, from_scheduler, to_scheduler));
    SpeechSession { commands, events, format, voice }
}

async fn relay(mut current: SpeechSession, reroute: Reroute, mut from_scheduler: mpsc::Receiver<SpeechCommand>, to_scheduler: mpsc::Sender<SpeechEvent>) {
    // The scheduler's first command is the first sentence (or `Finish`, for an answer with none): no audio
    // can come before it.
    let first = tokio::select! {
        _ = reroute.cancel.cancelled() => return,
        first = from_scheduler.recv() => first,
    };
    let Some(mut first) = first else { return };
    let mut told = None;
    if let SpeechCommand::Speak(request) = &first {
        if let Some(language) = language::detect(&request.text) {
            match switch_for(&reroute, &language, &request.text).await {
                Ok(None) => {}
                Ok(Some((session, switch))) => {
                    tracing::info!(conversation = %reroute.request.conversation_id, "language_detected: the answer is in {language}; {} speaks it in {}", switch.backend, switch.voice);
                    // A new session replaces the old, which is dropped here and so cancelled.
                    if let Some(session) = session {
                        current = session;
                    }
                    told = Some(language);
                    if to_scheduler.send(SpeechEvent::Switched(switch)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(conversation = %reroute.request.conversation_id, "the answer is in {language}, but {}: {}; it stays with {}", e.code, earshot_core::redact::redact(&e.message), reroute.backend)
                }
            }
        }
    }
    let tell = move |command: &mut SpeechCommand| {
        if let (SpeechCommand::Speak(request), Some(language)) = (command, &told) {
            request.language = Some(language.clone());
        }
    };
    tell(&mut first);
    let SpeechSession { commands, mut events, .. } = current;
    if commands.send(first).await.is_err() {
        return;
    }
    reroute.gw.tasks().spawn(async move {
        while let Some(mut command) = from_scheduler.recv().await {
            tell(&mut command);
            if commands.send(command).await.is_err() {
                return;
            }
        }
    });
    while let Some(event) = events.recv().await {
        if to_scheduler.send(event).await.is_err() {
            return;
        }
    }
}

/// The switch `language` calls for (with the new session, for a reopening), or `None` when nothing
/// changes. A language no backend here speaks is set aside (`None`), as at the start.
async fn switch_for(reroute: &Reroute, language: &Language, text: &str) -> Result<Option<(Option<SpeechSession>, Switch)>, SpeechError> {
    let gw = &reroute.gw;
    let mut request = reroute.request.clone();
    request.language = Some(language.clone());
    let Ok(routed) = route(gw, &request, reroute.scope.as_ref(), &reroute.owner) else { return Ok(None) };
    let first = &routed.arms[0];
    let cause = SpeechError::new("language_detected", format!("the answer is in {language}"), false);
    match decide(&reroute.backend, &reroute.voice, (first.backend.name(), &first.voice), language, text) {
        Decision::Keep => Ok(None),
        Decision::Tell => {
            let format = reroute.format.clone();
            let switch =
                Switch { backend: reroute.backend.clone(), voice: reroute.voice.clone(), format, cause, reason: None, language: Some(language.clone()) };
            Ok(Some((None, switch)))
        }
        Decision::Reopen => {
            let opened = open(gw, &routed, &reroute.owner, &reroute.request.conversation_id, &reroute.cancel)
                .await
                .map_err(|e| SpeechError::new(&e.error.code, e.error.message, false))?;
            let switch = Switch {
                backend: opened.backend.clone(),
                voice: opened.session.voice.clone(),
                format: opened.session.format.clone(),
                cause,
                reason: Some(BackendReason::Language),
                language: Some(language.clone()),
            };
            Ok(Some((Some(opened.session), switch)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(tag: &str) -> Language {
        Language::parse(tag).unwrap()
    }

    #[test]
    fn another_session_where_the_voice_changes_and_the_language_told_where_it_matters() {
        // English on the voice chosen for it: nothing to do.
        assert_eq!(decide("kokoro", "af_heart", ("kokoro", "af_heart"), &lang("en"), "Sure, here it is."), Decision::Keep);
        // French: another voice on the same arm, or another arm.
        assert_eq!(decide("kokoro", "af_heart", ("kokoro", "ff_siwis"), &lang("fr"), "Bien sûr, la voici."), Decision::Reopen);
        assert_eq!(decide("polly", "ruth", ("polly", "lea"), &lang("fr"), "Bien sûr, la voici."), Decision::Reopen);
        assert_eq!(decide("polly", "ruth", ("kokoro", "zf_xiaobei"), &lang("zh"), "好的，马上来。"), Decision::Reopen);
        // The same voice (a local container's one voice pack): told, since it would read French as English
        // and the spoken forms have French rules; Mandarin for its spoken forms.
        assert_eq!(decide("kokoro", "jf_alpha", ("kokoro", "jf_alpha"), &lang("fr"), "Bien sûr, la voici."), Decision::Tell);
        assert_eq!(decide("kokoro", "zf_xiaobei", ("kokoro", "zf_xiaobei"), &lang("zh"), "运费是¥12.5。"), Decision::Tell);
        // German has no spoken-form rules, but Latin script would be read as English.
        assert_eq!(decide("kokoro", "jf_alpha", ("kokoro", "jf_alpha"), &lang("de"), "Guten Tag."), Decision::Tell);
    }
}
