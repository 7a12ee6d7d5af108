//! Memory per request, bounded by construction: generated requests up to the documented sizes (SSML with
//! breaks, sub and say-as, earshot's own marker characters injected raw and as references, plain text,
//! arbitrary JSON bodies up to the 64 KiB body cap, lexicons) go through the whole gateway over HTTP under a
//! counting allocator, with a voice that sends all its audio at once. For each, no single allocation may pass
//! [`LARGEST_ALLOCATION`] and the bytes held at once may not grow past [`PEAK_PER_REQUEST`] over what the
//! process held before it. The client reads and drops what it receives, so that what is counted is the
//! gateway's. Later work (new encoders, longer holds) runs into these bounds here, in `make test`.
//!
//! Measured when written: the largest allocation of any request 512 KiB, the most any request held at once
//! 5.7 MB (the 20,000-character text, 64 MB of audio streamed through).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_gateway::{Gateway, GatewaySettings};
use futures_util::StreamExt;
use proptest::prelude::*;

/// The largest single allocation a request may cause: a few MB.
const LARGEST_ALLOCATION: usize = 4 << 20;
/// The most a request may add to what the process holds at once.
const PEAK_PER_REQUEST: usize = 48 << 20;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
    LARGEST.fetch_max(by, Ordering::Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; the counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for `layout`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller promised for `ptr`, `layout` and `new_size`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one request cost: its largest allocation, and the most it added to what the process held.
#[derive(Debug)]
struct Cost {
    largest: usize,
    peak: usize,
}

/// Sends `body` and reads the whole answer, dropping it as it comes; the status and what it cost.
async fn cost_of(url: &str, body: Vec<u8>) -> (u16, Cost) {
    let client = reqwest::Client::new();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    LARGEST.store(0, Ordering::Relaxed);
    let response = client.post(format!("{url}/v1/speak")).header("content-type", "application/json").body(body).send().await.expect("a response");
    let status = response.status().as_u16();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        drop(chunk.expect("the stream reads to its end"));
    }
    let cost = Cost { largest: LARGEST.load(Ordering::Relaxed), peak: PEAK.load(Ordering::Relaxed).saturating_sub(before) };
    (status, cost)
}

/// A gateway whose voice sends a whole sentence's audio at once (15 characters a second of 24 kHz PCM,
/// so a 20,000-character answer is 64 MB of audio) and whose agent writes as fast as it can.
async fn gateway() -> String {
    let voice = SyntheticBackend::new(SyntheticConfig { first_audio: Duration::ZERO, lead: Duration::from_secs(3_600), ..Default::default() });
    let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 1e6, first_token_delay: Duration::ZERO, ..Default::default() });
    let settings = GatewaySettings { metrics_namespace: None, max_chars_per_owner_hour: None, ..Default::default() };
    common::serve(Gateway::new(vec![Arc::new(voice)], Arc::new(agent), settings)).await
}

/// One piece of a generated SSML document.
fn ssml_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Za-z]{1,12}[ .,]".prop_map(|w| w),
        2 => (0u32..=12_000).prop_map(|ms| format!("<break time=\"{ms}ms\"/>")),
        1 => "[A-Za-z. ]{1,40}".prop_map(|alias| format!("<sub alias=\"{alias}x\">Dr.</sub>")),
        1 => "[A-Z0-9]{1,20}".prop_map(|t| format!("<say-as interpret-as=\"characters\">{t}</say-as>")),
        1 => Just("\u{F8F0}b4000000000\u{F8F1}".to_string()),
        1 => Just("&#xF8F0;&#xF0062;&#xF8F1;".to_string()),
        1 => Just("<prosody rate=\"150%\">fast.</prosody> ".to_string()),
    ]
}

