//! A portable SSML subset, read as it streams: `<speak>`, `<break>`, `<say-as>`, `<sub>`, `<phoneme>`,
//! `<prosody rate>`, `<lang>`, `<s>` and `<p>`, checked tag by tag, and turned into text the segmenter
//! can split with each tag carried inside it as a [`crate::markup`] marker.
//!
//! Agents and apps that already write SSML for a voice service (Polly, Azure, Google) want the same
//! document said the same way on every voice. A request opts in (`"markup": "ssml"`); its text, or its
//! agent's answer, is read here chunk by chunk: a tag is held until its `>` (at most [`TAG_REACH`]
//! characters), an entity until its `;`, and anything this subset does not know (another tag, an
//! attribute, a value out of range, a tag left open, text outside the root) is an [`SsmlError`] naming it,
//! so a `text` request is refused before any speech and an agent's answer ends with an `error` event
//! naming the tag. The tags themselves never reach the segmenter as text: each becomes a marker of
//! characters it does not read (Unicode private use), so no sentence is cut inside a tag, and a tag's
//! values (an alias such as `Dr. Smith`) are never read as sentence ends.
//!
//! A `<break>`, and the end of an `<s>` or `<p>`, ends the sentence there ([`Piece::Boundary`]): the
//! scheduler flushes its segmenter, so the silence of a break falls between two sentences, where
//! every voice can give it exactly (see `crate::markup`).

use std::fmt;

use crate::language::Language;
use crate::markup::{self, Tag};

/// How far (characters) a tag is read before it is refused as too long.
pub const TAG_REACH: usize = 400;
/// The most text a `<sub>`, `<say-as>` or `<phoneme>` may hold, in characters: so that an element always
/// fits in one sentence (the segmenter cuts a long sentence outside it, never inside).
pub const ELEMENT_TEXT_REACH: usize = 200;
/// How far an entity (`&amp;`) is read.
const ENTITY_REACH: usize = 12;
/// The orders a `<say-as interpret-as="date">` may give.
const DATE_FORMATS: [&str; 10] = ["mdy", "dmy", "ymd", "md", "dm", "ym", "my", "d", "m", "y"];
/// The caps on silence, kept beside the markers that carry it.
pub use crate::markup::{MAX_ANSWER_SILENCE_MS, MAX_BREAK_MS, MAX_PAUSE_MS};

/// What the reader gives the segmenter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text, with the markers of the tags in it.
    Text(String),
    /// The sentence ends here (a break, or the end of `<s>` or `<p>`).
    Boundary,
}

/// Why a document is refused: what was found, in the SSML's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsmlError(pub String);

impl fmt::Display for SsmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SsmlError {}

/// An element left open, and whether text inside it may hold other tags.
#[derive(Debug, Clone)]
struct Open {
    name: &'static str,
    /// `sub`, `say-as` and `phoneme` hold text only.
    text_only: bool,
    /// The characters of text inside it so far (counted for the text-only ones).
    chars: usize,
}

/// The streaming reader; see the module docs.
#[derive(Debug, Default)]
pub struct SsmlReader {
    held: String,
    open: Vec<Open>,
    /// Whether `<speak>` opened the document (it then must close it, and nothing may follow).
    rooted: bool,
    ended: bool,
    started: bool,
    /// A refusal already given: the reader gives it again and reads nothing more.
    failed: Option<SsmlError>,
    /// The breaks since the last letter or digit, in milliseconds (at most [`MAX_PAUSE_MS`]).
    pause_ms: u32,
    /// Every break of the document so far (at most [`MAX_ANSWER_SILENCE_MS`]).
    silence_ms: u32,
}

