//! The whole gateway over HTTP, with no model: when the voice falls behind, the scheduler stops
//! pulling from the agent instead of holding its answer in memory, and a client that goes away ends
//! the backend session. The backend is the synthetic real-time voice, slowed down, so that the agent
//! is much faster than speech.

#![allow(clippy::disallowed_methods)] // a test spawns its own helpers; clippy.toml keeps the crates on the tracker

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::serve;
use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_gateway::{Gateway, GatewaySettings};

fn agent(tokens_per_second: f64) -> ScriptedAgent {
    ScriptedAgent::new(ScriptedConfig { tokens_per_second, first_token_delay: Duration::ZERO, ..Default::default() })
}

#[tokio::test]
async fn a_slow_voice_throttles_a_fast_agent() {
    let sentence = "This sentence is about forty characters. ";
    let answer = sentence.repeat(40);
    let voice = SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(20), chars_per_second: 400.0, ..Default::default() });
    let gateway = Gateway::new(
        vec![Arc::new(voice)],
        Arc::new(agent(2000.0)),
        GatewaySettings {
            scheduler: earshot_core::scheduler::SchedulerConfig { max_in_flight: 2, ..Default::default() },
            metrics_namespace: None,
            ..Default::default()
        },
    );
    let url = serve(gateway).await;

    let r = speak(&url, &SpeakBody { text: Some(answer.clone()), ..Default::default() }, &CallOptions::default()).await.unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);

    // Text the scheduler had pulled from the agent when the first sentence finished speaking.
    let mut pulled = String::new();
    for event in &r.events {
        match event {
            ServerEvent::Text(t) => pulled.push_str(&t.text),
            ServerEvent::SentenceEnd(_) => break,
            _ => {}
        }
    }
    // Two sentences at the voice, one waiting, the agent's channel of 16 tokens: far from the whole
    // answer, which the agent could have written in a fraction of a second.
    assert!(pulled.len() < 8 * sentence.len(), "pulled {} of {} characters before the first sentence ended", pulled.len(), answer.len());

    // And nothing was lost: every sentence was spoken, in order.
    let spoken: Vec<&str> = r.events.iter().filter_map(|e| if let ServerEvent::Sentence(s) = e { Some(s.text.as_str()) } else { None }).collect();
    assert_eq!(spoken.len(), 40);
    assert!(spoken.iter().all(|s| *s == sentence.trim()));
}

#[tokio::test]
async fn a_client_that_goes_away_ends_the_backend_session() {
    let voice = Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(10), chars_per_second: 50.0, ..Default::default() }));
    let gateway = Gateway::new(vec![voice.clone()], Arc::new(agent(1000.0)), GatewaySettings { metrics_namespace: None, ..Default::default() });
    let url = serve(gateway).await;
    let options = CallOptions { stop_after_audio_chunks: Some(2), ..Default::default() };
    let body = SpeakBody { text: Some("A sentence to speak. ".repeat(50)), ..Default::default() };
    // Watch the backend while the client reads: the check below means something only if the
    // session was live.
    let most_live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampler = tokio::spawn({
        let (voice, most_live) = (voice.clone(), most_live.clone());
        async move {
            loop {
                most_live.fetch_max(voice.live_sessions(), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    let r = speak(&url, &body, &options).await.unwrap();
    sampler.abort();
    assert!(r.timeline.is_none(), "the client left early");
    assert_eq!(most_live.load(std::sync::atomic::Ordering::Relaxed), 1, "the session was open while the client read");
    // Fifty sentences at this pace would take twenty seconds; the session ends as soon as the
    // server notices the client is gone.
    let mut live = voice.live_sessions();
    for _ in 0..50 {
        if live == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        live = voice.live_sessions();
    }
    assert_eq!(live, 0, "no backend session outlives its conversation");

    // A completed conversation leaves nothing behind either.
    let done = speak(&url, &SpeakBody { text: Some("Short.".into()), ..Default::default() }, &CallOptions::default()).await.unwrap();
    assert!(done.timeline.is_some());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(voice.live_sessions(), 0);
}
