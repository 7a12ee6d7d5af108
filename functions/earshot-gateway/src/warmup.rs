//! The sentence cache's settings, and its warm-up: the openers an agent starts its answers with,
//! rendered into the cache in the background when the process starts, so that even a deployment's first
//! "Sure." plays below the model's floor.
//!
//! The warm-up never takes a backend from a caller: it renders one sentence at a time, only while no
//! conversation is live in this process, and a conversation that starts while a sentence renders
//! cancels that sentence (it is rendered again once the process is quiet). Under `earshot serve` the
//! warm-up runs at start; on Lambda it begins once the first invocation's conversation has ended (never
//! beside a caller's first sentences), runs in the moments of an invocation when its conversation has
//! ended, until the environment is frozen, and goes on in the next. Each opener is rendered in each
//! backend's default voice, or in the voices the list names; a backend still starting is waited for.
//!
//! The warm-up's sentences are the deployment's declared ones: rendered into the deployment's own part
//! of the cache, which every caller reads and none fills, so a hit there tells a caller nothing of
//! another. It is off where the cache is (`scope` `off`) and under scope `owner`, which shares nothing.

use std::sync::Arc;
use std::time::Duration;

use earshot_core::arm::{open_alone, Arm};
use earshot_core::cache::CacheScope;
use earshot_core::cached_session::CacheUse;
use earshot_core::speech::{SpeechBackend, SpeechCommand, SpeechEvent, SpeechRequest};
use tokio_util::sync::CancellationToken;

use crate::config::Gateway;

/// How often a backend still starting is asked again, and for how long.
const READY_POLL: Duration = Duration::from_millis(500);
const READY_WAIT: Duration = Duration::from_secs(600);

/// The longest one opener may take to render before it is given up.
const RENDER_LIMIT: Duration = Duration::from_secs(60);

/// When the warm-up begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At once (`earshot serve`: the first caller may be minutes away).
    AtOnce,
    /// Once the first conversation has ended (Lambda: the process starts for a caller, whose first
    /// sentences must not share the voice with a render already under way).
    AfterFirstConversation,
}

/// Starts the warm-up in the background; it ends when every opener is rendered, or with the gateway's
/// shutdown. Returns at once.
pub fn start(gw: Arc<Gateway>, begin: Begin) -> Option<tokio::task::JoinHandle<Rendered>> {
    let settings = &gw.settings().cache;
    if settings.scope != CacheScope::Deployment || settings.warmup.openers.is_empty() {
        return None;
    }
    let cache = gw.declared_cache_use()?;
    let tasks = gw.tasks().clone();
    Some(tasks.spawn(async move {
        if begin == Begin::AfterFirstConversation {
            let mut live = gw.live_conversations();
            let shutdown = gw.shutdown().clone();
            tokio::select! {
                _ = shutdown.cancelled() => return Rendered::default(),
                _ = live.wait_for(|n| *n > 0) => {}
            }
        }
        warm(gw, cache).await
    }))
}

/// What the warm-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Sentences rendered into the cache (or found there).
    pub sentences: usize,
    /// Renders cancelled because a conversation started.
    pub stepped_aside: usize,
    /// Sentences given up (a backend that failed or never became ready).
    pub failed: usize,
}

