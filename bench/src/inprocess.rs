//! The benchmarks that need no running service, run in this process: segmenter throughput (with what a
//! pronunciation lexicon adds to each sentence) and the cost of each delivery format.
//!
//! `transport` encodes and decodes a minute of audio as SSE (base64) and as binary frames, and
//! reports bytes on the wire and CPU time per second of audio, at several chunk sizes.
//!
//! `segmenter` pushes a multi-megabyte, LLM-like answer through the segmenter in token-sized chunks
//! (3 to 6 characters, as an agent streams) and reports throughput at several sizes, to show that the
//! work is linear in the text. The text is generated from a fixed seed, so runs are comparable.
//! Written by hand rather than with a harness such as criterion: one timed pass over megabytes of
//! text is the measurement, and the report wants MB/s at several sizes, not per-iteration statistics.

use std::time::Instant;

use bytes::Bytes;
use earshot_core::protocol::{AudioChunk, Decoder, Delivery, ServerEvent};
use earshot_core::text::{Normaliser, Segmenter};
use serde_json::json;

use crate::Rng;

/// The audio of the transport benchmark: 24 kHz mono s16le, as Kokoro speaks, in chunks of
/// `chunk_ms`. The samples are noise-like (not silence), so that base64 has real bytes to encode.
fn audio_events(seconds: f64, chunk_ms: u32) -> Vec<ServerEvent> {
    let chunk_bytes = (24_000 * chunk_ms / 1000 * 2) as usize;
    let total = (seconds * 48_000.0) as usize;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut events = Vec::new();
    let mut made = 0;
    let mut seq = 0;
    while made < total {
        let n = chunk_bytes.min(total - made);
        let pcm: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
        events.push(ServerEvent::Audio(AudioChunk { index: 0, seq, pcm: Bytes::from(pcm) }));
        seq += 1;
        made += n;
    }
    events
}

pub fn transport(seconds: f64, passes: usize) -> serde_json::Value {
    println!("transport: {seconds} s of 24 kHz s16le audio encoded and decoded (best of {passes} passes)");
    println!("{:>9} {:>8} {:>14} {:>10} {:>16} {:>16}", "chunk ms", "format", "bytes/audio s", "overhead", "encode us/aud s", "decode us/aud s");
    let mut rows = Vec::new();
    for chunk_ms in [20u32, 100, 500] {
        let events = audio_events(seconds, chunk_ms);
        let pcm_bytes: usize = events.iter().map(|e| if let ServerEvent::Audio(a) = e { a.pcm.len() } else { 0 }).sum();
        for delivery in [Delivery::Sse, Delivery::Binary] {
            let mut best_encode = f64::MAX;
            let mut best_decode = f64::MAX;
            let mut wire = 0usize;
            for _ in 0..passes {
                let started = Instant::now();
                let frames: Vec<Bytes> = events.iter().map(|e| delivery.encode(e)).collect();
                best_encode = best_encode.min(started.elapsed().as_secs_f64());
                wire = frames.iter().map(Bytes::len).sum();
                // Decoded as a network would hand it over: in 1,400-byte pieces.
                let stream: Vec<u8> = frames.concat();
                let started = Instant::now();
                let mut decoder = Decoder::new(delivery);
                let mut decoded = 0usize;
                for piece in stream.chunks(1400) {
                    for event in decoder.push(piece).expect("the encoder's own frames decode") {
                        if let ServerEvent::Audio(a) = event {
                            decoded += a.pcm.len();
                        }
                    }
                }
                best_decode = best_decode.min(started.elapsed().as_secs_f64());
                assert_eq!(decoded, pcm_bytes, "every byte of audio decodes back");
            }
            let name = match delivery {
                Delivery::Sse => "sse",
                Delivery::Binary => "binary",
            };
            let per_second = |v: f64| v / seconds;
            let row = json!({
                "chunk_ms": chunk_ms,
                "format": name,
                "bytes_per_audio_second": per_second(wire as f64),
                "overhead_pct": (wire as f64 / pcm_bytes as f64 - 1.0) * 100.0,
                "encode_us_per_audio_second": per_second(best_encode * 1e6),
                "decode_us_per_audio_second": per_second(best_decode * 1e6),
            });
            println!(
                "{:>9} {:>8} {:>14.0} {:>9.1}% {:>16.1} {:>16.1}",
                chunk_ms,
                name,
                row["bytes_per_audio_second"].as_f64().unwrap_or_default(),
                row["overhead_pct"].as_f64().unwrap_or_default(),
                row["encode_us_per_audio_second"].as_f64().unwrap_or_default(),
                row["decode_us_per_audio_second"].as_f64().unwrap_or_default()
            );
            rows.push(row);
        }
    }
    json!({ "audio_seconds": seconds, "sample_rate": 24_000, "rows": rows })
}

