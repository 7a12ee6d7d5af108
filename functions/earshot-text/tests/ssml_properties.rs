//! SSML read as it streams, for any document and any chunking: a document is accepted or refused alike
//! whole and in pieces (the same refusal, naming the same tag), and what it becomes is the same; and through
//! the segmenter with its length rule, no sentence is cut inside a tag or inside an element holding text
//! (a long `<sub>` alias is said whole, in one sentence), and no marker character reaches what a client is
//! shown.

mod common;

use earshot_text::markup::{self, Renderer};
use earshot_text::ssml::{self, Piece, SsmlReader};
use earshot_text::{Segmenter, SegmenterConfig};
use proptest::prelude::*;

/// Fragments SSML documents are made of: tags of the subset and out of it, long values, entities,
/// text with sentence ends, and what is refused (a tag too long, text too long in an element).
fn fragment() -> impl Strategy<Value = String> {
    let long_alias = format!("<sub alias=\"{}\">", "Doctor Smith and partners ".repeat(14));
    let too_long_tag = format!("<sub alias=\"{}\">", "x".repeat(420));
    let long_inside = format!("<say-as interpret-as=\"characters\">{}</say-as>", "ABCDEFGHIJ".repeat(21));
    prop_oneof![
        4 => "[A-Za-z]{1,9} ".prop_map(|w| w),
        2 => prop::sample::select(vec![". ", "? ", "! ", ", ", "Dr. ", "3.5 ", "12/01/2026 "]).prop_map(String::from),
        2 => prop::sample::select(vec![
            "<break time=\"300ms\"/>", "<s>", "</s>", "<p>", "</p>", "<prosody rate=\"120%\">", "</prosody>",
            "<lang xml:lang=\"fr\">", "</lang>", "<sub alias=\"Doctor\">", "</sub>", "<say-as interpret-as=\"ordinal\">",
            "</say-as>", "<phoneme alphabet=\"ipa\" ph=\"wˈɪn\">", "</phoneme>", "&amp;", "&lt;", "<!-- a note -->",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(vec![long_alias, too_long_tag, long_inside, "<unknown>".into(), "&nope;".into(), "<b".into()]),
    ]
}

fn document() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(fragment(), 0..24))
        .prop_map(|(rooted, parts)| if rooted { format!("<speak>{}</speak>", parts.concat()) } else { parts.concat() })
}

/// What a reader made of a document, its text pieces put together and its boundaries kept: the same for
/// any chunking when it is accepted.
fn read_in(document: &str, cuts: &[f64]) -> Result<Vec<String>, String> {
    let mut reader = SsmlReader::new();
    let mut pieces = Vec::new();
    for chunk in common::chunks(document, cuts) {
        pieces.extend(reader.push(chunk).map_err(|e| e.0)?);
    }
    pieces.extend(reader.finish().map_err(|e| e.0)?);
    let mut out = vec![String::new()];
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.last_mut().expect("one at least").push_str(&t),
            Piece::Boundary => out.push(String::new()),
        }
    }
    Ok(out)
}

