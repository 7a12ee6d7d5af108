//! How fast this machine runs the model, and the time limits of the tests that follow from it.
//!
//! A test that expects the model to finish something before a fixed deadline (a drain, a silence of the
//! agent's) holds on the machine it was tuned on and fails on one twice as slow. Such a test asks the
//! container it uses for its [`Speed`] instead: the wall time of one probe sentence rendered whole
//! (`POST /invocations`, the median of three after a warm-up), measured once per container and kept
//! with it. Limits are then derived from the measured speed: never below the fixed figure the test was
//! written with, and longer in proportion on a slower machine (or beside a busy process, or under
//! `KOKORO_SLOWDOWN`).

use std::time::{Duration, Instant};

/// The sentence the probe renders: short, as the answers the timing tests wait for are.
pub const PROBE: &str = "Short and sweet.";

/// The probe's time on the kind of machine the suite's fixed limits were chosen on (2 cores, onnx
/// engine: 1.2 to 2.1 s measured here with curl and the probe itself for the whole 1.1 s of audio through `/invocations`; the streamed
/// path's first audio comes sooner). A machine at or below it keeps the fixed limits.
pub const REFERENCE: Duration = Duration::from_millis(1500);

/// How many times longer than its fixed figure a limit no test is about is allowed for the shared
/// container's queue ([`Speed::queued`]): up to four sentences of a conversation in flight (and two
/// tests at a time where a binary runs without `--test-threads=1`, as `make test-e2e` gives it).
pub const QUEUE_ALLOWANCE: f64 = 4.0;

/// The gateway's backend silence limit by default (`EARSHOT_BACKEND_SILENCE_TIMEOUT_MS`): what a test
/// not about it stretches with [`Speed::queued`].
pub const BACKEND_SILENCE: Duration = Duration::from_secs(15);

/// The measured speed of one container on this machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// The probe sentence's wall time, request sent to the whole WAV received.
    pub probe: Duration,
}

impl Speed {
    /// How many times slower than the reference machine this one is; 1 at or above its speed.
    pub fn factor(&self) -> f64 {
        (self.probe.as_secs_f64() / REFERENCE.as_secs_f64()).max(1.0)
    }

    /// A limit chosen on the reference machine, stretched to this machine's speed (never shortened).
    pub fn scaled(&self, limit: Duration) -> Duration {
        limit.mul_f64(self.factor())
    }

    /// A limit no test here is about (a backend's silence, Polly's wait for a sentence's first audio),
    /// stretched to this machine's speed and to the shared container's queue: a conversation has up to
    /// four sentences in flight (more where tests run side by side), and the container
    /// renders one piece at a time, taking turns, so a sentence may wait behind several of others'
    /// pieces before its first audio. Such a limit only has to catch a backend that never answers; a
    /// busy one must not trip it.
    pub fn queued(&self, limit: Duration) -> Duration {
        self.scaled(limit).mul_f64(QUEUE_ALLOWANCE)
    }

    /// About how long `text` takes the model here, by its length in the probe's measure. A lower
    /// bound for longer text (the model's time per call is spread over more characters), an
    /// estimate for text of the probe's length.
    pub fn estimate(&self, text: &str) -> Duration {
        let chars = text.chars().count() as f64 / PROBE.chars().count() as f64;
        // Half the probe's time a probe's length of text: an assumed margin for the model's fixed cost
        // per call (not measured apart), so that longer text is not over-estimated.
        self.probe.mul_f64(chars.max(1.0) * 0.5)
    }

    /// Measures a container's speed at `url` (it must be ready).
    pub async fn measure(url: &str) -> Speed {
        let client = reqwest::Client::new();
        let body = serde_json::json!({ "text": PROBE, "request_id": "speed-probe" }).to_string();
        let render = || async {
            let started = Instant::now();
            let response = client
                .post(format!("{url}/invocations"))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .expect("the speed probe reaches the container");
            assert!(response.status().is_success(), "the speed probe was refused: {}", response.status());
            let wav = response.bytes().await.expect("the probe's audio");
            assert!(wav.len() > 44, "the probe came back without audio");
            started.elapsed()
        };
        // The first render warms the model's caches for this length; it is not counted.
        render().await;
        let mut times = Vec::with_capacity(3);
        for _ in 0..3 {
            times.push(render().await);
        }
        times.sort();
        let speed = Speed { probe: times[1] };
        eprintln!("speed probe at {url}: {:?} for {PROBE:?} (x{:.2} the reference {REFERENCE:?})", speed.probe, speed.factor());
        speed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_move_with_the_measured_speed() {
        let at = |ms| Speed { probe: Duration::from_millis(ms) };
        // As fast as the reference or faster: the fixed limits stand.
        assert_eq!(at(500).scaled(Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(at(1500).scaled(Duration::from_secs(1)), Duration::from_secs(1));
        // Twice as slow: twice as long; four times: four.
        assert_eq!(at(3000).scaled(Duration::from_secs(1)), Duration::from_secs(2));
        assert_eq!(at(6000).scaled(Duration::from_millis(2500)), Duration::from_secs(10));
        // Longer text is estimated to take longer, in proportion to the measured probe.
        let three = "Short and sweet. Short and sweet. Short and sweet.";
        assert!(at(3000).estimate(three) > at(1500).estimate(three));
        assert!(at(1500).estimate(&PROBE.repeat(10)) >= Duration::from_millis(7500));
        // A limit no test is about leaves room for the shared container's queue too.
        assert_eq!(at(1500).queued(BACKEND_SILENCE), Duration::from_secs(60));
        assert_eq!(at(3000).queued(BACKEND_SILENCE), Duration::from_secs(120));
    }
}