impl SsmlReader {
    /// A reader at the start of a document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `chunk`: the pieces it completes, or why the document is refused.
    pub fn push(&mut self, chunk: &str) -> Result<Vec<Piece>, SsmlError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.held.push_str(chunk);
        let out = self.run(false);
        self.remember(out)
    }

    /// The end of the document: what is left, or why it is refused (a tag left open, a `<speak>` not closed).
    pub fn finish(&mut self) -> Result<Vec<Piece>, SsmlError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let out = self.run(true).and_then(|pieces| {
            if let Some(open) = self.open.last() {
                return Err(SsmlError(format!("<{}> is not closed", open.name)));
            }
            if self.rooted && !self.ended {
                return Err(SsmlError("<speak> is not closed".into()));
            }
            Ok(pieces)
        });
        self.remember(out)
    }

    fn remember(&mut self, out: Result<Vec<Piece>, SsmlError>) -> Result<Vec<Piece>, SsmlError> {
        if let Err(e) = &out {
            self.failed = Some(e.clone());
        }
        out
    }

    fn run(&mut self, at_end: bool) -> Result<Vec<Piece>, SsmlError> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let held = std::mem::take(&mut self.held);
        let mut rest = held.as_str();
        loop {
            let Some(at) = rest.find(['<', '&']) else {
                self.text(rest, &mut text)?;
                rest = "";
                break;
            };
            self.text(&rest[..at], &mut text)?;
            rest = &rest[at..];
            if rest.starts_with('&') {
                let Some(end) = rest.find(';').filter(|e| *e <= ENTITY_REACH) else {
                    if rest.chars().count() > ENTITY_REACH || at_end {
                        return Err(SsmlError(format!("`{}` is not an entity (write & as &amp;)", rest.chars().take(ENTITY_REACH).collect::<String>())));
                    }
                    break;
                };
                let entity = entity(&rest[1..end]).ok_or_else(|| SsmlError(format!("`{}` is not an entity (write & as &amp;)", &rest[..=end])))?;
                self.text(&entity.to_string(), &mut text)?;
                rest = &rest[end + 1..];
                continue;
            }
            if rest.starts_with("<!--") {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        continue;
                    }
                    None if at_end => return Err(SsmlError("a comment is not closed".into())),
                    None => break,
                }
            }
            let Some(end) = rest.find('>') else {
                if rest.chars().count() > TAG_REACH {
                    return Err(SsmlError(format!("<{}…> is longer than {TAG_REACH} characters", shown(tag_name(rest)))));
                }
                if at_end {
                    return Err(SsmlError(format!("<{}…> is not closed", shown(tag_name(rest)))));
                }
                break;
            };
            // Refused as it would be streamed, where a tag is held at most this far for its `>`: a document
            // is accepted or refused alike whole and in any chunking.
            if rest[..end].chars().count() > TAG_REACH {
                return Err(SsmlError(format!("<{}…> is longer than {TAG_REACH} characters", shown(tag_name(rest)))));
            }
            let tag = &rest[1..end];
            rest = &rest[end + 1..];
            self.tag(tag, &mut text, &mut pieces)?;
        }
        self.held = rest.to_string();
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(pieces)
    }

    /// Text between tags: refused outside the root once it has closed; white space before the root is
    /// no text.
    fn text(&mut self, part: &str, out: &mut String) -> Result<(), SsmlError> {
        if part.is_empty() {
            return Ok(());
        }
        refuse_reserved(part)?;
        if part.chars().any(char::is_alphanumeric) {
            self.pause_ms = 0;
        }
        if self.ended && !part.trim().is_empty() {
            return Err(SsmlError("text after </speak>".into()));
        }
        if !self.started && part.trim().is_empty() {
            return Ok(());
        }
        self.started = true;
        if let Some(open) = self.open.last_mut().filter(|o| o.text_only) {
            open.chars += part.chars().count();
            if open.chars > ELEMENT_TEXT_REACH {
                return Err(SsmlError(format!("<{}> holds more than {ELEMENT_TEXT_REACH} characters of text", open.name)));
            }
        }
        out.push_str(part);
        Ok(())
    }

    /// A break of `ms` more: within the pause's and the answer's caps, or refused naming them.
    fn silence(&mut self, ms: u32) -> Result<(), SsmlError> {
        self.pause_ms = self.pause_ms.saturating_add(ms);
        self.silence_ms = self.silence_ms.saturating_add(ms);
        if self.pause_ms > MAX_PAUSE_MS {
            return Err(SsmlError(format!(
                "<break>s in a row add up to more than {} s of silence (at most {} s between two words)",
                MAX_PAUSE_MS / 1000,
                MAX_PAUSE_MS / 1000
            )));
        }
        if self.silence_ms > MAX_ANSWER_SILENCE_MS {
            return Err(SsmlError(format!("<break>s add up to more than {} s of silence in one answer", MAX_ANSWER_SILENCE_MS / 1000)));
        }
        Ok(())
    }

    fn tag(&mut self, tag: &str, text: &mut String, pieces: &mut Vec<Piece>) -> Result<(), SsmlError> {
        refuse_reserved(tag)?;
        if tag.starts_with('?') {
            // An XML declaration (`<?xml version="1.0"?>`) says nothing to a voice.
            return if self.started { Err(SsmlError(format!("<{}> may only begin the document", shown(tag)))) } else { Ok(()) };
        }
        if self.ended {
            return Err(SsmlError(format!("<{}> after </speak>", shown(tag))));
        }
        if let Some(name) = tag.strip_prefix('/') {
            return self.close(name.trim(), text, pieces);
        }
        let (tag, empty) = match tag.strip_suffix('/') {
            Some(t) => (t, true),
            None => (tag, false),
        };
        let (name, attributes) = parse_tag(tag)?;
        if let Some(open) = self.open.last().filter(|o| o.text_only) {
            return Err(SsmlError(format!("<{name}> inside <{}>, which holds text only", open.name)));
        }
        let is_root = name == "speak";
        if is_root {
            if self.rooted || self.started {
                return Err(SsmlError("<speak> must be the root, once".into()));
            }
            allow(&attributes, name, &["xml:lang", "version", "xmlns"])?;
            self.rooted = true;
            self.started = true;
            return if empty { self.close("speak", text, pieces) } else { Ok(()) };
        }
        self.started = true;
        let (marker, text_only, name): (Option<Tag>, bool, &'static str) = match name {
            "break" => {
                allow(&attributes, name, &["time", "strength"])?;
                if !empty {
                    return Err(SsmlError("<break> is empty: write <break time=\"500ms\"/>".into()));
                }
                let ms = break_ms(&attributes)?;
                self.silence(ms)?;
                text.push_str(&markup::marker(&Tag::Break(ms)));
                flush(text, pieces);
                pieces.push(Piece::Boundary);
                return Ok(());
            }
            "s" | "p" => {
                allow(&attributes, name, &[])?;
                flush(text, pieces);
                pieces.push(Piece::Boundary);
                (None, false, if name == "s" { "s" } else { "p" })
            }
            "say-as" => {
                allow(&attributes, name, &["interpret-as", "format", "detail"])?;
                let kind = required(&attributes, name, "interpret-as")?;
                let interpret = match kind {
                    "characters" | "spell-out" | "digits" | "telephone" | "date" | "time" | "cardinal" | "number" | "ordinal" => kind.to_string(),
                    other => {
                        return Err(SsmlError(format!(
                            "<say-as interpret-as=\"{other}\"> is not in this subset (characters, spell-out, digits, telephone, date, time, cardinal, ordinal)"
                        )))
                    }
                };
                let format = attribute(&attributes, "format").unwrap_or("").to_string();
                if interpret == "date" && !format.is_empty() && !DATE_FORMATS.contains(&format.as_str()) {
                    return Err(SsmlError(format!(
                        "<say-as interpret-as=\"date\" format=\"{format}\">: the format is one of mdy, dmy, ymd, md, dm, ym, my, d, m, y"
                    )));
                }
                (Some(Tag::SayAs { interpret, format }), true, "say-as")
            }
            "sub" => {
                allow(&attributes, name, &["alias"])?;
                let alias = required(&attributes, name, "alias")?;
                if !alias.chars().any(char::is_alphanumeric) {
                    return Err(SsmlError("<sub alias=\"…\"> has nothing to say".into()));
                }
                (Some(Tag::Sub(alias.to_string())), true, "sub")
            }
            "phoneme" => {
                allow(&attributes, name, &["alphabet", "ph"])?;
                match attribute(&attributes, "alphabet") {
                    Some("ipa") | None => {}
                    Some(other) => return Err(SsmlError(format!("<phoneme alphabet=\"{other}\">: only ipa is in this subset"))),
                }
                let ph = required(&attributes, name, "ph")?;
                crate::pronounced::check_ipa(ph).map_err(|why| SsmlError(format!("<phoneme ph=\"{ph}\">: {why}")))?;
                (Some(Tag::Phoneme(ph.to_string())), true, "phoneme")
            }
            "prosody" => {
                allow(&attributes, name, &["rate"])?;
                let rate = required(&attributes, name, "rate")?;
                (Some(Tag::Rate(rate_percent(rate)?)), false, "prosody")
            }
            "lang" => {
                allow(&attributes, name, &["xml:lang"])?;
                let tag = required(&attributes, name, "xml:lang")?;
                let language = Language::parse(tag).map_err(|e| SsmlError(format!("<lang xml:lang=\"{tag}\">: {e}")))?;
                (Some(Tag::Lang(language)), false, "lang")
            }
            other => {
                return Err(SsmlError(format!(
                    "<{}> is not in this subset (speak, break, say-as, sub, phoneme, prosody, lang, s, p: docs/pronunciation.md)",
                    shown(other)
                )))
            }
        };
        if empty {
            return Err(SsmlError(format!("<{name}/> is empty: it must hold the text it applies to")));
        }
        if let Some(marker) = &marker {
            text.push_str(&markup::marker(marker));
        }
        self.open.push(Open { name, text_only, chars: 0 });
        Ok(())
    }

    fn close(&mut self, name: &str, text: &mut String, pieces: &mut Vec<Piece>) -> Result<(), SsmlError> {
        if name == "speak" {
            if let Some(open) = self.open.last() {
                return Err(SsmlError(format!("</speak> while <{}> is open", open.name)));
            }
            if !self.rooted {
                return Err(SsmlError("</speak> without <speak>".into()));
            }
            self.ended = true;
            return Ok(());
        }
        match self.open.pop() {
            Some(open) if open.name == name => {
                match name {
                    "s" | "p" => {
                        flush(text, pieces);
                        pieces.push(Piece::Boundary);
                    }
                    _ => text.push(markup::CLOSE),
                }
                Ok(())
            }
            Some(open) => Err(SsmlError(format!("</{name}> while <{}> is open", open.name))),
            None => Err(SsmlError(format!("</{name}> closes nothing"))),
        }
    }
}

