//! The speed probe that the timing-sensitive tests derive their limits from (`earshot_e2e::Speed`):
//! measured on a real container, it must see a container made slower on purpose as slower, and the
//! limits it derives must grow with it, so that a slow machine gets longer limits rather than failures.

use std::time::Duration;

use earshot_e2e::{Kokoro, Speed};

#[tokio::test]
async fn a_slower_container_measures_slower_and_gets_longer_limits() {
    let shared_container = Kokoro::shared();
    shared_container.speed().await;
    // Three times as slow as the shared container, whatever slowdown the whole suite runs under.
    let suite_slowdown: f64 = std::env::var("KOKORO_SLOWDOWN").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
    let slowdown = format!("{}", suite_slowdown * 3.0);
    let slowed_container = Kokoro::start_with(None, &[("KOKORO_SLOWDOWN", slowdown.as_str())]);
    let slowed = slowed_container.speed().await;
    // The shared container measured again beside the slowed one, under the same load: its kept measure
    // was taken while the rest of the suite may have been running, and would compare unlike with like.
    shared_container.wait_idle(Duration::from_secs(60)).await;
    let shared = Speed::measure(&shared_container.url).await;
    eprintln!("probe: shared {:?}, three times slower {:?}", shared.probe, slowed.probe);
    assert!(slowed.probe > shared.probe * 2, "a container three times slower measured {:?} against {:?}", slowed.probe, shared.probe);
    // The limits follow: longer than the shared container's, and than the fixed figure.
    let limit = Duration::from_secs(1);
    assert!(slowed.scaled(limit) > shared.scaled(limit), "{:?} vs {:?}", slowed.scaled(limit), shared.scaled(limit));
    // Measured once per container, then kept.
    assert_eq!(slowed_container.speed().await, slowed);
}
