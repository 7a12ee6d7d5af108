//! Properties that hold for any text and any chunking: the streamed output equals the whole-text
//! output, nothing is lost or invented (the sentences put together are the input, white space
//! aside), and a maximum length is respected.

mod common;

use earshot_text::language::Language;
use earshot_text::{Segmenter, SegmenterConfig};
use proptest::prelude::*;

/// Pieces an agent's answer is made of, including the hard cases.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Za-z]{1,9}".prop_map(|w| w),
        1 => prop::sample::select(vec!["'' ", " '' ", "don't ", "well-known ", ", ", " ' ", "Mr . ", "word , "]).prop_map(String::from),
        2 => Just(" ".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("\n\n".to_string()),
        2 => prop::sample::select(vec![".", "?", "!", "...", "…", ". . .", "?!", ",", ";", ":", " - "]).prop_map(String::from),
        1 => prop::sample::select(vec![
            "Dr.", "Mr.", "e.g.", "i.e.", "U.S.", "a.m.", "p.m.", "No.", "St.", "etc.", "Ph.D.", "J.", "I.",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(vec![
            "3.14", "2.10.0", "$1,299.99", "-5", "10:30", "1st", "1.", "2)", "a.", "• ", "[1]", "N°.",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(vec![
            "https://example.com/a.b?c=d", "jane.doe@example.com", "main.rs", "`a.b()`", "\"", "'", "(", ")", "«", "»",
            "“", "”",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(vec!["今日は", "晴れ", "。", "！", "？", "「", "」", "，", "３．２９", "《", "》"]).prop_map(String::from),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..60).prop_map(|pieces| pieces.concat())
}

/// Cut points as fractions, so that any text can be cut.
fn cuts() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.0f64..1.0, 0..30)
}

fn run_chunked(text: &str, cfg: &SegmenterConfig, cuts: &[f64]) -> Vec<String> {
    let mut seg = Segmenter::new(cfg.clone());
    let mut out = Vec::new();
    for chunk in common::chunks(text, cuts) {
        out.extend(seg.push(chunk).map(|s| s.text));
    }
    out.extend(seg.flush().map(|s| s.text));
    out
}

fn without_space(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn configs() -> Vec<SegmenterConfig> {
    vec![
        SegmenterConfig::default(),
        SegmenterConfig { language: Language::parse("en").ok(), fast_first_min_words: Some(3), ..Default::default() },
        SegmenterConfig { language: Language::parse("fr").ok(), max_chars: Some(40), ..Default::default() },
        SegmenterConfig { language: Language::parse("ja").ok(), fast_first_min_words: Some(2), max_chars: Some(25) },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn chunking_never_changes_the_output(text in text(), cuts in cuts()) {
        for cfg in configs() {
            let whole = run_chunked(&text, &cfg, &[]);
            let chunked = run_chunked(&text, &cfg, &cuts);
            prop_assert_eq!(&whole, &chunked, "config {:?}", cfg);
        }
    }

    #[test]
    fn sentences_put_together_are_the_input(text in text(), cuts in cuts()) {
        for cfg in configs() {
            let out = run_chunked(&text, &cfg, &cuts);
            prop_assert_eq!(without_space(&out.concat()), without_space(&text));
            prop_assert!(out.iter().all(|s| !s.is_empty() && s.trim() == s));
        }
    }

    #[test]
    fn character_by_character_equals_whole(text in text()) {
        let cfg = SegmenterConfig::default();
        let whole = run_chunked(&text, &cfg, &[]);
        let mut seg = Segmenter::new(cfg);
        let mut out = Vec::new();
        for c in text.chars() {
            out.extend(seg.push(&c.to_string()).map(|s| s.text));
        }
        out.extend(seg.flush().map(|s| s.text));
        prop_assert_eq!(whole, out);
    }

    #[test]
    fn the_fast_path_changes_nothing(text in text(), cuts in cuts()) {
        for cfg in configs() {
            let fast = run_chunked(&text, &cfg, &cuts);
            let mut seg = Segmenter::new(cfg.clone()).without_fast_path();
            let mut slow: Vec<String> = seg.push(&text).map(|s| s.text).collect();
            slow.extend(seg.flush().map(|s| s.text));
            prop_assert_eq!(&fast, &slow, "config {:?}", cfg);
        }
    }

    #[test]
    fn maximum_length_is_respected(text in text(), max in 8usize..80) {
        let cfg = SegmenterConfig { max_chars: Some(max), ..Default::default() };
        for s in run_chunked(&text, &cfg, &[]) {
            prop_assert!(s.chars().count() <= max, "{:?} is longer than {}", s, max);
        }
    }

    #[test]
    fn indices_count_up_from_zero(text in text()) {
        let mut seg = Segmenter::default();
        let mut all: Vec<_> = seg.push(&text).collect();
        all.extend(seg.flush());
        for (i, s) in all.iter().enumerate() {
            prop_assert_eq!(s.index, i);
        }
    }
}