/// An LLM-like answer: plain prose for the most part, with an abbreviation, a number, a link or a
/// list item in about one sentence of four, and paragraphs.
fn llm_like_text(bytes: usize) -> String {
    const OPENERS: &[&str] = &["Sure.", "Great question!", "Let me check that for you.", "Here is what I found:", "Okay, so"];
    const SUBJECTS: &[&str] = &["The service", "Your order", "This plan", "The team", "It", "The new release", "Our support desk"];
    const VERBS: &[&str] = &["covers", "ships with", "was updated to include", "is described in", "runs", "needs", "supports"];
    const PLAIN: &[&str] = &[
        "everything you asked about in your last message",
        "the features most customers rely on every day",
        "a simple way to move your data between accounts",
        "the settings you changed earlier this week",
        "a few extra steps that we can walk through together",
        "several regions and most of the common languages",
    ];
    const SPECIAL: &[&str] = &[
        "$1,299.99 per year",
        "Jan. 5 at 10:30 a.m.",
        "https://example.com/docs/setup.html",
        "about 3.5 times the baseline",
        "the config file, i.e. settings.toml",
        "help from Dr. Smith in the U.S. office",
        "version 2.10.0 (the latest one)",
    ];
    const ENDS: &[&str] = &[".", ".", ".", "!", "?", ".", "."];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut text = String::with_capacity(bytes + 256);
    while text.len() < bytes {
        match rng.next_u64() % 16 {
            0 => text.push_str(rng.pick(OPENERS)),
            1 => {
                let n = rng.next_u64() % 9 + 1;
                text.push_str(&format!("\n{n}. {} {} {}.", rng.pick(SUBJECTS), rng.pick(VERBS), rng.pick(PLAIN)));
            }
            2 => text.push_str("\n\n"),
            3 | 4 => {
                text.push_str(&format!("{} {} {}{}", rng.pick(SUBJECTS), rng.pick(VERBS), rng.pick(SPECIAL), rng.pick(ENDS)));
            }
            _ => {
                text.push_str(&format!("{} {} {}{}", rng.pick(SUBJECTS), rng.pick(VERBS), rng.pick(PLAIN), rng.pick(ENDS)));
            }
        }
        text.push(' ');
    }
    text
}

/// Token-sized pieces: 3, 4, 5, 6, 3, … characters, cut on character boundaries.
fn token_chunks(text: &str) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(text.len() / 4 + 1);
    let mut start = 0;
    let mut want = 3;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == want {
            pieces.push(&text[start..i]);
            start = i;
            count = 0;
            want = if want == 6 { 3 } else { want + 1 };
        }
        count += 1;
    }
    pieces.push(&text[start..]);
    pieces
}

