//! `earshot split`: the streaming segmenter on standard input.

use clap::Args;
use earshot_core::language::Language;
use earshot_core::text::{Normaliser, Segmenter, SegmenterConfig};
use std::io::{Read, Write};

#[derive(Args)]
pub struct SplitArgs {
    /// The text's language, a BCP 47 tag (en, fr-CA, zh, ja), whose abbreviation lists apply; auto:
    /// not known (every list a wrong guess cannot hurt; CJK rules follow the script either way).
    #[arg(long, default_value = "auto", value_parser = parse_lang)]
    lang: Auto,
    /// Push the input this many characters at a time, as a streaming agent would (0 = all at once).
    #[arg(long, default_value_t = 0)]
    feed_chars: usize,
    /// Release the first clause of the answer early, at a clause mark.
    #[arg(long)]
    fast_first: bool,
    /// With --fast-first: the words the first clause needs before it may be released.
    #[arg(long, default_value_t = 6, value_name = "N")]
    fast_first_words: usize,
    /// Split sentences longer than N characters at clause marks, else at spaces.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_chars: Option<u64>,
    /// Treat the input as Markdown and make it speakable before splitting.
    #[arg(long)]
    markdown: bool,
}

/// A language, or `auto` (`None`).
#[derive(Clone)]
struct Auto(Option<Language>);

fn parse_lang(s: &str) -> Result<Auto, String> {
    if s == "auto" {
        Ok(Auto(None))
    } else {
        Language::parse(s).map(|l| Auto(Some(l)))
    }
}

pub fn run(args: SplitArgs) -> Result<(), String> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("cannot read standard input: {e}"))?;
    let text =
        String::from_utf8(bytes).map_err(|e| format!("standard input is not valid UTF-8 (first bad byte at offset {})", e.utf8_error().valid_up_to()))?;

    let cfg = SegmenterConfig {
        language: args.lang.0,
        fast_first_min_words: args.fast_first.then_some(args.fast_first_words),
        max_chars: args.max_chars.map(|n| n as usize),
    };
    let mut segmenter = Segmenter::new(cfg);
    let mut normaliser = args.markdown.then(Normaliser::new);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write = |sentence: String| -> Result<(), String> {
        let line = serde_json::to_string(&sentence).map_err(|e| e.to_string())?;
        writeln!(out, "{line}").map_err(|e| format!("cannot write: {e}"))
    };

    for chunk in chunks(&text, args.feed_chars) {
        let speakable = match normaliser.as_mut() {
            Some(n) => n.push(chunk),
            None => chunk.to_string(),
        };
        for sentence in segmenter.push(&speakable).collect::<Vec<_>>() {
            write(sentence.text)?;
        }
    }
    if let Some(n) = normaliser.as_mut() {
        let rest = n.flush();
        for sentence in segmenter.push(&rest).collect::<Vec<_>>() {
            write(sentence.text)?;
        }
    }
    for sentence in segmenter.flush().collect::<Vec<_>>() {
        write(sentence.text)?;
    }
    Ok(())
}

/// Cuts text into pieces of `n` characters (the whole text when `n` is 0).
fn chunks(text: &str, n: usize) -> Vec<&str> {
    if n == 0 {
        return vec![text];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            pieces.push(&text[start..i]);
            start = i;
        }
    }
    pieces.push(&text[start..]);
    pieces
}
