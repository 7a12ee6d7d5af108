//! What a text-to-speech backend offers the scheduler: a session that takes sentences and gives back
//! their audio, in order, as it is produced.
//!
//! A session is two channels, so that sending the next sentence never waits for audio and audio never
//! waits for text. Both are bounded. Dropping the command sender, or cancelling the session's token,
//! cancels the session: the backend stops its work upstream (a `cancel` to the model) and ends. A
//! backend whose service closes idle streams (Polly, after 5 s without text) keeps its own session
//! alive while the agent pauses.

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::language::Language;
use crate::protocol::{AudioFormat, BackendReason, WordTiming};

/// One sentence to speak. `index` is the sentence's place in the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechRequest {
    /// The sentence's index in the answer, from 0.
    pub index: u32,
    /// The sentence exactly as the backend is to read it.
    pub text: String,
    /// The sentence's language where it became known after the session opened (the answer's first
    /// sentence told it); `None`: the session's own ([`SessionOptions::language`]).
    pub language: Option<Language>,
    /// How fast to say this sentence, where an SSML `<prosody rate>` says; `None`: the session's own
    /// ([`SessionOptions::speaking_rate`]).
    pub rate: Option<SpeakingRate>,
    /// Silence a layer outside gives with this sentence (an SSML `<break>`, [`crate::rendering`]), in
    /// milliseconds: no voice makes it, and the owner's budget charges it ([`crate::budget::silence_chars`]).
    pub silence_ms: u32,
}

/// What the scheduler tells a session.
#[derive(Debug, Clone, PartialEq)]
pub enum SpeechCommand {
    /// Speak one more sentence, after those sent before it.
    Speak(SpeechRequest),
    /// The sentence that will most likely be sent next, before it is certain (its full stop has come, the
    /// character that confirms it has not): a session may start on it, and keep what it makes unheard
    /// until a `Speak` of the same index, text and language confirms it (then it is that sentence, already
    /// begun) or another `Speak` of that index replaces it (then it is dropped). Nothing is charged or
    /// heard for it; a session may ignore it. The scheduler prepares only the answer's first sentence.
    Prepare(SpeechRequest),
    /// No more sentences: finish those sent, then close.
    Finish,
}

/// What a session reports.
#[derive(Debug, Clone, PartialEq)]
pub enum SpeechEvent {
    /// A piece of a sentence's audio, in the session's format.
    Audio {
        /// The sentence's index.
        index: u32,
        /// The audio bytes.
        pcm: Bytes,
    },
    /// When words of the sentence are heard, as the voice's own model timed them (milliseconds from the
    /// sentence's first sample): sent before the audio they end in. A backend that sends none has its
    /// words estimated from the audio ([`crate::words`]).
    Words {
        /// The sentence's index.
        index: u32,
        /// The words, in order, each with its start and end.
        words: Vec<WordTiming>,
    },
    /// The sentence's audio is complete (or the backend passed over it: its report says so).
    Finished {
        /// The sentence's index.
        index: u32,
        /// What the backend says of the sentence, where it says anything.
        report: FinishReport,
    },
    /// The session failed and ends; nothing more comes from it.
    Failed(SpeechError),
    /// The session closed after `Finish`, with what the backend billed, if it says.
    Closed {
        /// The characters the backend billed for the session; `None` when it does not say.
        billed_characters: Option<u64>,
    },
    /// What the backend billed for the session, told before a failure that ends it (a session that
    /// closes normally says it in [`SpeechEvent::Closed`]): the character budget's cut turns the close
    /// into a failure, and the characters Polly billed still belong in the conversation's metric line.
    Billed {
        /// The characters the backend billed for the session so far.
        characters: u64,
    },
    /// Another session now speaks the conversation ([`crate::switcher`], before any audio: a failover, or
    /// the language the first sentence settled): the sentences not yet finished will be spoken again by
    /// it, and its audio follows.
    Switched(Switch),
}

/// Why a backend passed over a sentence without speaking it; the rest of the answer goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// Its letters are in a script the voice does not read (the Kokoro container's `unsupported_script`:
    /// Hangul, Cyrillic or Arabic for voices of English, French, Chinese and Japanese).
    UnsupportedScript,
}

impl Skipped {
    /// The code the client sees in the sentence's `sentence_end`.
    pub fn code(&self) -> &'static str {
        match self {
            Skipped::UnsupportedScript => "unsupported_script",
        }
    }
}