pub fn segmenter(sizes_mb: &[f64], passes: usize) -> serde_json::Value {
    println!("segmenter throughput: LLM-like text pushed in 3-6 character chunks (best of {passes} passes)");
    println!("{:>8} {:>12} {:>10} {:>10} {:>12} {:>14}", "size MB", "sentences", "seconds", "MB/s", "ns/byte", "normalise+split MB/s");
    let mut first_ns_per_byte = None;
    let mut last_ns_per_byte = None;
    let mut rows = Vec::new();
    for &mb in sizes_mb {
        let bytes = (mb * 1_000_000.0) as usize;
        let text = llm_like_text(bytes);
        let chunks = token_chunks(&text);
        let mut best = f64::MAX;
        let mut sentences = 0;
        for _ in 0..passes {
            let started = Instant::now();
            let mut seg = Segmenter::default();
            let mut n = 0usize;
            for chunk in &chunks {
                n += seg.push(chunk).count();
            }
            n += seg.flush().count();
            best = best.min(started.elapsed().as_secs_f64());
            sentences = n;
        }
        let mut best_both = f64::MAX;
        for _ in 0..passes {
            let started = Instant::now();
            let mut seg = Segmenter::default();
            let mut norm = Normaliser::new();
            for chunk in &chunks {
                let speakable = norm.push(chunk);
                seg.push(&speakable).for_each(drop);
            }
            let rest = norm.flush();
            seg.push(&rest).for_each(drop);
            seg.flush().for_each(drop);
            best_both = best_both.min(started.elapsed().as_secs_f64());
        }
        let mbs = text.len() as f64 / 1e6 / best;
        let ns_per_byte = best * 1e9 / text.len() as f64;
        first_ns_per_byte.get_or_insert(ns_per_byte);
        last_ns_per_byte = Some(ns_per_byte);
        rows.push(json!({
            "megabytes": text.len() as f64 / 1e6,
            "sentences": sentences,
            "seconds": best,
            "mb_per_s": mbs,
            "ns_per_byte": ns_per_byte,
            "normalise_and_split_mb_per_s": text.len() as f64 / 1e6 / best_both,
        }));
        println!(
            "{:>8.1} {:>12} {:>10.3} {:>10.1} {:>12.2} {:>14.1}",
            text.len() as f64 / 1e6,
            sentences,
            best,
            mbs,
            ns_per_byte,
            text.len() as f64 / 1e6 / best_both
        );
    }
    let scaling = match (first_ns_per_byte, last_ns_per_byte) {
        (Some(first), Some(last)) => {
            println!("scaling: ns/byte at the largest size is {:.2}x that at the smallest (1.0 = linear)", last / first);
            Some(last / first)
        }
        _ => None,
    };
    let lexicon = lexicon_cost(&[0, 100, 10_000]);
    let spoken = spoken_cost();
    let parser = parser_cost();
    json!({ "chunking": "3-6 characters", "passes": passes, "rows": rows, "scaling": scaling, "lexicon": lexicon, "spoken": spoken, "parser": parser })
}

/// What a request body costs to read before it is refused (earshot_gateway::strict_json, every body's
/// first step): a 64 KiB body shaped as one key holding 16,000 array elements against a body of the same
/// size holding one string, best of 20 reads each. The goal: the crafted one within 2x the plain one.
fn parser_cost() -> serde_json::Value {
    let crafted = format!("{{\"text\": [{}]}}", vec!["1"; 16_000].join(","));
    let plain = format!("{{\"text\": \"{}\"}}", "a".repeat(crafted.len() - 12));
    let best = |body: &str| {
        (0..20)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(earshot_gateway::strict_json::from_slice(std::hint::black_box(body.as_bytes())).ok());
                started.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min)
    };
    let (crafted_ms, plain_ms) = (best(&crafted), best(&plain));
    println!(
        "request parser: {} bytes of 16,000 array elements {crafted_ms:.3} ms, one string of the same size {plain_ms:.3} ms ({:.1}x)",
        crafted.len(),
        crafted_ms / plain_ms
    );
    json!({ "bytes": crafted.len(), "crafted_ms": crafted_ms, "plain_ms": plain_ms, "ratio": crafted_ms / plain_ms })
}