/// Any JSON value, nested, as a body.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z \u{F8F0}]{0,200}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(6, 4_096, 64, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..64).prop_map(serde_json::Value::from),
            prop::collection::btree_map("text|prompt|messages|markup|role|content|[a-z]{1,8}", inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn within(cost: &Cost, what: &str) {
    assert!(cost.largest <= LARGEST_ALLOCATION, "{what}: one allocation of {} bytes", cost.largest);
    assert!(cost.peak <= PEAK_PER_REQUEST, "{what}: {} bytes more held at once", cost.peak);
}

#[test]
fn no_request_up_to_the_documented_sizes_allocates_past_the_bounds() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let url = runtime.block_on(gateway());
    let post = |body: Vec<u8>| runtime.block_on(cost_of(&url, body));
    // Warm: the spoken forms' patterns and the first connection are the process's, not a request's.
    let (status, _) = post(serde_json::to_vec(&serde_json::json!({"text": "Warm up, please. It costs $3.50 today."})).unwrap());
    assert_eq!(status, 200);
    let seen = std::cell::Cell::new((0usize, 0usize));
    let note = |cost: Cost, what: &str| {
        within(&cost, what);
        let (largest, peak) = seen.get();
        seen.set((largest.max(cost.largest), peak.max(cost.peak)));
    };

    // The documented maxima, whole: 20,000 characters of text spoken; a thousand breaks; a body at its cap.
    let longest = "This sentence says something worth hearing. ".repeat(20_000 / 45);
    let (status, cost) = post(serde_json::to_vec(&serde_json::json!({"text": longest})).unwrap());
    assert_eq!(status, 200);
    note(cost, "the longest text");
    let breaks = format!("<speak>{}Hi.</speak>", "<break time=\"10s\"/>".repeat(1_000));
    let (status, cost) = post(serde_json::to_vec(&serde_json::json!({"text": breaks, "markup": "ssml"})).unwrap());
    assert_eq!(status, 400);
    note(cost, "a thousand breaks");
    let most_silence = format!("<speak>{}</speak>", "Hi.<break time=\"10s\"/>".repeat(6));
    let (status, cost) = post(serde_json::to_vec(&serde_json::json!({"text": most_silence, "markup": "ssml"})).unwrap());
    assert_eq!(status, 200);
    note(cost, "a minute of silence");
    let crafted = format!("{{\"text\": [{}]}}", vec!["1"; 21_000].join(","));
    let (status, cost) = post(crafted.as_bytes()[..crafted.len().min(64 * 1024)].to_vec());
    assert_eq!(status, 400);
    note(cost, "a body of array elements at the body cap");

    // Generated: SSML documents, JSON bodies, lexicons.
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() });
    runner
        .run(&prop::collection::vec(ssml_piece(), 1..400), |pieces| {
            let document = format!("<speak>{}</speak>", pieces.concat());
            let (_, cost) = post(serde_json::to_vec(&serde_json::json!({"text": document, "markup": "ssml"})).unwrap());
            note(cost, "an SSML document");
            let plain: String = pieces.concat().replace(['<', '>'], " ");
            let (_, cost) = post(serde_json::to_vec(&serde_json::json!({"text": plain})).unwrap());
            note(cost, "plain text");
            Ok(())
        })
        .unwrap();
    runner
        .run(&json_value(), |value| {
            let mut body = serde_json::to_vec(&value).unwrap();
            body.truncate(64 * 1024);
            let (_, cost) = post(body);
            note(cost, "a JSON body");
            Ok(())
        })
        .unwrap();
    runner
        .run(&prop::collection::vec("[A-Za-z]{1,10} = [a-z ]{1,30}|[A-Za-z]{1,10} = /[a-zæɪ]{1,10}/|\u{F8F0}x = y|[^\n]{0,40}", 0..2_000), |lines| {
            let text = lines.join("\n");
            let before = LIVE.load(Ordering::Relaxed);
            PEAK.store(before, Ordering::Relaxed);
            LARGEST.store(0, Ordering::Relaxed);
            let parsed = earshot_core::text::Lexicon::parse(&text);
            if let Ok(lexicon) = &parsed {
                drop(lexicon.apply("Ask Dr. Smith about the SQL server at 3:30 pm.", None));
            }
            drop(parsed);
            note(Cost { largest: LARGEST.load(Ordering::Relaxed), peak: PEAK.load(Ordering::Relaxed).saturating_sub(before) }, "a lexicon");
            Ok(())
        })
        .unwrap();
    let (largest, peak) = seen.get();
    println!("the largest allocation of any request: {largest} bytes; the most any held at once: {peak} bytes");
}