fn flush(text: &mut String, pieces: &mut Vec<Piece>) {
    if !text.is_empty() {
        pieces.push(Piece::Text(std::mem::take(text)));
    }
}

/// Reads a whole document at once: its pieces, or why it is refused (a `text` request is checked so
/// before any speech).
pub fn read(document: &str) -> Result<Vec<Piece>, SsmlError> {
    let mut reader = SsmlReader::new();
    let mut pieces = reader.push(document)?;
    pieces.extend(reader.finish()?);
    Ok(pieces)
}

/// A tag's name: what `<` opens, up to the first space, `/` or `>`.
fn tag_name(rest: &str) -> &str {
    let name = rest.trim_start_matches('<');
    let end = name.find(|c: char| c.is_whitespace() || c == '/' || c == '>').unwrap_or(name.len());
    &name[..end]
}

/// What a refusal quotes of the document (a tag's name or value): at most 24 characters, each control
/// character escaped, so that a message never carries the agent's surrounding text nor a line of its own.
fn shown(quoted: &str) -> String {
    let mut out: String = quoted.chars().take(24).flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect();
    if quoted.chars().count() > 24 {
        out.push('…');
    }
    out
}

/// A character earshot keeps for its markers ([`markup::is_reserved`]) is refused wherever it is written.
fn refuse_reserved(part: &str) -> Result<(), SsmlError> {
    match markup::first_reserved(part) {
        Some(c) => Err(SsmlError(format!("U+{:04X} is a private-use character this gateway keeps for itself", c as u32))),
        None => Ok(()),
    }
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let number = name.strip_prefix('#')?;
            let value = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            // earshot's own marker characters are never text, however written (`&#xF8F0;`).
            char::from_u32(value).filter(|c| (!c.is_control() || c.is_whitespace()) && !markup::is_reserved(*c))
        }
    }
}

