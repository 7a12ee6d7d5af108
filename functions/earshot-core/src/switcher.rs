//! The one place a conversation changes session: a relay between the scheduler and the live session
//! until the first audio.
//!
//! The scheduler speaks to one [`crate::speech::SpeechSession`] and knows nothing of arms. Two things may call for
//! another session before anything is heard, and both are decided here, by one relay:
//!
//! - **A failure** (failover): a session that fails, or vanishes, before any of its audio has been passed
//!   on is replaced by the next arm that opens ([`crate::failover`] gave the relay the arms it did not
//!   use). Every sentence sent and not finished is sent again to the new session, in order (and `Finish`,
//!   if it had been said). Once audio has been heard a failure is the conversation's, as a voice that
//!   changes mid-answer would be worse than an error.
//! - **The first sentence's language**, for a conversation whose language neither the request nor the
//!   prompt told ([`LanguageRoute`], given by whoever routes conversations). The relay holds the first
//!   sentence, detects its language and routes the conversation again for it; what that calls for is
//!   [`decide`]d: nothing; the same session told the language with every sentence (its front end and the
//!   spoken forms); or another backend or voice, opened for the language. Either way the language's other
//!   arms become the failover order, so that a failure before the first audio is spoken in it too. A reopening that fails leaves the conversation where it was. Either way it costs
//!   nothing where the first sentence is in the language the voice was chosen for, and one session's
//!   opening before the first audio where another voice must speak it.
//!
//! - **A sentence the voice passes over** (a script it cannot read: the Kokoro container's
//!   `unsupported_script`) before anything is heard, where the gateway gave a route for it ([`Switcher::reroute`]):
//!   the conversation moves to the first arm that speaks the sentence's language, as for the first sentence's
//!   language, and that arm speaks the sentence and every one after it. After the first audio a sentence the
//!   voice passes over stays passed over: a second voice in the middle of an answer is not offered (see
//!   `docs/protocol.md`, "Languages").
//!
//! Each switch is announced as [`SpeechEvent::Switched`] before any of the new session's audio, so the
//! scheduler tells the client which backend now speaks (a second `session`).
//!
//! It is a layer of the session stack ([`crate::session_stack`]), run by the one relay of
//! [`crate::session_layer`]: the relay's backpressure rule holds it to at most one event for the scheduler
//! and the commands not yet taken by the session, so no cycle of full channels can form.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;

use crate::arm::{first_that_opens, Arm, OpenWith, Walked};
use crate::error::codes as error_codes;
use crate::language::{self, Language};
use crate::protocol::BackendReason;
use crate::session_layer::{Ctx, SessionLayer};
use crate::speech::{SpeechCommand, SpeechError, SpeechEvent, SpeechRequest, Switch};
use crate::text::spoken;

/// The cause a switch for the first sentence's language gives (its log says so too).
pub const LANGUAGE_DETECTED: &str = "language_detected";

/// Routes a conversation again for the language its first sentence is in: the arms that would speak
/// it, in order, or `None` where no backend here speaks it (the language is then set aside, as at the
/// start). The gateway's routing (which backends, which voices, what the caller's token allows) stays
/// the gateway's; the core only asks.
pub type LanguageRoute = Arc<dyn Fn(&Language) -> Option<Vec<Arm>> + Send + Sync>;

/// What the first sentence's language calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: the session speaks it as it should without being told.
    Keep,
    /// The same backend and voice, told the language with each sentence (for its front end and the
    /// spoken forms), and the client told in a second `session`.
    Tell,
    /// Another backend or voice: a new session, opened for the language.
    Reopen,
}

/// What a conversation speaking as `backend` in `voice` needs for a first sentence in `language`, routed
/// for it to `routed` (backend, voice): another session where the backend or voice differs; the language
/// told where the spoken forms have rules for it or the voice's own reading would take another language
/// (the Kokoro container, told no language, reads Latin script as English, Han as Chinese, kana as
/// Japanese); nothing otherwise.
pub fn decide(backend: &str, voice: &str, routed: (&str, &str), language: &Language, text: &str) -> Decision {
    if routed != (backend, voice) {
        Decision::Reopen
    } else if spoken::has_rules(language) || language::read_by_script(text) != *language {
        Decision::Tell
    } else {
        Decision::Keep
    }
}

/// The switcher's rule, as a layer around the live session ([`crate::session_layer`]): what it would take to
/// replace the session, and what a new one must be sent again.
pub(crate) struct Switcher {
    /// The arm whose session is the live one.
    current_arm: Arm,
    /// Arms not yet tried: the failover order.
    rest: VecDeque<Arm>,
    with: OpenWith,
    /// Until the first command: how to route the conversation for its first sentence's language.
    settle: Option<LanguageRoute>,
    /// Until the first audio: how to route the conversation for the language of a sentence the voice passed
    /// over; `None`: a sentence passed over stays so.
    reroute: Option<LanguageRoute>,
    /// Sentences sent and not finished: what a new session must speak again.
    unfinished: VecDeque<SpeechRequest>,
    /// The scheduler has said `Finish`.
    finishing: bool,
    /// Audio has been passed on: no more switching.
    heard: bool,
    /// The language every sentence is told in, once the first sentence settled it.
    told: Option<Language>,
}

