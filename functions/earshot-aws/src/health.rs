//! Health checks that cost little however often `/healthz` is polled: each backend asks AWS something
//! real and cheap (Polly: `DescribeVoices`; SageMaker: `DescribeEndpoint`), and the answer, good or bad,
//! is kept for a while. One probe runs at a time; callers that arrive meanwhile wait for its answer
//! instead of sending their own.

use std::future::Future;
use std::time::Duration;

use earshot_core::speech::SpeechError;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long an answer is kept by default: a load balancer or a dashboard polling every few seconds
/// makes one AWS call per backend every half minute.
pub const DEFAULT_HEALTH_TTL: Duration = Duration::from_secs(30);

/// How long one probe may take: the answer is "unhealthy" past it, so that `/healthz` answers well inside
/// the few seconds a load balancer or a dashboard waits.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1800);

/// The last probe's answer and when it was taken.
pub struct CachedHealth {
    ttl: Duration,
    last: Mutex<Option<(Instant, Result<(), SpeechError>)>>,
}

impl CachedHealth {
    /// Nothing cached yet; each answer is kept for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        CachedHealth { ttl, last: Mutex::new(None) }
    }

    /// The cached answer while it is fresh, otherwise `probe`'s (then cached).
    pub async fn check<F, Fut>(&self, probe: F) -> Result<(), SpeechError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), SpeechError>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return answer.clone();
            }
        }
        let answer = probe().await;
        *last = Some((Instant::now(), answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_kept_for_its_ttl_then_asked_again() {
        let cache = CachedHealth::new(Duration::from_secs(30));
        let probes = AtomicU32::new(0);
        let probe = || async {
            let n = probes.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                Err(SpeechError::new("backend_unhealthy", "down", true))
            } else {
                Ok(())
            }
        };
        assert!(cache.check(probe).await.is_err());
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(cache.check(probe).await.is_err(), "the failure is kept, not asked again");
        assert_eq!(probes.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(cache.check(probe).await.is_ok(), "asked again after the TTL");
        assert_eq!(probes.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn callers_that_arrive_during_a_probe_share_its_answer() {
        let cache = std::sync::Arc::new(CachedHealth::new(Duration::from_secs(30)));
        let probes = std::sync::Arc::new(AtomicU32::new(0));
        let mut handles = Vec::new();
        for _ in 0..5 {
            let (cache, probes) = (cache.clone(), probes.clone());
            handles.push(tokio::spawn(async move {
                cache
                    .check(|| async move {
                        probes.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Ok(())
                    })
                    .await
            }));
        }
        for h in handles {
            assert!(h.await.unwrap().is_ok());
        }
        assert_eq!(probes.load(Ordering::SeqCst), 1);
    }
}