/// What a backend says of a sentence it finished, measured on its side.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FinishReport {
    /// How long the backend held the sentence's rendered audio back so that it would play through
    /// without a stop (the Kokoro container's paced plan, on a machine slower than real time); `None`
    /// when the backend does not say.
    pub held_ms: Option<f64>,
    /// The backend's own time to the sentence's first audio, from reading the request to sending the
    /// first audio (the Kokoro container's `queued_seconds + first_audio_seconds`). What the gateway
    /// measures from release to first audio, less this, is what the transport between them added.
    pub own_first_audio_ms: Option<f64>,
    /// The sentence was said before and its audio came from the sentence cache
    /// ([`crate::cached_session`]), not from the model.
    pub cached: bool,
    /// The backend passed over the sentence without speaking it (it has no audio).
    pub skipped: Option<Skipped>,
}

/// Codes a backend gives when it cannot take a conversation now; the gateway answers each before any
/// stream starts (503 with `Retry-After`), or hands the conversation to another backend.
pub mod codes {
    /// Still starting: its model is loading.
    pub const NOT_READY: &str = "backend_not_ready";
    /// Every place for a session is taken (the Kokoro container's `busy`).
    pub const BUSY: &str = "backend_busy";
}

/// A backend failure, as the client will see it in an `error` message.
pub type SpeechError = crate::error::Error;

/// An open session.
pub struct SpeechSession {
    /// Where the scheduler sends sentences and `Finish`; dropping it cancels the session.
    pub commands: mpsc::Sender<SpeechCommand>,
    /// What the session reports: each sentence's audio, words and end, in order.
    pub events: mpsc::Receiver<SpeechEvent>,
    /// The format of the audio the session gives back.
    pub format: AudioFormat,
    /// The voice the session speaks in.
    pub voice: String,
}

/// What a session is opened with.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The voice to speak in: one of the backend's.
    pub voice: String,
    /// The language the conversation is spoken in, where known: a backend whose text front end
    /// depends on it (the Kokoro container's) is told; a voice already fixes it for the others.
    pub language: Option<Language>,
    /// The rate the client plays, where it asked for one: a backend that can produce it (or a rate
    /// nearer it) natively does so (Polly's 8 kHz for telephony); the gateway converts the rest.
    pub sample_rate: Option<u32>,
    /// How fast to speak: the backend's own rate (the Kokoro container's `speed`, Polly's prosody rate);
    /// word timings are those of the audio as spoken.
    pub speaking_rate: SpeakingRate,
    /// The conversation's id, as the client gave it (or as it was generated).
    pub conversation_id: String,
    /// Cancelled when the conversation ends for any reason.
    pub cancel: CancellationToken,
}

/// How fast a voice speaks, as a whole percentage of its normal rate: 50 % to 200 % (`rate` 0.5 to 2.0
/// in a request). Whole percentages, so that it keys the sentence cache exactly and is what Polly's
/// prosody rate takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpeakingRate(u16);

impl SpeakingRate {
    /// The voice's own rate (100 %).
    pub const NORMAL: SpeakingRate = SpeakingRate(100);
    /// The slowest rate offered (0.5).
    pub const MIN: f64 = 0.5;
    /// The fastest rate offered (2.0).
    pub const MAX: f64 = 2.0;

    /// The rate `factor` times the normal one (1.0: normal), to the nearest percent; `Err` with why
    /// outside [`SpeakingRate::MIN`]–[`SpeakingRate::MAX`].
    pub fn from_factor(factor: f64) -> Result<SpeakingRate, String> {
        if !factor.is_finite() || !(Self::MIN..=Self::MAX).contains(&factor) {
            return Err(format!("a speaking rate is from {} to {} (1 is the voice's own), not {factor}", Self::MIN, Self::MAX));
        }
        Ok(SpeakingRate((factor * 100.0).round() as u16))
    }

    /// The rate as a percentage of the normal one (100: normal).
    pub fn percent(self) -> u16 {
        self.0
    }

    /// The rate as a factor of the normal one (1.0: normal).
    pub fn factor(self) -> f32 {
        f32::from(self.0) / 100.0
    }

    /// Whether it is the voice's own rate.
    pub fn is_normal(self) -> bool {
        self == Self::NORMAL
    }
}

impl Default for SpeakingRate {
    fn default() -> Self {
        Self::NORMAL
    }
}

/// A voice a backend offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Voice {
    /// The voice's name, as a request's `voice` names it.
    pub id: String,
    /// The language the voice speaks, as the backend writes it (most often a BCP 47 tag such as `en-US`).
    pub language: String,
    /// A few words on the voice, for people.
    pub description: String,
}

