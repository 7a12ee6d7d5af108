//! The one place a conversation changes session: a relay between the scheduler and the live session
//! until the first audio.
//!
//! The scheduler speaks to one [`SpeechSession`] and knows nothing of arms. Two things may call for
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
//! The relay never waits on one side while the other could be waiting on it: it holds at most one
//! event for the scheduler and the commands not yet taken by the session, and selects on both, so the
//! bounded channels on each side keep their backpressure and no cycle of full channels can form.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::arm::{first_that_opens, Arm, OpenWith, Walked};
use crate::error::codes as error_codes;
use crate::language::{self, Language};
use crate::protocol::BackendReason;
use crate::speech::{SpeechCommand, SpeechError, SpeechEvent, SpeechRequest, SpeechSession, Switch};
use crate::text::spoken;

/// The relay's channels: small, since each side's own channel already buffers.
const RELAY_CHANNEL: usize = 8;

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

/// The relay's state: the live session and what it would take to replace it.
pub(crate) struct Switcher {
    pub current: SpeechSession,
    /// The arm whose session `current` is.
    pub current_arm: Arm,
    /// Arms not yet tried: the failover order.
    pub rest: VecDeque<Arm>,
    pub with: OpenWith,
    /// Until the first command: how to route the conversation for its first sentence's language.
    pub settle: Option<LanguageRoute>,
    /// Until the first audio: how to route the conversation for the language of a sentence the voice passed
    /// over; `None`: a sentence passed over stays so.
    pub reroute: Option<LanguageRoute>,
}

impl Switcher {
    /// Puts the relay between the scheduler and the session; see the module docs.
    pub fn spawn(self) -> SpeechSession {
        let (commands, from_scheduler) = mpsc::channel(RELAY_CHANNEL);
        let (to_scheduler, events) = mpsc::channel(RELAY_CHANNEL);
        let (format, voice) = (self.current.format.clone(), self.current.voice.clone());
        let relay = Relay { s: self, unfinished: VecDeque::new(), finishing: false, heard: false, told: None };
        let run = relay.run(from_scheduler, to_scheduler);
        drop(crate::tasks::spawn(run));
        SpeechSession { commands, events, format, voice }
    }
}

struct Relay {
    s: Switcher,
    /// Sentences sent and not finished: what a new session must speak again.
    unfinished: VecDeque<SpeechRequest>,
    /// The scheduler has said `Finish`.
    finishing: bool,
    /// Audio has been passed on: no more switching.
    heard: bool,
    /// The language every sentence is told in, once the first sentence settled it.
    told: Option<Language>,
}

