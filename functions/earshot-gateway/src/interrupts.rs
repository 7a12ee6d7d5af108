//! Stopping a live conversation on request (`POST /v1/conversations/{id}/interrupt`), wherever it runs.
//!
//! Under `earshot serve` every conversation runs in this process: a registry of live conversations
//! finds it and stops it at once. On Lambda the speaking invocation and the interrupting one are
//! different processes, and AWS documents that a response-streaming function keeps running when its
//! client disconnects ("Response streaming for Lambda functions": the function runs until it returns
//! or times out). So the interrupt is written to a shared [`ConversationStore`], and each speaking
//! conversation watches it at a bounded interval ([`Interrupts::Shared`]).
//!
//! A conversation is also stopped when it runs longer than the configured maximum, so that nothing
//! runs to the function's timeout by accident.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use earshot_core::error::codes as error_codes;
use earshot_core::error::Error;
pub use earshot_core::store::ConversationStore;
use tokio_util::sync::CancellationToken;

/// How interrupts reach a conversation.
#[derive(Clone)]
pub enum Interrupts {
    /// Every conversation runs in this process (`earshot serve`): the registry is the whole truth.
    Local,
    /// Conversations run in other processes too (Lambda): interrupts go through the store, which each
    /// conversation reads every `poll` (a conversation of this process too: the registry is not
    /// consulted, so the path that is tested is the path that runs).
    Shared {
        /// The store interrupts are written to and read from, shared by every process of the deployment.
        store: Arc<dyn ConversationStore>,
        /// How often each conversation reads the store for an interrupt.
        poll: Duration,
    },
    /// No store is configured where one is needed (a Lambda without a table): interrupts are refused
    /// with 501.
    Unavailable,
}

/// A conversation's place in the one cancellation tree (server shutdown → conversation → its agent and
/// backend sessions), with the reason it was stopped, if one was given: the conversation's supervisor
/// ends the stream with that reason.
///
/// Every way a conversation is stopped from outside cancels this token: the server's shutdown (its
/// parent), an interrupt or the maximum length ([`Stopper::stop`], with a reason), and the client
/// going away (the response body's drop guard, no reason: nobody is left to tell).
#[derive(Clone, Default)]
pub struct Stopper {
    token: CancellationToken,
    why: Arc<OnceLock<Error>>,
}

impl Stopper {
    /// A conversation stopped when `parent` is (the server's shutdown).
    pub fn child_of(parent: &CancellationToken) -> Self {
        Stopper { token: parent.child_token(), why: Arc::default() }
    }

    /// The conversation's token: its agent and backend sessions hold children of it.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Stops the conversation with `error` (the first reason given wins).
    pub fn stop(&self, error: Error) {
        let _ = self.why.set(error);
        self.token.cancel();
    }

    /// Waits until the conversation is stopped, for any reason.
    pub async fn stopped(&self) {
        self.token.cancelled().await;
    }

    /// The reason given when it was stopped, if any.
    pub fn why(&self) -> Option<Error> {
        self.why.get().cloned()
    }
}

/// The error a stream ends with when its conversation is interrupted; with how much of the answer the
/// client said it played (`heard_ms`), from which the conversation's ending adds what was heard.
pub fn interrupted(heard_ms: Option<u64>) -> Error {
    Error { heard_ms, ..Error::new(error_codes::INTERRUPTED, "the conversation was interrupted at the client's request", false) }
}

/// Conversations live in this process, by conversation id (a client may reuse an id across turns,
/// so one id can hold more than one).
#[derive(Default)]
pub struct Registry {
    live: Mutex<HashMap<String, Vec<(u64, Stopper)>>>,
    next: AtomicU64,
}

impl Registry {
    /// Registers a conversation; the returned guard removes it when dropped.
    pub fn register(self: &Arc<Self>, id: &str, stopper: Stopper) -> Registered {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.live.lock().expect("the registry").entry(id.to_string()).or_default().push((key, stopper));
        Registered { registry: self.clone(), id: id.to_string(), key }
    }

    /// Stops every live conversation under `id`; says whether there was one.
    pub fn interrupt(&self, id: &str, heard_ms: Option<u64>) -> bool {
        let live = self.live.lock().expect("the registry");
        match live.get(id) {
            Some(stoppers) if !stoppers.is_empty() => {
                for (_, stopper) in stoppers {
                    stopper.stop(interrupted(heard_ms));
                }
                true
            }
            _ => false,
        }
    }
}

/// A conversation's place in the registry, given up when the conversation ends.
pub struct Registered {
    registry: Arc<Registry>,
    id: String,
    key: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut live = self.registry.live.lock().expect("the registry");
        if let Some(stoppers) = live.get_mut(&self.id) {
            stoppers.retain(|(key, _)| *key != self.key);
            if stoppers.is_empty() {
                live.remove(&self.id);
            }
        }
    }
}

/// Watches the shared store for an interrupt of `id` until the conversation stops; a store that
/// cannot be read is logged and read again at the next tick (the conversation goes on).
pub async fn watch(store: Arc<dyn ConversationStore>, id: String, poll: Duration, stopper: Stopper) {
    let mut failures = 0u32;
    loop {
        tokio::select! {
            _ = stopper.token.cancelled() => return,
            _ = tokio::time::sleep(poll) => {}
        }
        match store.interrupted(&id).await {
            Ok(Some(interrupt)) => {
                stopper.stop(interrupted(interrupt.heard_ms));
                return;
            }
            Ok(None) => failures = 0,
            Err(e) => {
                failures += 1;
                if failures == 1 || failures.is_power_of_two() {
                    tracing::warn!(conversation = %id, "cannot read the interrupt store ({} times): {}", failures, earshot_core::redact::redact(&e.to_string()));
                }
            }
        }
    }
}