/// A tag's attributes, as `(name, value)` in the order written.
type Attributes<'a> = Vec<(&'a str, &'a str)>;

/// A tag's name and its attributes (`name="value"` or `name='value'`).
fn parse_tag(tag: &str) -> Result<(&str, Attributes<'_>), SsmlError> {
    let tag = tag.trim();
    let name_end = tag.find(char::is_whitespace).unwrap_or(tag.len());
    let name = &tag[..name_end];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '_')) {
        return Err(SsmlError(format!("<{}> is not a tag", shown(tag))));
    }
    let mut attributes = Vec::new();
    let mut rest = tag[name_end..].trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or_else(|| SsmlError(format!("<{}>: `{}` is not name=\"value\"", shown(name), shown(rest))))?;
        let key = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start();
        let quote = after.chars().next().filter(|c| *c == '"' || *c == '\'').ok_or_else(|| SsmlError(format!("<{name}>: the value of {key} is not quoted")))?;
        let close = after[1..].find(quote).ok_or_else(|| SsmlError(format!("<{name}>: the value of {key} is not closed")))? + 1;
        if attributes.iter().any(|(k, _)| *k == key) {
            return Err(SsmlError(format!("<{name}>: {key} is given twice")));
        }
        attributes.push((key, &after[1..close]));
        rest = after[close + 1..].trim_start();
    }
    Ok((name, attributes))
}

