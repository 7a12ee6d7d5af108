//! The shared record of live conversations and their interrupts, for gateways whose conversations run
//! in more than one process (Lambda: the invocation that speaks is not the one that interrupts).
//!
//! The trait lives in the core so that the HTTP gateway (which reads it) and the AWS adapter (which
//! implements it on DynamoDB) depend on it without depending on each other.

use std::time::Duration;

use async_trait::async_trait;

use crate::budget::Reservation;
use crate::error::Error;

/// An interrupt as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interrupt {
    /// How much of the answer's audio the client said it played.
    pub heard_ms: Option<u64>,
}

/// The shared record of live conversations and their interrupts (DynamoDB on Lambda).
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// Records `id` as live for at most `ttl`; `token` names this conversation among any others that
    /// reuse the id.
    async fn begin(&self, id: &str, token: &str, ttl: Duration) -> Result<(), Error>;
    /// Marks a live conversation interrupted, with how much of its answer the client played where it
    /// said: `Ok(false)` when no conversation is live under `id`.
    async fn interrupt(&self, id: &str, heard_ms: Option<u64>) -> Result<bool, Error>;
    /// The conversation's interrupt, if it has been interrupted.
    async fn interrupted(&self, id: &str) -> Result<Option<Interrupt>, Error>;
    /// Forgets the conversation begun with `token` (not a later one under the same id): later
    /// interrupts find nothing.
    async fn end(&self, id: &str, token: &str) -> Result<(), Error>;
    /// Takes one of at most `max` places under `key` (an owner's live conversations) for `token`,
    /// held until [`ConversationStore::release`] or for at most `ttl`: `Ok(false)` when all `max` are
    /// held by others that have not lapsed.
    async fn claim(&self, key: &str, token: &str, max: usize, ttl: Duration) -> Result<bool, Error>;
    /// Gives back the place `token` holds under `key` (nothing when it holds none).
    async fn release(&self, key: &str, token: &str) -> Result<(), Error>;
    /// Reserves up to `want` of what `key` (an owner's budget: characters spoken or sent, requests) may
    /// spend in a rolling window of `span_minutes` under `limit`, none unless `at_least` are left
    /// ([`crate::budget::SpendWindow::reserve`]), shared by every process that uses the store. A key is
    /// always used with the same span.
    async fn reserve_chars(&self, key: &str, span_minutes: u64, want: u64, at_least: u64, limit: u64) -> Result<Reservation, Error>;
    /// Gives back what was reserved under `key` (an hour's window) and not spoken, each part in the
    /// minute it was reserved in ([`crate::budget::SpendWindow::refund`]).
    async fn refund_chars(&self, key: &str, grants: &crate::budget::Grants) -> Result<(), Error>;
}