impl Relay {
    async fn run(mut self, mut from_scheduler: mpsc::Receiver<SpeechCommand>, to_scheduler: mpsc::Sender<SpeechEvent>) {
        let mut to_session: VecDeque<SpeechCommand> = VecDeque::new();
        let mut to_send: Option<SpeechEvent> = None;
        let mut failure: Option<SpeechError> = None;
        let mut accepted: Option<SpeechCommand> = None;
        let mut first: Option<(LanguageRoute, SpeechCommand)> = None;
        // A sentence the voice passed over before any audio, while another arm might speak it.
        let mut passed_over: Option<SpeechEvent> = None;
        loop {
            tokio::select! {
                biased;
                _ = self.s.with.cancel.cancelled() => return,
                // The scheduler has ended: whatever the session is doing, let it go.
                _ = to_scheduler.closed() => return,
                permit = to_scheduler.reserve(), if to_send.is_some() => {
                    let Ok(permit) = permit else { return };
                    let event = to_send.take().expect("an event to send");
                    let closed = matches!(event, SpeechEvent::Closed { .. });
                    permit.send(event);
                    if closed {
                        return;
                    }
                }
                permit = self.s.current.commands.reserve(), if !to_session.is_empty() => {
                    // A session that is gone says so on its event channel; its commands are dropped.
                    if let Ok(permit) = permit {
                        permit.send(to_session.pop_front().expect("a command to send"));
                    } else {
                        to_session.clear();
                    }
                }
                // The first command waits for room to announce a switch it may call for.
                command = from_scheduler.recv(), if to_session.is_empty() && (self.s.settle.is_none() || to_send.is_none()) => {
                    // The scheduler let go: dropping the session cancels it.
                    let Some(command) = command else { return };
                    match self.s.settle.take() {
                        Some(route) => first = Some((route, command)),
                        None => accepted = Some(command),
                    }
                }
                event = self.s.current.events.recv(), if to_send.is_none() => match event {
                    Some(SpeechEvent::Failed(e)) if !self.heard && !self.s.rest.is_empty() => failure = Some(e),
                    None if !self.heard && !self.s.rest.is_empty() => {
                        failure = Some(SpeechError::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true));
                    }
                    // Dropping the scheduler's event channel tells it the session is gone.
                    None => return,
                    // Passed over before anything was heard: another arm may speak it (below).
                    Some(event) if !self.heard && self.s.reroute.is_some() && matches!(&event, SpeechEvent::Finished { report, .. } if report.skipped.is_some()) => {
                        passed_over = Some(event);
                    }
                    Some(event) => {
                        match &event {
                            SpeechEvent::Audio { .. } => self.heard = true,
                            SpeechEvent::Finished { index, .. } => self.unfinished.retain(|r| r.index != *index),
                            _ => {}
                        }
                        to_send = Some(event);
                    }
                },
            }
            // Outside the select: its branches borrow the relay.
            if let Some(command) = accepted.take() {
                to_session.push_back(self.accept(command));
            }
            if let Some((route, command)) = first.take() {
                if let SpeechCommand::Speak(request) = &command {
                    to_send = self.settle(&route, &request.text).await.map(SpeechEvent::Switched);
                }
                to_session.push_back(self.accept(command));
            }
            if let Some(event) = passed_over.take() {
                let SpeechEvent::Finished { index, .. } = &event else { unreachable!("only a finished sentence is held") };
                let index = *index;
                match self.reroute_for(index).await {
                    Some(switch) => {
                        to_session = self.unfinished.iter().cloned().map(SpeechCommand::Speak).collect();
                        if self.finishing {
                            to_session.push_back(SpeechCommand::Finish);
                        }
                        to_send = Some(SpeechEvent::Switched(switch));
                    }
                    None => {
                        self.unfinished.retain(|r| r.index != index);
                        to_send = Some(event);
                    }
                }
            }
            if let Some(cause) = failure.take() {
                self.s.with.remember_failed(&self.s.current_arm, &cause);
                let Some(switch) = self.hand_over(&cause, BackendReason::Failover).await else {
                    // Cancelled while opening, or no arm left that opens: the first failure is the answer.
                    if !self.s.with.cancel.is_cancelled() {
                        let _ = to_scheduler.send(SpeechEvent::Failed(cause)).await;
                    }
                    return;
                };
                to_session = self.unfinished.iter().cloned().map(SpeechCommand::Speak).collect();
                if self.finishing {
                    to_session.push_back(SpeechCommand::Finish);
                }
                to_send = Some(SpeechEvent::Switched(switch));
            }
        }
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
        }
        command
    }

    /// What the first sentence's language calls for (see [`decide`]), done: the switch to announce, or
    /// `None` where nothing changes (or a reopening failed, and the conversation stays where it was).
    async fn settle(&mut self, route: &LanguageRoute, text: &str) -> Option<Switch> {
        let language = language::detect(text)?;
        let arms = route(&language).filter(|arms| !arms.is_empty())?;
        let cause = SpeechError::new(LANGUAGE_DETECTED, format!("the answer is in {language}"), false);
        let speaking = self.s.current_arm.backend.name().to_string();
        let conversation = self.s.with.conversation_id.clone();
        match decide(&speaking, &self.s.current.voice, (arms[0].backend.name(), &arms[0].voice), &language, text) {
            Decision::Keep => None,
            Decision::Tell => {
                self.told = Some(language.clone());
                // The same voice goes on; should it fail before the first audio, the language's other arms
                // speak it, opened in it.
                self.s.rest = arms.into_iter().skip(1).collect();
                self.s.with.language = Some(language.clone());
                let (voice, format) = (self.s.current.voice.clone(), self.s.current.format.clone());
                tracing::info!(%conversation, "{LANGUAGE_DETECTED}: the answer is in {language}; {speaking} is told so");
                Some(Switch { backend: speaking, voice, format, cause, reason: None, language: Some(language) })
            }
            Decision::Reopen => {
                let rest = std::mem::replace(&mut self.s.rest, arms.into());
                let spoken = self.s.with.language.replace(language.clone());
                match self.hand_over(&cause, BackendReason::Language).await {
                    Some(switch) => {
                        tracing::info!(%conversation, "{LANGUAGE_DETECTED}: the answer is in {language}; {} speaks it in {}", switch.backend, switch.voice);
                        self.told = Some(language.clone());
                        Some(Switch { language: Some(language), ..switch })
                    }
                    None => {
                        if !self.s.with.cancel.is_cancelled() {
                            tracing::warn!(%conversation, "the answer is in {language}, but no voice for it opened (each arm's cause above); it stays with {speaking}");
                        }
                        self.s.rest = rest;
                        self.s.with.language = spoken;
                        None
                    }
                }
            }
        }
    }

    /// Moves the conversation to an arm that speaks the language of sentence `index`, which the voice passed
    /// over: the switch to announce, or `None` where its language cannot be told, no other arm here speaks it,
    /// or none of those opens (the sentence then stays passed over).
    async fn reroute_for(&mut self, index: u32) -> Option<Switch> {
        let text = self.unfinished.iter().find(|r| r.index == index)?.text.clone();
        let language = language::detect(&text)?;
        let route = self.s.reroute.clone()?;
        let speaking = (self.s.current_arm.backend.name().to_string(), self.s.current.voice.clone());
        let arms: VecDeque<Arm> =
            route(&language)?.into_iter().filter(|a| (a.backend.name(), a.voice.as_str()) != (speaking.0.as_str(), speaking.1.as_str())).collect();
        if arms.is_empty() {
            return None;
        }
        let cause = SpeechError::new(LANGUAGE_DETECTED, format!("a sentence is in {language}, which {} cannot read", speaking.0), false);
        let rest = std::mem::replace(&mut self.s.rest, arms);
        let spoken = self.s.with.language.replace(language.clone());
        let conversation = self.s.with.conversation_id.clone();
        match self.hand_over(&cause, BackendReason::Language).await {
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
                self.s.rest = rest;
                self.s.with.language = spoken;
                None
            }
        }
    }

    /// Opens the next arm that takes the conversation, in place of the current session, walking the
    /// failover order as the start does ([`crate::arm::first_that_opens`]: an arm remembered as sick is
    /// tried last).
    async fn hand_over(&mut self, cause: &SpeechError, reason: BackendReason) -> Option<Switch> {
        let arms = std::mem::take(&mut self.s.rest);
        let Walked { session, arm, rest, .. } = first_that_opens(&self.s.with, arms).await.ok()?;
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
        self.s.current = session;
        self.s.current_arm = arm;
        self.s.rest = rest;
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