/// What a pronunciation lexicon costs each sentence on its way to a voice (the lexicon layer's one
/// `apply`), at several sizes: microseconds per sentence, median and worst, over the sentences of a
/// fixed LLM-like answer. Entries are made-up product names, a few of which the answer holds.
fn lexicon_cost(sizes: &[usize]) -> serde_json::Value {
    let text = llm_like_text(200_000);
    let sentences = earshot_core::text::split(&text, earshot_core::text::SegmenterConfig::default());
    println!("lexicon: microseconds per sentence to apply ({} sentences)", sentences.len());
    let mut rows = Vec::new();
    for &size in sizes {
        let mut file: String = (0..size).map(|i| format!("Product{i} = product number {i}\n")).collect();
        if size > 0 {
            file.push_str("service = sir vice\n");
        }
        let lexicon = earshot_core::text::Lexicon::parse(&file).expect("a generated lexicon");
        let mut micros: Vec<f64> = sentences
            .iter()
            .map(|sentence| {
                let started = Instant::now();
                std::hint::black_box(lexicon.apply(std::hint::black_box(sentence), None));
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        micros.sort_by(f64::total_cmp);
        let (median, worst) = (micros[micros.len() / 2], micros[micros.len() - 1]);
        println!("{size:>8} entries: median {median:.2} us, worst {worst:.2} us");
        rows.push(json!({ "entries": size, "median_us": median, "worst_us": worst }));
    }
    json!(rows)
}

/// What the spoken forms cost each sentence on its way to the Kokoro container (one `spoken` per sentence, in
/// the container's session): microseconds per sentence, median and worst, over the same answer's sentences
/// and over the scored set's English, French and Mandarin answers (addresses, phone numbers, dates, money).
fn spoken_cost() -> serde_json::Value {
    use earshot_core::text::{language::Language, spoken::spoken};
    let text = llm_like_text(200_000);
    let answer = earshot_core::text::split(&text, earshot_core::text::SegmenterConfig::default());
    let cases = |language: &str| -> Vec<String> {
        // The lists in the repository: from the bench's package folder under cargo, else from the root `make bench` runs in.
        let root = std::env::var_os("CARGO_MANIFEST_DIR").map(|d| std::path::PathBuf::from(d).join("..")).unwrap_or_else(|| ".".into());
        let list = |path: String| std::fs::read_to_string(root.join(path)).unwrap_or_default();
        let lists =
            list(format!("functions/earshot-text/tests/spoken/{language}.tsv")) + &list(format!("functions/earshot-text/tests/spoken/classes/{language}.tsv"));
        lists.lines().filter_map(|l| l.split_once('\t')).map(|(written, _)| written.replace("\\n", " ")).collect()
    };
    println!("spoken forms: microseconds per sentence (the first, compiling the patterns, timed apart)");
    let started = Instant::now();
    earshot_core::text::spoken::prepare();
    let compile_us = started.elapsed().as_secs_f64() * 1e6;
    println!("{:>26}: {compile_us:.0} us", "compiling every language's");
    let mut rows =
        vec![json!({ "sentences_of": "compiling the patterns (once a process, at start)", "count": 1, "median_us": compile_us, "worst_us": compile_us })];
    for (what, language, sentences) in [
        ("an LLM-like answer", "en", answer.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ("the English scored set", "en", cases("en")),
        ("the French scored set", "fr", cases("fr")),
        ("the Mandarin scored set", "zh", cases("zh")),
    ] {
        let language = Language::parse(language).expect("a language");
        if sentences.is_empty() {
            continue;
        }
        let mut micros: Vec<f64> = sentences
            .iter()
            .map(|sentence| {
                let started = Instant::now();
                std::hint::black_box(spoken(std::hint::black_box(sentence), &language));
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        micros.sort_by(f64::total_cmp);
        let (median, worst) = (micros[micros.len() / 2], micros[micros.len() - 1]);
        println!("{what:>26}: median {median:.2} us, worst {worst:.2} us ({} sentences)", sentences.len());
        rows.push(json!({ "sentences_of": what, "count": sentences.len(), "median_us": median, "worst_us": worst }));
    }
    json!(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_text_has_the_requested_size_and_chunks_cover_it() {
        let text = llm_like_text(10_000);
        assert!(text.len() >= 10_000 && text.len() < 10_400);
        let chunks = token_chunks(&text);
        assert_eq!(chunks.concat(), text);
        assert!(chunks.iter().all(|c| c.chars().count() <= 6));
    }

    #[test]
    fn transport_figures_show_base64_costs_a_third_more_bytes() {
        let figures = transport(2.0, 1);
        let rows = figures["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 6);
        for pair in rows.chunks(2) {
            let sse = pair[0]["overhead_pct"].as_f64().unwrap();
            let binary = pair[1]["overhead_pct"].as_f64().unwrap();
            // base64 alone is +33.3%; the binary frame header is a few bytes per chunk.
            assert!(sse > 33.0 && sse < 40.0, "sse overhead {sse}");
            assert!(binary > 0.0 && binary < 2.0, "binary overhead {binary}");
        }
    }
}