#[async_trait]
impl SessionLayer for Switcher {
    type Note = ();

    /// The first command waits for room to announce a switch it may call for.
    fn takes_command(&self, ctx: &Ctx<()>) -> bool {
        self.settle.is_none() || ctx.events_queued() == 0
    }

    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<()>) {
        if let SpeechCommand::Prepare(mut request) = command {
            // Only to a session whose language is settled (the first sentence may still move the answer
            // to another), told the language its sentence will be told; never kept for another session.
            if self.settle.is_none() {
                if let Some(language) = &self.told {
                    request.language = Some(language.clone());
                }
                ctx.send_on(SpeechCommand::Prepare(request));
            }
            return;
        }
        if let Some(route) = self.settle.take() {
            if let SpeechCommand::Speak(request) = &command {
                if let Some(switch) = self.settle(&route, &request.text, ctx).await {
                    ctx.tell(SpeechEvent::Switched(switch));
                }
            }
        }
        let command = self.accept(command);
        ctx.send_on(command);
    }

    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<()>) {
        match event {
            SpeechEvent::Failed(cause) if !self.heard && !self.rest.is_empty() => self.fail_over(cause, ctx).await,
            // Passed over before anything was heard: another arm may speak it.
            SpeechEvent::Finished { index, ref report } if !self.heard && self.reroute.is_some() && report.skipped.is_some() => {
                match self.reroute_for(index, ctx).await {
                    Some(switch) => self.switched(switch, ctx),
                    None => {
                        self.unfinished.retain(|r| r.index != index);
                        ctx.tell(event);
                    }
                }
            }
            event => {
                match &event {
                    SpeechEvent::Audio { .. } => self.heard = true,
                    SpeechEvent::Finished { index, .. } => self.unfinished.retain(|r| r.index != *index),
                    _ => {}
                }
                ctx.tell(event);
            }
        }
    }

    async fn inner_ended(&mut self, ctx: &mut Ctx<()>) {
        if !self.heard && !self.rest.is_empty() {
            self.fail_over(SpeechError::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true), ctx).await;
        } else {
            // Ending tells the scheduler the session is gone.
            ctx.end();
        }
    }
}

impl Switcher {
    pub(crate) fn new(current_arm: Arm, rest: VecDeque<Arm>, with: OpenWith, settle: Option<LanguageRoute>, reroute: Option<LanguageRoute>) -> Self {
        Switcher { current_arm, rest, with, settle, reroute, unfinished: VecDeque::new(), finishing: false, heard: false, told: None }
    }

    /// The session failed before the first audio: the next arm that opens takes over, or the failure is the
    /// answer.
    async fn fail_over(&mut self, cause: SpeechError, ctx: &mut Ctx<()>) {
        self.with.remember_failed(&self.current_arm, &cause);
        match self.hand_over(&cause, BackendReason::Failover, ctx).await {
            Some(switch) => self.switched(switch, ctx),
            None => {
                // Cancelled while opening, or no arm left that opens: the first failure is the answer.
                if !self.with.cancel.is_cancelled() {
                    ctx.tell(SpeechEvent::Failed(cause));
                }
                ctx.end();
            }
        }
    }

    /// A new session took over: every unfinished sentence (and `Finish`, if said) goes to it again, after
    /// the switch is announced.
    fn switched(&mut self, switch: Switch, ctx: &mut Ctx<()>) {
        ctx.clear_commands();
        for request in &self.unfinished {
            ctx.send_on(SpeechCommand::Speak(request.clone()));
        }
        if self.finishing {
            ctx.send_on(SpeechCommand::Finish);
        }
        ctx.tell(SpeechEvent::Switched(switch));
    }

    /// A command from the scheduler on its way to the session: told the settled language, and kept
    /// until finished, for a session that takes over.
    fn accept(&mut self, mut command: SpeechCommand) -> SpeechCommand {
        match &mut command {
            SpeechCommand::Speak(request) => {
                if let Some(language) = &self.told {
                    request.language = Some(language.clone());
                }
                self.unfinished.push_back(request.clone());
            }
            SpeechCommand::Finish => self.finishing = true,
            SpeechCommand::Prepare(_) => {}
        }
        command
    }