/// A text-to-speech backend.
#[async_trait]
pub trait SpeechBackend: Send + Sync {
    /// The name clients choose it by (`kokoro`, `polly`).
    fn name(&self) -> &str;
    /// The voices it offers, as `GET /v1/voices` lists them.
    fn voices(&self) -> Vec<Voice>;
    /// The voice a request that names none is spoken in.
    fn default_voice(&self) -> String;
    /// Opens a session. Fails before any stream starts when the backend cannot be reached.
    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError>;
    /// Whether the backend answers now.
    async fn health(&self) -> Result<(), SpeechError>;
    /// The languages the backend speaks now, each with the voice it speaks it in when a request names
    /// none. By default, the languages of its voices, each spoken by the default voice where that is
    /// one of them and by the first of them otherwise. Empty while the backend does not know (a
    /// container still starting).
    fn languages(&self) -> Vec<(Language, String)> {
        languages_of(&self.voices(), &self.default_voice())
    }

    /// The voice a request that names none is spoken in `language` with; `None` when the backend
    /// cannot speak it.
    fn voice_for_language(&self, language: &Language) -> Option<String> {
        self.languages().into_iter().find(|(l, _)| l == language).map(|(_, voice)| voice)
    }

    /// Whether `voice` can speak `language`. By default, whether the voice's own language is it.
    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        self.voices().iter().any(|v| v.id == voice && Language::of_voice(&v.language).as_ref() == Some(language))
    }

    /// How the backend reads `text` in `voice`, told `session` when the session opened and `sentence` with
    /// the sentence (where either was told): what the sentence cache keys a sentence's sound by, so that a
    /// sentence read the same way is found whether or not the language was told, and one read another way
    /// is not. By default, the language told (the sentence's, else the session's), else the voice's own.
    fn reading_language(&self, voice: &str, session: Option<&Language>, sentence: Option<&Language>, text: &str) -> Option<Language> {
        let _ = text;
        sentence.or(session).cloned().or_else(|| self.voices().iter().find(|v| v.id == voice).and_then(|v| Language::of_voice(&v.language)))
    }

    /// Whether it speaks blends of its voices ([`crate::voice_blend`]: Kokoro does, from their style vectors).
    fn blends_voices(&self) -> bool {
        false
    }

    /// Whether the backend can take a conversation at all, known without a network call: `Err` with
    /// [`codes::NOT_READY`] while it is still starting (its model loading, its voices unknown).
    fn readiness(&self) -> Result<(), SpeechError> {
        Ok(())
    }
}

/// The languages of `voices`, each with the voice that speaks it by default: `default_voice` where it is
/// one of that language's, else the first of them.
pub fn languages_of(voices: &[Voice], default_voice: &str) -> Vec<(Language, String)> {
    let mut languages: Vec<(Language, String)> = Vec::new();
    for voice in voices {
        let Some(language) = Language::of_voice(&voice.language) else { continue };
        match languages.iter_mut().find(|(l, _)| *l == language) {
            Some((_, chosen)) if voice.id == default_voice => *chosen = voice.id.clone(),
            Some(_) => {}
            None => languages.push((language, voice.id.clone())),
        }
    }
    languages
}

/// The session a conversation now speaks through, after a switch before any audio: a failover, or the
/// answer's first sentence in a language its voice was not chosen for.
#[derive(Debug, Clone, PartialEq)]
pub struct Switch {
    /// The backend that now speaks.
    pub backend: String,
    /// The voice it speaks in.
    pub voice: String,
    /// The format of the audio its session gives back.
    pub format: AudioFormat,
    /// Why the previous session was given up.
    pub cause: SpeechError,
    /// What the second `session` says of why (`failover`, `language`); `None`: the reason stands (the same
    /// session, its language now known).
    pub reason: Option<BackendReason>,
    /// The language the new session speaks, when the switch was for it.
    pub language: Option<Language>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(id: &str, language: &str) -> Voice {
        Voice { id: id.into(), language: language.into(), description: String::new() }
    }

    #[test]
    fn each_language_is_spoken_by_the_default_voice_where_it_is_one_of_its_voices() {
        let voices = [voice("amy", "en-GB"), voice("lea", "fr-FR"), voice("ruth", "en-US"), voice("remi", "fr-FR"), voice("zhiyu", "cmn-CN")];
        let got = languages_of(&voices, "ruth");
        let want: Vec<(Language, String)> =
            [("en", "ruth"), ("fr", "lea"), ("zh", "zhiyu")].into_iter().map(|(l, v)| (Language::parse(l).unwrap(), v.to_string())).collect();
        assert_eq!(got, want);
    }
}