fn allow(attributes: &[(&str, &str)], tag: &str, known: &[&str]) -> Result<(), SsmlError> {
    match attributes.iter().find(|(k, _)| !known.contains(k)) {
        Some((k, _)) if known.is_empty() => Err(SsmlError(format!("<{tag}> takes no attribute ({k} given)"))),
        Some((k, _)) => Err(SsmlError(format!("<{tag}>: {k} is not in this subset ({})", known.join(", ")))),
        None => Ok(()),
    }
}

fn attribute<'a>(attributes: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn required<'a>(attributes: &[(&str, &'a str)], tag: &str, key: &str) -> Result<&'a str, SsmlError> {
    attribute(attributes, key).ok_or_else(|| SsmlError(format!("<{tag}> needs {key}")))
}

/// A break's length: its `time` (`500ms`, `1.5s`), else its `strength` as Polly's reference gives them
/// (none 0, x-weak and weak as a comma, medium as a comma, strong as a sentence, x-strong as a paragraph).
fn break_ms(attributes: &[(&str, &str)]) -> Result<u32, SsmlError> {
    if let Some(time) = attribute(attributes, "time") {
        let ms = match (time.strip_suffix("ms"), time.strip_suffix('s')) {
            (Some(ms), _) => ms.trim().parse::<f64>().ok(),
            (None, Some(s)) => s.trim().parse::<f64>().ok().map(|s| s * 1000.0),
            _ => None,
        };
        return match ms {
            Some(ms) if (0.0..=f64::from(MAX_BREAK_MS)).contains(&ms) => Ok(ms.round() as u32),
            _ => Err(SsmlError(format!("<break time=\"{time}\">: a time is 0 to 10s, as 500ms or 1.5s"))),
        };
    }
    match attribute(attributes, "strength").unwrap_or("medium") {
        "none" => Ok(0),
        "x-weak" => Ok(100),
        "weak" => Ok(200),
        "medium" => Ok(300),
        "strong" => Ok(600),
        "x-strong" => Ok(1000),
        other => Err(SsmlError(format!("<break strength=\"{other}\">: none, x-weak, weak, medium, strong or x-strong"))),
    }
}

/// A prosody rate as a percent of the voice's own: `x-slow` to `x-fast` (Polly's words), or `N%`, 50 to 200.
fn rate_percent(rate: &str) -> Result<u32, SsmlError> {
    let percent = match rate {
        "x-slow" => Some(50.0),
        "slow" => Some(75.0),
        "medium" => Some(100.0),
        "fast" => Some(125.0),
        "x-fast" => Some(150.0),
        other => other.strip_suffix('%').and_then(|p| p.trim().parse::<f64>().ok()),
    };
    match percent {
        Some(p) if (50.0..=200.0).contains(&p) => Ok(p.round() as u32),
        _ => Err(SsmlError(format!("<prosody rate=\"{rate}\">: x-slow to x-fast, or 50% to 200%"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces_of(document: &str) -> Vec<Piece> {
        read(document).unwrap_or_else(|e| panic!("{document}: {e}"))
    }

    /// The text the segmenter gets, markers shown as `{…}`, boundaries as `|`.
    fn shown(pieces: &[Piece]) -> String {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => markup::shown(t),
                Piece::Boundary => "|".into(),
            })
            .collect()
    }

    #[test]
    fn a_refusal_names_the_tag_never_the_text_around_it() {
        let notes = "the agent's private notes\n{\"_aws\": {\"CloudWatchMetrics\": []}}";
        for document in [
            format!("<speak>Hi.</speak>{notes}"),
            format!("<speak>Hi. <unclosed {notes}"),
            format!("<speak><bad {notes}>x</speak>"),
            format!("<speak><{}>x</speak>", "x".repeat(500)),
        ] {
            let refused = read(&document).expect_err(&document);
            assert!(!refused.0.contains("_aws") && !refused.0.contains('\n') && refused.0.chars().count() < 200, "{refused}");
        }
        assert_eq!(read(&format!("<speak>Hi. <unclosed {notes}")).unwrap_err().0, "<unclosed…> is not closed");
    }

    #[test]
    fn earshot_s_own_marker_characters_are_refused_however_written() {
        let raw = "<speak>\u{F8F0}\u{F0062}\u{F0034}\u{F8F1}Hi.</speak>".to_string();
        for document in [raw.as_str(), "<speak>&#xF8F0;&#xF0062;&#xF8F1;Hi.</speak>", "<speak>&#63728;Hi.</speak>", "<sub alias=\"\u{F8F2}x\">y</sub>"] {
            let refused = read(document).expect_err(document);
            assert!(refused.0.contains("private-use") || refused.0.contains("not an entity"), "{document}: {refused}");
        }
        // Streamed a character at a time: refused alike.
        let mut reader = SsmlReader::new();
        let streamed = raw.chars().try_for_each(|c| reader.push(&c.to_string()).map(drop)).and_then(|()| reader.finish().map(drop));
        assert!(streamed.is_err());
        // Other private-use characters are text (an icon font's).
        assert!(read("<speak>\u{E000} Hi.</speak>").is_ok());
    }

    #[test]
    fn silence_is_capped_per_pause_and_per_answer() {
        let breaks = |n: usize| format!("<speak>{}Hi.</speak>", "<break time=\"10s\"/>".repeat(n));
        assert!(read(&breaks(1)).is_ok(), "one break of 10 s");
        let two = read(&breaks(2)).expect_err("20 s in a row");
        assert!(two.0.contains("<break>s in a row"), "{two}");
        assert!(read(&breaks(1_000)).is_err());
        // Pauses between words add up to the answer's cap.
        let spaced = |n: usize| format!("<speak>{}</speak>", "Hi.<break time=\"10s\"/>".repeat(n));
        assert!(read(&spaced(6)).is_ok(), "60 s in all");
        let seven = read(&spaced(7)).expect_err("70 s in all");
        assert!(seven.0.contains("in one answer"), "{seven}");
        // The run is counted across chunks and reset by a word.
        let mut reader = SsmlReader::new();
        reader.push("<speak><break time=\"6s\"/>").unwrap();
        assert!(reader.push("<break time=\"6s\"/>").is_err());
        let mut reader = SsmlReader::new();
        reader.push("<speak><break time=\"6s\"/>a").unwrap();
        assert!(reader.push("<break time=\"6s\"/>b</speak>").is_ok());
    }

    #[test]
    fn tags_become_markers_and_breaks_end_the_sentence() {
        let pieces = pieces_of(
            r#"<speak>Call <say-as interpret-as="telephone">555 1234</say-as>.<break time="1s"/>Ask <sub alias="Doctor Smith">Dr. Smith</sub> &amp; <phoneme alphabet="ipa" ph="wˈɪn">Nguyen</phoneme>.</speak>"#,
        );
        assert_eq!(shown(&pieces), "Call {say-as telephone}555 1234{/}.{break 1000}|Ask {sub Doctor Smith}Dr. Smith{/} & {phoneme wˈɪn}Nguyen{/}.");
    }

    #[test]
    fn the_same_pieces_whatever_the_chunking() {
        let document = r#"<speak><prosody rate="150%">Fast <lang xml:lang="fr-FR">bonjour</lang>.</prosody><s>One</s><p>Two &#233;t&eacute;</p></speak>"#;
        let whole = read(&document.replace("&eacute;", "&#xE9;")).unwrap();
        let document = document.replace("&eacute;", "&#xE9;");
        for size in 1..7 {
            let mut reader = SsmlReader::new();
            let mut pieces = Vec::new();
            let chars: Vec<char> = document.chars().collect();
            for chunk in chars.chunks(size) {
                pieces.extend(reader.push(&chunk.iter().collect::<String>()).unwrap());
            }
            pieces.extend(reader.finish().unwrap());
            assert_eq!(shown(&pieces), shown(&whole), "chunks of {size}");
        }
        assert_eq!(shown(&whole), "{rate 150}Fast {lang fr}bonjour{/}.{/}|One||Two été|");
    }

    #[test]
    fn what_is_not_in_the_subset_is_refused_naming_it() {
        let refused = |document: &str| read(document).unwrap_err().0;
        assert!(refused("<speak><emphasis>Hi</emphasis></speak>").starts_with("<emphasis> is not in this subset"));
        assert!(refused("<speak><prosody pitch=\"high\">Hi</prosody></speak>").contains("pitch is not in this subset"));
        assert!(refused("<speak><prosody rate=\"300%\">Hi</prosody></speak>").contains("50% to 200%"));
        assert!(refused("<speak><break time=\"20s\"/></speak>").contains("0 to 10s"));
        assert_eq!(refused("<speak>Hi <sub alias=\"x\">there</speak>"), "</speak> while <sub> is open");
        assert_eq!(refused("<speak>Hi"), "<speak> is not closed");
        assert_eq!(refused("Hi <sub alias=\"x\">there"), "<sub> is not closed");
        assert!(refused("<speak>Tom & Jerry</speak>").contains("write & as &amp;"));
        assert_eq!(refused("<speak>Hi</speak> more"), "text after </speak>", "the text itself is not quoted");
        assert!(refused("<speak><sub alias=\"x\"><break/></sub></speak>").contains("holds text only"));
        assert!(refused("<speak><phoneme alphabet=\"x-sampa\" ph=\"w\">N</phoneme></speak>").contains("only ipa"));
        assert!(refused("<speak><phoneme ph=\"w1n\">N</phoneme></speak>").contains("not a phoneme"));
        assert!(refused("<speak><lang xml:lang=\"not a tag!\">x</lang></speak>").starts_with("<lang xml:lang=\"not a tag!\">"));
        assert!(refused("<speak>Hi <").contains("is not closed"));
    }

    #[test]
    fn a_document_without_a_root_and_comments_are_read() {
        assert_eq!(shown(&pieces_of("Hi <!-- not said --><break strength=\"strong\"/>there.")), "Hi {break 600}|there.");
        assert_eq!(shown(&pieces_of("<?xml version=\"1.0\"?><speak version=\"1.1\" xml:lang=\"en-US\">Hi.</speak>")), "Hi.");
    }
}