    /// What the first sentence's language calls for (see [`decide`]), done: the switch to announce, or
    /// `None` where nothing changes (or a reopening failed, and the conversation stays where it was).
    async fn settle(&mut self, route: &LanguageRoute, text: &str, ctx: &mut Ctx<()>) -> Option<Switch> {
        let language = language::detect(text)?;
        let arms = route(&language).filter(|arms| !arms.is_empty())?;
        let cause = SpeechError::new(LANGUAGE_DETECTED, format!("the answer is in {language}"), false);
        let speaking = self.current_arm.backend.name().to_string();
        let conversation = self.with.conversation_id.clone();
        match decide(&speaking, &ctx.inner().voice, (arms[0].backend.name(), &arms[0].voice), &language, text) {
            Decision::Keep => None,
            Decision::Tell => {
                self.told = Some(language.clone());
                // The same voice goes on; should it fail before the first audio, the language's other arms
                // speak it, opened in it.
                self.rest = arms.into_iter().skip(1).collect();
                self.with.language = Some(language.clone());
                let (voice, format) = (ctx.inner().voice.clone(), ctx.inner().format.clone());
                tracing::info!(%conversation, "{LANGUAGE_DETECTED}: the answer is in {language}; {speaking} is told so");
                Some(Switch { backend: speaking, voice, format, cause, reason: None, language: Some(language) })
            }
            Decision::Reopen => {
                let rest = std::mem::replace(&mut self.rest, arms.into());
                let spoken = self.with.language.replace(language.clone());
                match self.hand_over(&cause, BackendReason::Language, ctx).await {
                    Some(switch) => {
                        tracing::info!(%conversation, "{LANGUAGE_DETECTED}: the answer is in {language}; {} speaks it in {}", switch.backend, switch.voice);
                        self.told = Some(language.clone());
                        Some(Switch { language: Some(language), ..switch })
                    }
                    None => {
                        if !self.with.cancel.is_cancelled() {
                            tracing::warn!(%conversation, "the answer is in {language}, but no voice for it opened (each arm's cause above); it stays with {speaking}");
                        }
                        self.rest = rest;
                        self.with.language = spoken;
                        None
                    }
                }
            }
        }
    }

    /// Moves the conversation to an arm that speaks the language of sentence `index`, which the voice passed
    /// over: the switch to announce, or `None` where its language cannot be told, no other arm here speaks it,
    /// or none of those opens (the sentence then stays passed over).
    async fn reroute_for(&mut self, index: u32, ctx: &mut Ctx<()>) -> Option<Switch> {
        let text = self.unfinished.iter().find(|r| r.index == index)?.text.clone();
        let language = language::detect(&text)?;
        let route = self.reroute.clone()?;
        let speaking = (self.current_arm.backend.name().to_string(), ctx.inner().voice.clone());
        let arms: VecDeque<Arm> =
            route(&language)?.into_iter().filter(|a| (a.backend.name(), a.voice.as_str()) != (speaking.0.as_str(), speaking.1.as_str())).collect();
        if arms.is_empty() {
            return None;
        }
        let cause = SpeechError::new(LANGUAGE_DETECTED, format!("a sentence is in {language}, which {} cannot read", speaking.0), false);
        let rest = std::mem::replace(&mut self.rest, arms);
        let spoken = self.with.language.replace(language.clone());
        let conversation = self.with.conversation_id.clone();
        match self.hand_over(&cause, BackendReason::Language, ctx).await {
            Some(switch) => {
                tracing::info!(%conversation, "{} passed over a sentence in {language}; {} speaks the answer in {}", speaking.0, switch.backend, switch.voice);
                self.told = Some(language.clone());
                // The sentences spoken again go with the language, as every one after them will.
                for request in &mut self.unfinished {
                    request.language = Some(language.clone());
                }
                Some(Switch { language: Some(language), ..switch })
            }
            None => {
                self.rest = rest;
                self.with.language = spoken;
                None
            }
        }
    }

    /// Opens the next arm that takes the conversation, in place of the current session, walking the
    /// failover order as the start does ([`crate::arm::first_that_opens`]: an arm remembered as sick is
    /// tried last).
    async fn hand_over(&mut self, cause: &SpeechError, reason: BackendReason, ctx: &mut Ctx<()>) -> Option<Switch> {
        let arms = std::mem::take(&mut self.rest);
        let Walked { session, arm, rest, .. } = first_that_opens(&self.with, arms).await.ok()?;
        if reason == BackendReason::Failover {
            tracing::warn!("{}: {}; continuing on {}", cause.code, crate::redact::redact(&cause.message), arm.backend.name());
        }
        let switch = Switch {
            backend: arm.backend.name().to_string(),
            voice: session.voice.clone(),
            format: session.format.clone(),
            cause: cause.clone(),
            reason: Some(reason),
            language: None,
        };
        // The old session is dropped here, which cancels it.
        ctx.replace_inner(session);
        self.current_arm = arm;
        self.rest = rest;
        Some(switch)
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
