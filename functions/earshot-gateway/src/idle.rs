//! The idle deadline of one connection under `earshot serve`: a connection with no request in flight
//! for the idle time is closed, whatever its protocol.
//!
//! hyper's HTTP/1 server closes a keep-alive connection only when the client does, and its HTTP/2
//! server has no idle deadline at all: a peer that sends the preface and SETTINGS, answers every PING
//! and opens no stream holds its connection slot for ever, and enough of them hold every slot. So each
//! connection carries an [`IdleWatch`]: every request takes a [`Busy`] guard when the service is
//! called and gives it back when its response body is dropped (sent to the end, or the client gone),
//! and the connection's task ends the connection once the watch has seen no request for the idle time.
//!
//! Written by hand: neither hyper nor hyper-util offers an idle deadline across both protocols, and the
//! pieces are small (a counter, a time, a body wrapper).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::Instant;

/// Requests in flight on one connection, and since when it has had none.
#[derive(Debug, Clone)]
pub struct IdleWatch(Arc<Mutex<State>>);

#[derive(Debug)]
struct State {
    in_flight: usize,
    idle_since: Instant,
}

impl Default for IdleWatch {
    fn default() -> Self {
        IdleWatch(Arc::new(Mutex::new(State { in_flight: 0, idle_since: Instant::now() })))
    }
}

impl IdleWatch {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One request more in flight, until the guard is dropped.
    pub fn busy(&self) -> Busy {
        self.state().in_flight += 1;
        Busy(self.clone())
    }

    /// Completes once the connection has had no request in flight for `limit`.
    pub async fn idle_for(&self, limit: Duration) {
        loop {
            let wait = {
                let state = self.state();
                if state.in_flight > 0 {
                    limit
                } else {
                    let idle = state.idle_since.elapsed();
                    if idle >= limit {
                        return;
                    }
                    limit - idle
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A request in flight on its connection.
#[derive(Debug)]
pub struct Busy(IdleWatch);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
        }
    }
}

/// A response body that keeps its request counted as in flight until the body is dropped: a
/// conversation's stream is a request in flight for as long as it lasts.
pub struct BusyBody {
    inner: Body,
    _busy: Busy,
}

impl BusyBody {
    pub fn new(inner: Body, busy: Busy) -> Self {
        BusyBody { inner, _busy: busy }
    }
}

impl http_body::Body for BusyBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_deadline_counts_from_the_last_request_and_never_runs_while_one_is_in_flight() {
        let watch = IdleWatch::default();
        let limit = Duration::from_secs(60);
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let busy = watch.busy();
        let release = tokio::spawn(async move {
            // A long answer: three idle times in flight.
            tokio::time::sleep(Duration::from_secs(180)).await;
            drop(busy);
        });
        watch.idle_for(limit).await;
        assert_eq!(started.elapsed().as_secs(), 10 + 180 + 60, "idle for the limit after the request ended");
        release.await.unwrap();
        // With no request at all, the limit from the start.
        let fresh = IdleWatch::default();
        let at = Instant::now();
        fresh.idle_for(limit).await;
        assert_eq!(at.elapsed().as_secs(), 60);
    }
}
