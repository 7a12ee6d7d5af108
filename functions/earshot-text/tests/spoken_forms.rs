//! The spoken-form case lists (`tests/spoken/fr.tsv`, `tests/spoken/zh.tsv`): each answer is streamed
//! character by character through the segmenter the scheduler uses, and the spoken forms of the sentences
//! it releases, put together, must be the line's expected form. So a rule holds whatever the chunking, and
//! no abbreviation, decimal or time is cut in two by a sentence boundary.

use earshot_text::language::Language;
use earshot_text::spoken::spoken;
use earshot_text::{Segmenter, SegmenterConfig};

/// The segmenter's settings in the scheduler (`SchedulerConfig::default`).
fn scheduler_segmenter() -> Segmenter {
    Segmenter::new(SegmenterConfig { max_chars: Some(400), ..Default::default() })
}

fn cases(language: &str) -> Vec<(usize, String, String)> {
    let path =
        format!("{}/tests/spoken/{language}.tsv", std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder").to_string_lossy());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let (written, said) = l.split_once('\t').unwrap_or_else(|| panic!("{path}:{}: no tab between the written and the spoken form", i + 1));
            (i + 1, written.to_string(), said.to_string())
        })
        .collect()
}

/// Streams `written` one character at a time and speaks each sentence as it is released.
fn streamed(written: &str, language: &str) -> Vec<String> {
    let mut segmenter = scheduler_segmenter();
    let mut said = Vec::new();
    let mut buffer = [0u8; 4];
    for c in written.chars() {
        said.extend(segmenter.push(c.encode_utf8(&mut buffer)).map(|s| spoken(&s.text, &Language::parse(language).unwrap()).into_owned()));
    }
    said.extend(segmenter.flush().map(|s| spoken(&s.text, &Language::parse(language).unwrap()).into_owned()));
    said
}

fn check(language: &str, joiner: &str, at_least: usize) {
    let cases = cases(language);
    assert!(cases.len() >= at_least, "{language}: {} cases, at least {at_least} expected", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(line, written, want)| {
            let sentences = streamed(written, language);
            let got = sentences.join(joiner);
            (got != *want || sentences.len() != 1)
                .then(|| format!("line {line}: {written:?}\n   want {want:?}\n    got {got:?} in {} sentence(s)", sentences.len()))
        })
        .collect();
    assert!(failures.is_empty(), "{} of {} {language} cases fail:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn french_answers_are_spoken_in_words_whatever_the_streaming() {
    check("fr", " ", 40);
}

#[test]
fn mandarin_answers_are_spoken_in_words_whatever_the_streaming() {
    check("zh", "", 40);
}