/// The sentences of a document streamed in `cuts` through the reader and a segmenter with a length rule
/// of `max` characters, rendered as a conversation renders them.
fn sentences(document: &str, cuts: &[f64], max: usize) -> Result<Vec<markup::Rendered>, String> {
    let mut reader = SsmlReader::new();
    let mut segmenter = Segmenter::new(SegmenterConfig { max_chars: Some(max), ..Default::default() });
    let mut marked = Vec::new();
    let mut take = |pieces: Vec<Piece>, segmenter: &mut Segmenter| {
        for piece in pieces {
            match piece {
                Piece::Text(t) => marked.extend(segmenter.push(&t).map(|s| s.text)),
                Piece::Boundary => marked.extend(segmenter.flush().map(|s| s.text)),
            }
        }
    };
    for chunk in common::chunks(document, cuts) {
        take(reader.push(chunk).map_err(|e| e.0)?, &mut segmenter);
    }
    take(reader.finish().map_err(|e| e.0)?, &mut segmenter);
    marked.extend(segmenter.flush().map(|s| s.text));
    let mut renderer = Renderer::new();
    Ok(marked.iter().map(|m| renderer.render(m)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_document_is_judged_alike_whole_and_streamed(doc in document(), cuts in prop::collection::vec(0.0f64..1.0, 0..12)) {
        prop_assert_eq!(read_in(&doc, &cuts), read_in(&doc, &[]), "{:?}", doc);
    }

    #[test]
    fn no_sentence_is_cut_inside_a_tag_or_an_element(doc in document(), cuts in prop::collection::vec(0.0f64..1.0, 0..12)) {
        let whole = sentences(&doc, &[], 120);
        prop_assert_eq!(whole.is_ok(), sentences(&doc, &cuts, 120).is_ok());
        if let Ok(rendered) = whole {
            for sentence in &rendered {
                prop_assert!(markup::first_reserved(&sentence.written).is_none(), "{:?}", sentence);
                prop_assert!(markup::first_reserved(&sentence.spoken).is_none(), "{:?}", sentence);
            }
        }
    }
}

#[test]
fn a_long_alias_is_said_whole_in_one_sentence_however_it_streams() {
    let alias = "the Department of Computer Science and Engineering of the University of Washington in Seattle".repeat(3);
    let lead = "This answer runs long before the name comes, so that the length rule has to cut it somewhere, ".repeat(4);
    let document = format!("<speak>{lead}and the name is <sub alias=\"{alias}\">CSE at UW</sub>, said once.</speak>");
    let whole = sentences(&document, &[], 400).expect("accepted whole");
    for cuts in [vec![], vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], (1..200).map(|i| f64::from(i) / 200.0).collect()] {
        let rendered = sentences(&document, &cuts, 400).expect("accepted streamed");
        assert_eq!(rendered, whole, "the same sentences in any chunking");
        let with_alias: Vec<&markup::Rendered> = rendered.iter().filter(|s| s.spoken.contains(&alias)).collect();
        assert_eq!(with_alias.len(), 1, "the alias said whole, once: {rendered:#?}");
        assert!(with_alias[0].written.contains("CSE at UW"), "{:?}", with_alias[0]);
        assert!(rendered.iter().all(|s| markup::first_reserved(&s.written).is_none() && markup::first_reserved(&s.spoken).is_none()));
    }
}

#[test]
fn too_much_text_in_an_element_is_refused_by_name_whole_and_streamed() {
    let document = format!("<speak><sub alias=\"x\">{}</sub></speak>", "word ".repeat(60));
    let whole = ssml::read(&document).expect_err("refused whole");
    assert_eq!(whole.0, format!("<sub> holds more than {} characters of text", ssml::ELEMENT_TEXT_REACH));
    let cuts: Vec<f64> = (1..50).map(|i| f64::from(i) / 50.0).collect();
    assert_eq!(read_in(&document, &cuts), Err(whole.0));
}

#[test]
fn no_full_stop_or_clause_inside_an_element_ends_a_sentence() {
    // A fast first fragment at a clause, a full stop: neither inside the alias's element.
    let document = "<speak>Your appointment with <sub alias=\"Doctor Jane Smith\">Smith, J.</sub> is confirmed for today.</speak>";
    let mut reader = SsmlReader::new();
    let mut segmenter = Segmenter::new(SegmenterConfig { fast_first_min_words: Some(2), max_chars: Some(400), ..Default::default() });
    let mut marked = Vec::new();
    for c in document.chars() {
        for piece in reader.push(&c.to_string()).expect("accepted") {
            if let Piece::Text(t) = piece {
                marked.extend(segmenter.push(&t).map(|s| s.text));
            }
        }
    }
    reader.finish().expect("accepted");
    marked.extend(segmenter.flush().map(|s| s.text));
    let mut renderer = Renderer::new();
    let rendered: Vec<markup::Rendered> = marked.iter().map(|m| renderer.render(m)).collect();
    let spoken: Vec<&str> = rendered.iter().map(|r| r.spoken.as_str()).collect();
    assert_eq!(spoken, ["Your appointment with Doctor Jane Smith is confirmed for today."], "{rendered:#?}");
}