async fn warm(gw: Arc<Gateway>, cache: CacheUse) -> Rendered {
    let mut rendered = Rendered::default();
    let shutdown = gw.shutdown().clone();
    for backend in gw.backends().to_vec() {
        if !ready(&backend, &shutdown).await {
            rendered.failed += 1;
            continue;
        }
        for opener in &gw.settings().cache.warmup.openers {
            let voice = match &opener.voice {
                None => backend.default_voice(),
                Some(v) if backend.voices().iter().any(|x| &x.id == v) => v.clone(),
                Some(_) => continue,
            };
            for sentence in gw.settings().scheduler.sentences_of(&opener.text) {
                loop {
                    if !quiet(&gw, &shutdown).await {
                        return rendered;
                    }
                    match render(&gw, &backend, &voice, &sentence, &cache).await {
                        Render::Done => rendered.sentences += 1,
                        Render::SteppedAside => {
                            tracing::info!("cache warm-up: a conversation started; {sentence:?} waits until none is live");
                            rendered.stepped_aside += 1;
                            continue;
                        }
                        Render::Failed(why) => {
                            tracing::warn!(
                                "cache warm-up: {} could not render {sentence:?} in {voice}: {}",
                                backend.name(),
                                earshot_core::redact::redact(&why.to_string())
                            );
                            rendered.failed += 1;
                        }
                    }
                    break;
                }
            }
        }
    }
    let stats = cache.cache.stats();
    tracing::info!(
        "cache warm-up done: {} sentences rendered ({} renders set aside for callers, {} failed); the cache holds {} sentences, {} KiB",
        rendered.sentences,
        rendered.stepped_aside,
        rendered.failed,
        stats.entries,
        stats.bytes / 1024
    );
    rendered
}

/// Waits until no conversation is live; `false` when the gateway shuts down first.
async fn quiet(gw: &Gateway, shutdown: &CancellationToken) -> bool {
    let mut live = gw.live_conversations();
    tokio::select! {
        _ = shutdown.cancelled() => false,
        quiet = live.wait_for(|n| *n == 0) => quiet.is_ok(),
    }
}

/// Waits until the backend can take a session; `false` when it never does, or on shutdown.
async fn ready(backend: &Arc<dyn SpeechBackend>, shutdown: &CancellationToken) -> bool {
    let deadline = tokio::time::Instant::now() + READY_WAIT;
    while backend.readiness().is_err() {
        if tokio::time::Instant::now() > deadline || shutdown.is_cancelled() {
            return false;
        }
        tokio::time::sleep(READY_POLL).await;
    }
    true
}

enum Render {
    Done,
    /// A conversation started: the render was cancelled, to be done again later.
    SteppedAside,
    Failed(String),
}

/// Renders one sentence through a session with the cache in front, which keeps it when it is whole.
async fn render(gw: &Gateway, backend: &Arc<dyn SpeechBackend>, voice: &str, sentence: &str, cache: &CacheUse) -> Render {
    let cancel = gw.shutdown().child_token();
    let arm = Arm { backend: backend.clone(), voice: voice.to_string() };
    // At the rate conversations with the deployment's output format open the arm at, so that their keys match.
    let rate = crate::route::session_rate(gw.settings().output_format);
    let mut live = gw.live_conversations();
    let work = async {
        let mut session =
            open_alone(&arm, "earshot-cache-warmup", (rate, gw.settings().speaking_rate), Some(cache.clone()), gw.settings().backend_open_timeout, &cancel)
                .await
                .map_err(|e| e.message)?;
        // As a conversation's lexicon layer would send it, so that the key is the one a conversation looks for.
        let text = gw.lexicon().as_ref().map_or_else(|| sentence.to_string(), |l| l.apply(sentence, None).into_owned());
        let request = SpeechRequest { index: 0, text, language: None, rate: None, silence_ms: 0 };
        for command in [SpeechCommand::Speak(request), SpeechCommand::Finish] {
            session.commands.send(command).await.map_err(|_| "the session ended".to_string())?;
        }
        while let Some(event) = session.events.recv().await {
            match event {
                SpeechEvent::Closed { .. } => return Ok(()),
                SpeechEvent::Failed(e) => return Err(e.message),
                _ => {}
            }
        }
        Err("the session ended before its sentence".to_string())
    };
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(RENDER_LIMIT, work) => match outcome {
            Ok(Ok(())) => Render::Done,
            Ok(Err(why)) => Render::Failed(why),
            Err(_) => Render::Failed(format!("no whole sentence within {} s", RENDER_LIMIT.as_secs())),
        },
        _ = live.wait_for(|n| *n > 0) => Render::SteppedAside,
    };
    cancel.cancel();
    outcome
}
