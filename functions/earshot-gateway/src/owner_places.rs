//! Live conversations per owner: no one caller may hold more than `max_conversations_per_owner` at
//! once, however many the server or the account's Lambda concurrency would take. Over it, the request
//! is refused `429 too_many_conversations` with `Retry-After`, before any upstream is called.
//!
//! Where every conversation runs in this process (`earshot serve`), a count per owner here is the
//! whole truth. Where conversations run in other processes too (Lambda: one conversation per
//! invocation), the places are kept in the shared store ([`ConversationStore::claim`]), beside the
//! interrupts. The one `local` owner (no token, no IAM caller) has no places of its own: every caller
//! of such a server is that owner, and the server's own cap (`max_conversations`) holds it.
//!
//! A place is given back when the conversation ends, however it ends (its guard is dropped); in the
//! store it also lapses after the conversation's longest life, so a process that died holding one
//! does not hold it for ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use earshot_core::store::ConversationStore;
use earshot_core::tasks::Tasks;

use crate::api_error::ApiError;
use crate::interrupts::Interrupts;
use crate::owner::Owner;

/// The code of a caller refused for holding all its places; its message is earshot's own.
pub const TOO_MANY_CONVERSATIONS: &str = "too_many_conversations";

/// How long a refused caller is asked to wait before retrying.
const RETRY_AFTER_S: u32 = 2;

/// The live conversations of each owner in this process.
#[derive(Debug, Default)]
pub struct LocalPlaces(Mutex<HashMap<String, usize>>);

impl LocalPlaces {
    fn take(self: &Arc<Self>, owner: &str, max: usize) -> Option<OwnerPlace> {
        let mut live = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = live.entry(owner.to_string()).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(OwnerPlace::Local { places: self.clone(), owner: owner.to_string() })
    }

    /// Live conversations of `owner` in this process.
    pub fn live(&self, owner: &str) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(owner).copied().unwrap_or(0)
    }
}

/// One of an owner's places, held until dropped.
pub enum OwnerPlace {
    /// The owner has no places of its own (`local`), or there is no limit.
    Unlimited,
    /// Counted in this process.
    Local {
        /// The counts the place is given back to.
        places: Arc<LocalPlaces>,
        /// The name the place is counted under (the owner's, or a backend's).
        owner: String,
    },
    /// Held in the shared store under `owner`'s key by `token`; given back by a task on `tasks`.
    Shared {
        /// The store holding the place.
        store: Arc<dyn ConversationStore>,
        /// The store's item the place is counted in (the owner's, or a backend's).
        key: String,
        /// What holds the place (an owner's place: the conversation's request id).
        token: String,
        /// Where the task that gives the place back runs.
        tasks: Tasks,
    },
}

impl Drop for OwnerPlace {
    fn drop(&mut self) {
        match self {
            OwnerPlace::Unlimited => {}
            OwnerPlace::Local { places, owner } => {
                let mut live = places.0.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(count) = live.get_mut(owner.as_str()) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        live.remove(owner.as_str());
                    }
                }
            }
            OwnerPlace::Shared { store, key, token, tasks } => {
                let (store, key, token) = (store.clone(), std::mem::take(key), std::mem::take(token));
                tasks.spawn(async move {
                    if let Err(e) = store.release(&key, &token).await {
                        tracing::warn!(
                            "cannot give back an owner's place in the store (it lapses by itself): {}",
                            earshot_core::redact::redact(&e.to_string())
                        );
                    }
                });
            }
        }
    }
}

/// Takes one of `owner`'s places for the conversation `token` (its request id), or refuses with 429.
/// `max` none: no limit. `ttl`: the conversation's longest life, after which a place in the store lapses.
pub async fn take(
    owner: &Owner,
    token: &str,
    max: Option<usize>,
    interrupts: &Interrupts,
    local: &Arc<LocalPlaces>,
    tasks: &Tasks,
    ttl: Duration,
) -> Result<OwnerPlace, ApiError> {
    let Some(max) = max else { return Ok(OwnerPlace::Unlimited) };
    if *owner == Owner::local() {
        return Ok(OwnerPlace::Unlimited);
    }
    let refused = || {
        ApiError::too_many(
            TOO_MANY_CONVERSATIONS,
            format!("this caller already has {max} conversations live, the most one caller may have at once; retry when one ends"),
            RETRY_AFTER_S,
        )
    };
    match claim(owner.as_str(), owner.places_key(), token, max, interrupts, local, tasks, ttl).await {
        Ok(Some(place)) => Ok(place),
        Ok(None) => Err(refused()),
        Err(e) => Err(ApiError::from_upstream(e)),
    }
}

/// One of at most `max` places counted under a name: `local_key` in this process, `shared_key` in the shared
/// store where conversations run in other processes too; `Ok(None)` when all are taken. What an owner's
/// places are made of, and any other count of live conversations a deployment keeps (a backend's).
#[allow(clippy::too_many_arguments)]
pub async fn claim(
    local_key: &str,
    shared_key: String,
    token: &str,
    max: usize,
    interrupts: &Interrupts,
    local: &Arc<LocalPlaces>,
    tasks: &Tasks,
    ttl: Duration,
) -> Result<Option<OwnerPlace>, earshot_core::error::Error> {
    match interrupts {
        Interrupts::Shared { store, .. } => Ok(store.claim(&shared_key, token, max, ttl).await?.then(|| OwnerPlace::Shared {
            store: store.clone(),
            key: shared_key,
            token: token.to_string(),
            tasks: tasks.clone(),
        })),
        _ => Ok(local.take(local_key, max)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_owner_holds_at_most_its_places_and_gets_them_back_as_conversations_end() {
        let local = Arc::new(LocalPlaces::default());
        let tasks = Tasks::new();
        let take = |owner: Owner| {
            let local = local.clone();
            let tasks = tasks.clone();
            async move { take(&owner, "req", Some(2), &Interrupts::Local, &local, &tasks, Duration::from_secs(60)).await }
        };
        let alice = Owner::subject("alice");
        let first = take(alice.clone()).await.expect("a first place");
        let _second = take(alice.clone()).await.expect("a second place");
        let refused = take(alice.clone()).await.err().expect("a third is refused");
        assert_eq!((refused.status.as_u16(), refused.error.code.as_str(), refused.retry_after), (429, "too_many_conversations", Some(2)));
        assert!(take(Owner::subject("bob")).await.is_ok(), "another owner is served");
        drop(first);
        assert_eq!(local.live(alice.as_str()), 1);
        assert!(take(alice.clone()).await.is_ok(), "a place given back is taken again");
        // The one local owner has no places of its own; no limit, no places at all.
        let many: Vec<_> = futures_util::future::join_all((0..10).map(|_| take(Owner::local()))).await;
        assert!(many.iter().all(Result::is_ok));
        let unlimited = super::take(&alice, "req", None, &Interrupts::Local, &local, &tasks, Duration::from_secs(60)).await;
        assert!(matches!(unlimited, Ok(OwnerPlace::Unlimited)));
    }
}
