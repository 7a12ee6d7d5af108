//! `earshot bench`: benchmarks that run in this process, with no services.
//!
//! `segmenter` pushes a multi-megabyte, LLM-like answer through the segmenter in token-sized chunks
//! (3 to 6 characters, as an agent streams) and reports throughput at several sizes, to show that the
//! work is linear in the text. The text is generated from a fixed seed, so runs are comparable.
//! Written by hand rather than with a harness such as criterion: one timed pass over megabytes of
//! text is the measurement, and the report wants MB/s at several sizes, not per-iteration statistics.

use clap::{Args, ValueEnum};
use earshot_core::text::{Normaliser, Segmenter};
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(value_enum)]
    what: Bench,
    /// Text sizes in megabytes.
    #[arg(long, value_delimiter = ',', default_value = "1,2,5,10")]
    sizes_mb: Vec<f64>,
    /// Timed passes per size; the best is reported.
    #[arg(long, default_value_t = 3)]
    passes: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum Bench {
    /// Segmenter throughput and scaling.
    Segmenter,
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.what {
        Bench::Segmenter => segmenter(&args.sizes_mb, args.passes.max(1)),
    }
}

/// A small deterministic generator (xorshift64*), so the text is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// An LLM-like answer: plain prose for the most part, with an abbreviation, a number, a link or a
/// list item in about one sentence of four, and paragraphs.
pub fn llm_like_text(bytes: usize) -> String {
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
        match rng.next() % 16 {
            0 => text.push_str(rng.pick(OPENERS)),
            1 => {
                let n = rng.next() % 9 + 1;
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
pub fn token_chunks(text: &str) -> Vec<&str> {
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

fn segmenter(sizes_mb: &[f64], passes: usize) -> Result<(), String> {
    println!("segmenter throughput: LLM-like text pushed in 3-6 character chunks (best of {passes} passes)");
    println!("{:>8} {:>12} {:>10} {:>10} {:>12} {:>14}", "size MB", "sentences", "seconds", "MB/s", "ns/byte", "normalise+split MB/s");
    let mut first_ns_per_byte = None;
    let mut last_ns_per_byte = None;
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
    if let (Some(first), Some(last)) = (first_ns_per_byte, last_ns_per_byte) {
        println!("scaling: ns/byte at the largest size is {:.2}x that at the smallest (1.0 = linear)", last / first);
    }
    Ok(())
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
}
