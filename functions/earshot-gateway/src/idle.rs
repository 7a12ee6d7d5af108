//! The idle and write deadlines of one connection under `earshot serve`: a connection with no request in
//! flight for the idle time is closed, and so is one whose responses have made no write progress for the
//! write time, whatever its protocol.
//!
//! hyper's HTTP/1 server closes a keep-alive connection only when the client does, and its HTTP/2
//! server has no idle deadline at all: a peer that sends the preface and SETTINGS, answers every PING
//! and opens no stream holds its connection slot for ever, and enough of them hold every slot. So each
//! connection carries an [`IdleWatch`]: every request takes a [`Busy`] guard when the service is
//! called and gives it back when its response body is dropped (sent to the end, or the client gone),
//! and the connection's task ends the connection once the watch has seen no request for the idle time.
//!
//! A request in flight that never progresses holds its connection as surely: an HTTP/2 peer that sets its
//! window to zero (`SETTINGS_INITIAL_WINDOW_SIZE=0`) and answers every PING gets its response's headers and
//! never a byte of its body, and an HTTP/1 client that never reads fills the socket's buffer. Either way
//! hyper holds a frame the body gave it and does not ask for the next: so the watch also counts the
//! bodies that gave a frame not yet taken up (hyper asks for the next frame once it has written the last),
//! and when the connection's bodies last moved. A body waiting on earshot (a conversation between sentences)
//! has given nothing and is not waiting on the client; a connection where a frame has waited the write time
//! and no body moved meanwhile is stalled, and its task closes it ([`IdleWatch::stalled_for`]).
//!
//! On HTTP/2 one connection carries many streams, so a connection-wide clock would let a stalled stream
//! live as long as a sibling moves (a peer that gives stream 1 no window and asks `GET /healthz` every 20 s
//! holds stream 1 for ever). Each stream's task therefore runs under a watch of its own
//! ([`watching_stream`]): the body tells both watches, and a stream whose frame waited the write time is
//! ended there (reset), while the connection is closed only when nothing on it moves.
//!
//! Written by hand: neither hyper nor hyper-util offers an idle or a write deadline across both protocols,
//! and the pieces are small (counters, times, a body wrapper).

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
    /// Response bodies holding a frame they gave that has not been taken up: waiting on the client.
    waiting: usize,
    /// When a body of the connection last moved (was asked for a frame, or ended).
    moved: Instant,
}

impl Default for IdleWatch {
    fn default() -> Self {
        let now = Instant::now();
        IdleWatch(Arc::new(Mutex::new(State { in_flight: 0, idle_since: now, waiting: 0, moved: now })))
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

impl IdleWatch {
    /// Completes once a response of the connection has held a frame the client did not take for `limit`,
    /// with no body of the connection moving meanwhile.
    pub async fn stalled_for(&self, limit: Duration) {
        loop {
            let wait = {
                let state = self.state();
                let still = state.moved.elapsed();
                match state.waiting {
                    0 => limit,
                    _ if still >= limit => return,
                    _ => limit - still,
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// A body gave a frame (`true`) or was asked for the next (`false`, what a frame given before waited for).
    fn moved(&self, gave: bool, was_waiting: bool) {
        let mut state = self.state();
        if was_waiting {
            state.waiting = state.waiting.saturating_sub(1);
        }
        if gave {
            state.waiting += 1;
        }
        state.moved = Instant::now();
    }
}

tokio::task_local! {
    /// The watch of the HTTP/2 stream whose task is running, where there is one.
    static STREAM: IdleWatch;
}

/// How much later than its connection's write deadline a stalled stream is reset on its own.
const STREAM_GRACE: Duration = Duration::from_millis(250);

/// Runs `stream` (one HTTP/2 stream's task) under a watch of its own: it ends when its response has
/// held a frame its client did not take for `write_limit`, even while other streams of its connection
/// move. Dropping the stream's task is what resets it.
pub async fn watching_stream<F: std::future::Future>(stream: F, write_limit: Duration) {
    let watch = IdleWatch::default();
    let stalled = watch.clone();
    // A little after the connection's own deadline: where nothing else on the connection moves, the
    // connection is closed whole at the write time (its slot freed, the metric counted), as before.
    let limit = write_limit + STREAM_GRACE;
    tokio::select! {
        _ = STREAM.scope(watch, stream) => {}
        _ = stalled.stalled_for(limit) => {
            tracing::info!("an HTTP/2 stream's client took nothing for {limit:?}: the stream is reset, its connection goes on");
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

/// A response body that keeps its request counted as in flight until the body is dropped (a
/// conversation's stream is a request in flight for as long as it lasts), and tells the watch when it gives
/// a frame and when the next is asked for.
pub struct BusyBody {
    inner: Body,
    busy: Busy,
    /// The watch of the HTTP/2 stream it is the body of, where it is one.
    stream: Option<IdleWatch>,
    /// A frame given and not yet followed by a request for the next.
    given: bool,
}

impl BusyBody {
    /// `inner`, counted as a request in flight on `busy`'s connection until dropped.
    pub fn new(inner: Body, busy: Busy) -> Self {
        BusyBody { inner, busy, stream: STREAM.try_with(IdleWatch::clone).ok(), given: false }
    }
}

impl Drop for BusyBody {
    fn drop(&mut self) {
        if self.given {
            self.busy.0.moved(false, true);
            if let Some(stream) = &self.stream {
                stream.moved(false, true);
            }
        }
    }
}

impl http_body::Body for BusyBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let was_waiting = std::mem::take(&mut self.given);
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let gave = matches!(polled, Poll::Ready(Some(Ok(_))));
        if was_waiting || gave {
            self.busy.0.moved(gave, was_waiting);
            if let Some(stream) = &self.stream {
                stream.moved(gave, was_waiting);
            }
        }
        self.given = gave;
        polled
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

    /// Polls a body once, as hyper does when it wants the next frame.
    fn poll(body: &mut BusyBody) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        use http_body::Body as _;
        let waker = std::task::Waker::noop();
        Pin::new(body).poll_frame(&mut Context::from_waker(waker))
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_the_client_never_takes_stalls_the_connection_and_one_waiting_on_earshot_does_not() {
        let limit = Duration::from_secs(30);
        let watch = IdleWatch::default();
        // A body that gives its frame at once: taken up (asked for the next, which ends it), it never stalls.
        let mut taken = BusyBody::new(Body::from("ok"), watch.busy());
        assert!(matches!(poll(&mut taken), Poll::Ready(Some(Ok(_)))));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(matches!(poll(&mut taken), Poll::Ready(None)));
        // A stream with nothing to give yet (a conversation between sentences): not waiting on the client.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut quiet = BusyBody::new(Body::from_stream(stream), watch.busy());
        assert!(poll(&mut quiet).is_pending());
        let started = Instant::now();
        let stalled = tokio::time::timeout(Duration::from_secs(120), watch.stalled_for(limit)).await;
        assert!(stalled.is_err(), "nothing waits on the client: no stall");
        // Its frame given and never taken up (a zero window): stalled the write time after the last movement.
        tx.send(Ok(Bytes::from_static(b"data"))).await.unwrap();
        assert!(matches!(poll(&mut quiet), Poll::Ready(Some(Ok(_)))));
        let given = Instant::now();
        watch.stalled_for(limit).await;
        assert_eq!(given.elapsed(), limit);
        assert!(started.elapsed() >= Duration::from_secs(120));
        // Taken up at last (or the body dropped), the connection is not stalled any more.
        drop(quiet);
        assert!(tokio::time::timeout(Duration::from_secs(60), watch.stalled_for(limit)).await.is_err());
        drop(tx);
    }
}
