//! Every task a conversation spawns, on one tracker: a server that stops waits for all of them, so that
//! nothing a conversation does after its stream ends (its metric line, clearing the interrupt store,
//! giving back a budget's unspent characters) is cut off, and nothing is left running unseen.
//!
//! The tracker travels with the work rather than through every signature: a task spawned with
//! [`Tasks::spawn`] runs with that [`Tasks`] as its *current* one (a tokio task-local), and every task
//! it spawns in turn with [`spawn`] lands on the same tracker, however deep in the core, an agent or a
//! backend the spawn is. Outside any (a one-shot command, a unit test) [`spawn`] is a plain
//! `tokio::spawn`. mini-redis's shutdown is the model: one signal to stop, one place to wait.
//!
//! A task that waits on something with no end of its own (a sick arm's health probe) also listens to
//! [`stopping`], fired when the server closes the tracker, so that shutdown never waits on it.
//! The compiler holds every crate to it: `clippy.toml` disallows `tokio::spawn`, `Handle::spawn`,
//! `JoinSet::spawn`, a `TaskTracker` of one's own and `std::thread::spawn`, so `make lint` fails on a task
//! started beside this module; the few places that must (this module, the server's connection edge, the
//! backends' readiness watches) say why beside an `#[allow]`.

use std::future::Future;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

tokio::task_local! {
    static CURRENT: Tasks;
}

/// A tracker of tasks and the signal that tells them the server is stopping.
#[derive(Clone, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    stopping: CancellationToken,
}

impl Tasks {
    /// A tracker with no task yet.
    pub fn new() -> Self {
        Tasks::default()
    }

    /// Spawns `future` on this tracker, as the current one of the task and of every task it spawns
    /// with [`spawn`].
    #[allow(clippy::disallowed_methods)] // the tracker itself
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(CURRENT.scope(self.clone(), future))
    }

    /// Runs `future` in place with this tracker as the current one: what it spawns with [`spawn`] is
    /// tracked here.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        CURRENT.scope(self.clone(), future).await
    }

    /// No new task may be tracked from now on, and the ones that wait on [`stopping`] end.
    pub fn close(&self) {
        self.stopping.cancel();
        self.tracker.close();
    }

    /// Waits until every task is done, once [`Tasks::close`] was called.
    pub async fn wait(&self) {
        self.tracker.wait().await
    }

    /// Tasks still running.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    /// Whether no task is running.
    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }
}

/// Spawns `future` on the current task's tracker (see the module docs), or as a plain task outside any.
#[allow(clippy::disallowed_methods)] // the tracker's own door, and its plain spawn outside any tracker
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match CURRENT.try_with(Tasks::clone) {
        Ok(tasks) => tasks.spawn(future),
        Err(_) => tokio::spawn(future),
    }
}

/// The current task's tracker; outside any, one of its own that nobody waits for (what a plain
/// `tokio::spawn` would be).
pub fn current() -> Tasks {
    CURRENT.try_with(Tasks::clone).unwrap_or_default()
}

/// Resolves when the current tracker is closed (the server is stopping); outside any, never.
pub async fn stopping() {
    match CURRENT.try_with(|tasks| tasks.stopping.clone()) {
        Ok(stopping) => stopping.cancelled_owned().await,
        Err(_) => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_task_spawned_deep_inside_a_tracked_one_is_waited_for() {
        let tasks = Tasks::new();
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        tasks.spawn(async move {
            // Two levels down, with no tracker in sight.
            spawn(async move {
                spawn(async move {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    done_tx.send("grandchild").unwrap();
                });
            });
        });
        tokio::task::yield_now().await;
        tasks.close();
        tasks.wait().await;
        assert_eq!(done_rx.try_recv().ok(), Some("grandchild"), "wait returned before the grandchild ended");
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_with_no_end_of_its_own_ends_when_the_tracker_closes() {
        let tasks = Tasks::new();
        tasks.spawn(async {
            spawn(async {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(3600)) => panic!("the probe outlived its server"),
                    _ = stopping() => {}
                }
            });
        });
        tokio::task::yield_now().await;
        let started = tokio::time::Instant::now();
        tasks.close();
        tasks.wait().await;
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test]
    async fn outside_any_tracker_a_spawn_is_a_plain_task_and_stopping_never_comes() {
        assert_eq!(spawn(async { 7 }).await.unwrap(), 7);
        assert!(tokio::time::timeout(Duration::from_millis(20), stopping()).await.is_err());
    }
}
