//! The whole text path (normaliser, then segmenter) on arbitrary Unicode: whatever an agent writes, in
//! whatever chunks it arrives, nothing panics, nothing speakable is lost, and the sentences are the
//! same for every chunking.
//!
//! The conformance suites test the segmenter alone on curated text; this one goes through the
//! normaliser too, since a panic there (a line starting with a character wider than one byte was
//! sliced inside its bytes) ends a conversation with no `done` and no `error`.

mod common;

use earshot_text::language::Language;
use earshot_text::{normalise, Normaliser, Segmenter, SegmenterConfig};
use proptest::prelude::*;

/// A character from every corner of Unicode the path must survive: any scalar value, and the ones
/// that sit at a line's start or hide (marks, joiners, controls, wide scripts, emoji, Markdown).
fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        2 => prop::sample::select(vec![
            '\n', '\r', '\t', ' ', '\u{0}', '\u{200b}', '\u{200d}', '\u{feff}', '\u{301}', '\u{2028}', '\u{85}',
            '—', '“', '”', '«', '»', '。', '！', '？', '、', '「', '」', 'こ', '你', '😀', '👍', '🇫', '🇷', 'é',
            '€', '\u{10ffff}', '\u{e000}', '.', '!', '?', '#', '>', '-', '*', '+', '`', '~', '|', '_', '[', ']',
            '(', ')', '<', '\\', '1', 'a', 'Z',
        ]),
    ]
}

fn any_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any_char(), 0..120).prop_map(|c| c.into_iter().collect())
}

/// The sentences of `text` pushed in chunks cut at the given fractions (always at character
/// boundaries, as a UTF-8 stream decoder hands them over).
fn through_the_path(text: &str, cfg: &SegmenterConfig, cuts: &[f64]) -> (String, Vec<String>) {
    let mut normaliser = Normaliser::new();
    let mut segmenter = Segmenter::new(cfg.clone());
    let (mut speakable, mut sentences) = (String::new(), Vec::new());
    for chunk in common::chunks(text, cuts) {
        let out = normaliser.push(chunk);
        speakable.push_str(&out);
        sentences.extend(segmenter.push(&out).map(|s| s.text));
    }
    let rest = normaliser.flush();
    speakable.push_str(&rest);
    sentences.extend(segmenter.push(&rest).map(|s| s.text));
    sentences.extend(segmenter.flush().map(|s| s.text));
    (speakable, sentences)
}

fn without_space(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn configs() -> Vec<SegmenterConfig> {
    vec![
        SegmenterConfig::default(),
        SegmenterConfig { max_chars: Some(400), ..Default::default() },
        SegmenterConfig { language: Language::parse("en").ok(), fast_first_min_words: Some(3), max_chars: Some(30) },
        SegmenterConfig { language: Language::parse("ja").ok(), fast_first_min_words: Some(2), max_chars: Some(25) },
        SegmenterConfig { language: Language::parse("zh").ok(), ..Default::default() },
        SegmenterConfig { language: Language::parse("fr").ok(), max_chars: Some(40), ..Default::default() },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn any_text_in_any_chunks_gives_the_same_sentences(text in any_text(), cuts in prop::collection::vec(0.0f64..1.0, 0..30)) {
        for cfg in configs() {
            let (whole_speakable, whole) = through_the_path(&text, &cfg, &[]);
            let (speakable, chunked) = through_the_path(&text, &cfg, &cuts);
            prop_assert_eq!(&whole_speakable, &speakable, "normaliser output depends on chunking");
            prop_assert_eq!(&whole, &chunked, "sentences depend on chunking, config {:?}", cfg);
            // Nothing the normaliser kept is lost or invented by the segmenter, white space aside.
            prop_assert_eq!(without_space(&chunked.concat()), without_space(&speakable), "config {:?}", cfg);
            prop_assert_eq!(normalise(&text), speakable);
        }
    }

    #[test]
    fn words_after_any_line_start_are_kept(first in any_char(), word in "[a-z]{3,8}") {
        // Whatever starts a line, a plain word later on it is spoken.
        let text = format!("Hello there.\n{first} {word} is here.");
        let (_, sentences) = through_the_path(&text, &SegmenterConfig::default(), &[0.3, 0.5]);
        prop_assert!(sentences.concat().contains(&word), "{:?} lost {} in {:?}", text, word, sentences);
    }
}

#[test]
fn the_reported_lines_keep_every_sentence() {
    for (text, expected) in [
        ("こんにちは。", vec!["こんにちは。"]),
        ("你好。", vec!["你好。"]),
        ("“Hello,” she said.", vec!["“Hello,” she said."]),
        ("Hello there.\n— a dash", vec!["Hello there.", "— a dash"]),
        ("😀 Hello there.", vec!["😀 Hello there."]),
    ] {
        let (_, sentences) = through_the_path(text, &SegmenterConfig::default(), &[]);
        assert_eq!(sentences, expected, "{text:?}");
    }
}
