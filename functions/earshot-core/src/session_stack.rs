//! The layers between the scheduler and a voice, and the one place their order is written.
//!
//! ```text
//! scheduler ─▶ budget ─▶ lexicon ─▶ switcher ─▶ cache ─▶ voice
//! ```
//!
//! From the outside in ([`LAYERS`]):
//! 1. **budget**: the layer the gateway puts outermost ([`outermost`]; the owner's character budget):
//!    a sentence is charged once, as written, whichever arm ends up speaking it.
//! 2. **lexicon** ([`crate::pronouncing`], [`lexicon`]): each sentence rewritten as the deployment's
//!    lexicon says, outside the switcher so that every arm is sent the same words, and the voice's word
//!    timings mapped back to the written words; only where the lexicon has entries.
//! 3. **switcher** ([`crate::switcher`], [`across_arms`]): changes the arm before the first audio, for a
//!    failure or a language; only where there is another arm or a language to settle.
//! 4. **cache** ([`crate::cached_session`], [`per_arm`]): in front of each arm's own session, inside the
//!    switcher, since a hit is that arm's audio and a switch moves to another arm's cache.
//! 5. **voice**: the backend's own session.
//!
//! Each layer is a [`SessionLayer`] run by the one relay of [`crate::session_layer`]; a layer with nothing
//! to do here is left out rather than run idle (one arm, no language to settle: no switcher). The
//! architecture's drawing of the stack (`docs/architecture.md`) is checked against [`LAYERS`] by a test.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cached_session::{self, CacheUse};
use crate::language::Language;
use crate::session_layer::{relay, SessionLayer};
use crate::speech::{SpeakingRate, SpeechBackend, SpeechSession};
use crate::text::Lexicon;

/// The layers from the scheduler to the voice, in their order.
pub const LAYERS: [&str; 5] = ["budget", "lexicon", "switcher", "cache", "voice"];

/// Layer 1: the gateway's outermost layer (the owner's budget) around the conversation's session.
pub fn outermost<L: SessionLayer>(layer: L, session: SpeechSession, cancel: &CancellationToken) -> SpeechSession {
    relay(layer, session, cancel.clone())
}

/// Layer 2: the lexicon ([`crate::pronouncing`]), where it has entries, around the switcher or the one
/// arm's session.
pub(crate) fn lexicon(session: SpeechSession, lexicon: Option<Arc<Lexicon>>, language: Option<Language>, cancel: CancellationToken) -> SpeechSession {
    crate::pronouncing::wrap(session, lexicon, language, cancel)
}

/// Layer 3: the switcher ([`crate::switcher`]) around the live arm's session.
pub(crate) fn across_arms<L: SessionLayer>(switcher: L, session: SpeechSession, cancel: CancellationToken) -> SpeechSession {
    relay(switcher, session, cancel)
}

/// Layer 4: the sentence cache, where one is on, in front of one arm's own session (layer 5).
pub(crate) fn per_arm(
    session: SpeechSession,
    backend: Arc<dyn SpeechBackend>,
    language: Option<Language>,
    rate: SpeakingRate,
    cache: Option<CacheUse>,
    cancel: CancellationToken,
) -> SpeechSession {
    match cache {
        Some(cache) => cached_session::wrap(session, backend, language, rate, cache, cancel),
        None => session,
    }
}
