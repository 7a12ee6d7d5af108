//! The normaliser gives the same speakable text however its Markdown is chunked, and never lets
//! Markdown syntax through on the common constructs.

mod common;

use earshot_text::{normalise, Normaliser};
use proptest::prelude::*;

fn markdown() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[A-Za-z]{1,8}".prop_map(|w| w),
        3 => Just(" ".to_string()),
        2 => Just("\n".to_string()),
        3 => prop::sample::select(vec![
            "**", "*", "_", "__", "~~", "`", "```\n", "~~~\n", "# ", "## ", "> ", "- ", "* ", "1. ", "| ", " |", "---\n",
            "[", "]", "(", ")", "](https://x.io/a)", "![", "<br>", "<https://x.io>", "[1]", "\\*", ".", "!", "<", ">",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..80).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn chunking_never_changes_the_output(md in markdown(), cuts in prop::collection::vec(0.0f64..1.0, 0..20)) {
        let whole = normalise(&md);
        let mut n = Normaliser::new();
        let mut out = String::new();
        for chunk in common::chunks(&md, &cuts) {
            out.push_str(&n.push(chunk));
        }
        out.push_str(&n.flush());
        prop_assert_eq!(whole, out);
    }

    #[test]
    fn emphasis_around_words_never_survives(words in prop::collection::vec("[a-z]{1,8}", 1..6), marker in prop::sample::select(vec!["**", "*", "__", "~~", "`"])) {
        let phrase = words.join(" ");
        let md = format!("Say {marker}{phrase}{marker} now.");
        prop_assert_eq!(normalise(&md), format!("Say {phrase} now."));
    }
}
