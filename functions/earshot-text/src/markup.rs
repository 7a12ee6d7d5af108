//! SSML tags carried inside a sentence's text as markers, and a sentence rendered from them: what is shown
//! (the text as written), what every voice is sent (aliases, spelled characters, phonemes), at what rate,
//! in what language, and the silence before and after it.
//!
//! The reader ([`crate::ssml`]) turns each tag into a marker of Unicode private-use characters: an opening
//! marker `OPEN kind payload SEP` (its kind and values, each character moved into plane 15's private use
//! area), and [`CLOSE`] where the element ends. The segmenter reads none of them as letters, spaces or
//! punctuation, so it never cuts a sentence inside a tag, and a value such as the alias `Dr. Smith` is
//! not a sentence end. Markers cost nothing to carry: the sentence is a string as before, and a part that
//! does not know of them (the timeline, the cache) keys and counts it as it is.
//!
//! The session stack's markup layer renders each sentence once, before any arm gets it ([`Renderer`]),
//! as the lexicon's layer rewrites it: so a failover, or the other arm of an A/B split, says every tag
//! the same way. Elements that span sentences (a `<prosody>` around a paragraph) are carried from one
//! sentence to the next.

use std::borrow::Cow;

use crate::language::Language;

/// Begins an opening marker.
pub const OPEN: char = '\u{F8F0}';
/// Ends an opening marker's values.
pub const SEP: char = '\u{F8F1}';
/// Where an element ends.
pub const CLOSE: char = '\u{F8F2}';
/// The longest break, in milliseconds (Polly's own limit: "up to 10 seconds").
pub const MAX_BREAK_MS: u32 = 10_000;
/// The longest pause: breaks in a row, with no letter or digit between them, add up to at most this.
/// A sentence has at most a pause before it and one after, so its silence is at most twice this.
pub const MAX_PAUSE_MS: u32 = 10_000;
/// The most silence one answer's breaks may add up to, in milliseconds.
pub const MAX_ANSWER_SILENCE_MS: u32 = 60_000;

/// Where a marker's characters are moved to (plane 15's private use area), so that none is read as text.
const SHIFT: u32 = 0xF0000;

/// Whether `c` is one of the characters earshot keeps for its markers: U+F8F0 to U+F8FF (the three marker
/// characters and room beside them) and the whole of plane 15 (U+F0000 to U+FFFFF, where a marker's
/// values are moved). No text from outside may hold one: a caller's or an agent's own `U+F8F0` would
/// otherwise be read as a tag (a break of any length, an alias). Every entry refuses them ([`first_reserved`])
/// or leaves them out ([`without_reserved`]); the SSML reader refuses them as character references.
pub fn is_reserved(c: char) -> bool {
    matches!(c, '\u{F8F0}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFF}')
}

/// The first character of `text` that earshot keeps for its markers, if any.
pub fn first_reserved(text: &str) -> Option<char> {
    text.chars().find(|c| is_reserved(*c))
}

/// `text` without the characters earshot keeps for its markers (an agent's answer: spoken as the rest of
/// its text, never as a tag).
pub fn without_reserved(text: &str) -> Cow<'_, str> {
    match first_reserved(text) {
        None => Cow::Borrowed(text),
        Some(_) => Cow::Owned(text.chars().filter(|c| !is_reserved(*c)).collect()),
    }
}

/// One SSML tag of the subset, as carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// Silence, in milliseconds (an empty element: no [`CLOSE`] follows).
    Break(u32),
    /// Say the text as `interpret` says (characters, digits, telephone, date, time...), in `format`.
    SayAs {
        /// `interpret-as`.
        interpret: String,
        /// `format` (for dates: `mdy`, `dmy`, `ymd`...), or empty.
        format: String,
    },
    /// Say the alias for the text.
    Sub(String),
    /// Say the text with these phonemes (IPA).
    Phoneme(String),
    /// Speak at this percent of the voice's own rate.
    Rate(u32),
    /// Speak in this language.
    Lang(Language),
}

/// The opening marker of `tag`.
pub fn marker(tag: &Tag) -> String {
    let value = match tag {
        Tag::Break(ms) => format!("b{ms}"),
        Tag::SayAs { interpret, format } => format!("a{interpret}|{format}"),
        Tag::Sub(alias) => format!("s{alias}"),
        Tag::Phoneme(ph) => format!("p{ph}"),
        Tag::Rate(percent) => format!("r{percent}"),
        Tag::Lang(language) => format!("l{language}"),
    };
    let mut out = String::with_capacity(value.len() * 4 + 6);
    out.push(OPEN);
    out.extend(value.chars().map(|c| char::from_u32(SHIFT + c as u32).filter(|_| (c as u32) < 0xFFFE).unwrap_or('\u{FFFFD}')));
    out.push(SEP);
    out
}

fn tag_of(value: &str) -> Option<Tag> {
    let value: String = value.chars().map(|c| char::from_u32((c as u32).wrapping_sub(SHIFT)).unwrap_or('?')).collect();
    let (kind, rest) = value.split_at(value.char_indices().nth(1).map_or(value.len(), |(i, _)| i));
    match kind {
        // The reader gives at most `MAX_BREAK_MS`; a marker is never read past it.
        "b" => rest.parse().ok().map(|ms: u32| Tag::Break(ms.min(MAX_BREAK_MS))),
        "a" => rest.split_once('|').map(|(i, f)| Tag::SayAs { interpret: i.to_string(), format: f.to_string() }),
        "s" => Some(Tag::Sub(rest.to_string())),
        "p" => Some(Tag::Phoneme(rest.to_string())),
        "r" => rest.parse().ok().map(Tag::Rate),
        "l" => Language::parse(rest).ok().map(Tag::Lang),
        _ => None,
    }
}

/// Whether the opening marker whose values are `values` (the characters between [`OPEN`] and [`SEP`])
/// opens an element that holds text only (`say-as`, `sub`, `phoneme`): the next [`CLOSE`] ends it.
pub fn opens_text_only(values: &str) -> bool {
    values.chars().next().and_then(|c| char::from_u32((c as u32).wrapping_sub(SHIFT))).is_some_and(|kind| matches!(kind, 'a' | 's' | 'p'))
}

/// The byte length of `text`'s first `chars` characters of text, markers not counted and never cut.
pub fn text_len_at(text: &str, chars: usize) -> usize {
    let mut counted = 0;
    let mut in_marker = false;
    for (at, c) in text.char_indices() {
        match c {
            OPEN => in_marker = true,
            SEP => in_marker = false,
            CLOSE => {}
            _ if in_marker => {}
            _ if counted == chars => return at,
            _ => counted += 1,
        }
    }
    text.len()
}

/// Whether `text` holds a marker.
pub fn has_markers(text: &str) -> bool {
    text.contains([OPEN, CLOSE])
}

/// The text as written: every marker left out.
pub fn written(text: &str) -> Cow<'_, str> {
    if !has_markers(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_marker = false;
    for c in text.chars() {
        match c {
            OPEN => in_marker = true,
            SEP => in_marker = false,
            CLOSE => {}
            c if !in_marker => out.push(c),
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// The parts of a marked text, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Text(String),
    Open(Tag),
    Close,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find([OPEN, CLOSE]) {
        if at > 0 {
            out.push(Token::Text(rest[..at].to_string()));
        }
        if rest[at..].starts_with(CLOSE) {
            out.push(Token::Close);
            rest = &rest[at + CLOSE.len_utf8()..];
            continue;
        }
        let body = &rest[at + OPEN.len_utf8()..];
        let end = body.find(SEP).unwrap_or(body.len());
        if let Some(tag) = tag_of(&body[..end]) {
            out.push(Token::Open(tag));
        }
        rest = body.get(end + SEP.len_utf8()..).unwrap_or("");
    }
    if !rest.is_empty() {
        out.push(Token::Text(rest.to_string()));
    }
    out
}

/// A sentence rendered for every voice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// As written: what the client is shown, and what word timings name.
    pub written: String,
    /// What every voice is sent: aliases said, characters spelled, phonemes marked ([`crate::pronounced`]).
    pub spoken: String,
    /// The rate in force where the sentence's first letter stands, in percent; `None`: the conversation's.
    pub rate: Option<u32>,
    /// The language in force there; `None`: the conversation's.
    pub language: Option<Language>,
    /// Silence before the sentence's audio (breaks before its first letter), in milliseconds.
    pub pause_before_ms: u32,
    /// Silence after it.
    pub pause_after_ms: u32,
}

/// Renders a conversation's sentences in order, carrying the elements that span sentences.
#[derive(Debug, Default)]
pub struct Renderer {
    /// The elements open where the last sentence ended.
    open: Vec<Tag>,
}

impl Renderer {
    /// A renderer at the start of an answer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next sentence, `marked` as the segmenter released it.
    pub fn render(&mut self, marked: &str) -> Rendered {
        self.render_in(marked, None)
    }

    /// The next sentence in the conversation's `language` (`None`: read by its script), which says how a
    /// `<say-as>` of numbers reads (`ordinal` 3: third, troisième, 第三) where no `<lang>` tells it.
    pub fn render_in(&mut self, marked: &str, language: Option<&Language>) -> Rendered {
        let mut out =
            Rendered { written: written(marked).into_owned(), spoken: String::new(), rate: None, language: None, pause_before_ms: 0, pause_after_ms: 0 };
        let mut stack = std::mem::take(&mut self.open);
        // The text of the text-only element open (sub, say-as, phoneme), said when it closes.
        let mut inner: Option<String> = stack.last().filter(|t| text_only(t)).map(|_| String::new());
        let mut lettered = false;
        let settle = |stack: &[Tag], out: &mut Rendered| {
            out.rate = stack.iter().rev().find_map(|t| if let Tag::Rate(p) = t { Some(*p) } else { None });
            out.language = stack.iter().rev().find_map(|t| if let Tag::Lang(l) = t { Some(l.clone()) } else { None });
        };
        for token in tokens(marked) {
            match token {
                Token::Text(text) => {
                    if !lettered && text.chars().any(char::is_alphanumeric) {
                        lettered = true;
                        settle(&stack, &mut out);
                    }
                    match inner.as_mut() {
                        Some(held) => held.push_str(&text),
                        None => out.spoken.push_str(&text),
                    }
                }
                Token::Open(Tag::Break(ms)) => match lettered {
                    false => out.pause_before_ms += ms,
                    true => out.pause_after_ms += ms,
                },
                Token::Open(tag) => {
                    if text_only(&tag) {
                        inner = Some(String::new());
                    }
                    stack.push(tag);
                }
                Token::Close => {
                    let Some(tag) = stack.pop() else { continue };
                    if let Some(held) = inner.take().filter(|_| text_only(&tag)) {
                        let in_force = stack.iter().rev().find_map(|t| if let Tag::Lang(l) = t { Some(l.clone()) } else { None });
                        let language = in_force.or_else(|| language.cloned()).unwrap_or_else(|| crate::language::read_by_script(&out.written));
                        out.spoken.push_str(&said(&tag, &held, &language));
                    }
                }
            }
        }
        // An element the sentence ends inside: its text so far as written, the element carried on.
        if let Some(held) = inner {
            out.spoken.push_str(&held);
        }
        if !lettered {
            settle(&stack, &mut out);
        }
        self.open = stack;
        out
    }
}

fn text_only(tag: &Tag) -> bool {
    matches!(tag, Tag::SayAs { .. } | Tag::Sub(_) | Tag::Phoneme(_))
}

/// What is said for the text of a text-only element, in `language`.
fn said(tag: &Tag, text: &str, language: &Language) -> String {
    match tag {
        Tag::Sub(alias) => alias.clone(),
        Tag::Phoneme(ph) => crate::pronounced::mark(text.trim(), ph),
        Tag::SayAs { interpret, format } => match interpret.as_str() {
            // One by one, each read by the voice as a letter or a digit (the spoken forms then say a digit
            // in the sentence's language).
            "characters" | "spell-out" => spaced(text.chars().filter(|c| c.is_alphanumeric())),
            "digits" => spaced(text.chars().filter(char::is_ascii_digit)),
            "telephone" => telephone(text),
            // Numbers, times and dates in words, as Polly's documentation says for each (`ordinal` 3 is
            // "third"); a language with no rules here, or a text that is not one, as before.
            "cardinal" | "number" | "ordinal" | "time" | "date" => crate::spoken::say_as(interpret, format, text, language)
                .or_else(|| (interpret == "date").then(|| date(text, format)).flatten())
                .unwrap_or_else(|| text.to_string()),
            _ => text.to_string(),
        },
        _ => text.to_string(),
    }
}

fn spaced(chars: impl Iterator<Item = char>) -> String {
    chars.map(String::from).collect::<Vec<_>>().join(" ")
}

/// A phone number: a plus said, each group's digits one by one, a pause (a comma) between groups.
fn telephone(text: &str) -> String {
    let plus = text.trim_start().starts_with('+');
    let groups: Vec<String> = text.split(|c: char| !c.is_ascii_digit()).filter(|g| !g.is_empty()).map(|g| spaced(g.chars())).collect();
    format!("{}{}", if plus { "+ " } else { "" }, groups.join(", "))
}

/// A date written in `format`'s order as the ISO form every language's spoken forms read (`2026-12-01`).
fn date(text: &str, format: &str) -> Option<String> {
    let parts: Vec<&str> = text.split(['/', '-', '.', ' ']).filter(|p| !p.is_empty()).collect();
    let [a, b, c] = parts[..] else { return None };
    let (y, m, d) = match format {
        "mdy" | "" => (c, a, b),
        "dmy" => (c, b, a),
        "ymd" => (a, b, c),
        _ => return None,
    };
    let (y, m, d): (u32, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    ((1..=12).contains(&m) && (1..=31).contains(&d) && y >= 1000).then(|| format!("{y:04}-{m:02}-{d:02}"))
}

/// `text` with each marker shown in braces (`{sub Doctor}Dr.{/}`): for tests and logs.
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    for token in tokens(text) {
        match token {
            Token::Text(t) => out.push_str(&t),
            Token::Close => out.push_str("{/}"),
            Token::Open(tag) => out.push_str(&match tag {
                Tag::Break(ms) => format!("{{break {ms}}}"),
                Tag::SayAs { interpret, format } if format.is_empty() => format!("{{say-as {interpret}}}"),
                Tag::SayAs { interpret, format } => format!("{{say-as {interpret} {format}}}"),
                Tag::Sub(alias) => format!("{{sub {alias}}}"),
                Tag::Phoneme(ph) => format!("{{phoneme {ph}}}"),
                Tag::Rate(p) => format!("{{rate {p}}}"),
                Tag::Lang(l) => format!("{{lang {l}}}"),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(parts: &[Result<&str, Tag>]) -> String {
        parts
            .iter()
            .map(|p| match p {
                Ok(text) => text.to_string(),
                Err(tag) => marker(tag),
            })
            .collect()
    }

    #[test]
    fn a_sentence_is_shown_as_written_and_sent_as_its_tags_say() {
        let sentence = marked(&[
            Ok("Ask "),
            Err(Tag::Sub("Doctor Smith".into())),
            Ok("Dr. Smith"),
            Ok("\u{F8F2}"),
            Ok(" about "),
            Err(Tag::SayAs { interpret: "characters".into(), format: String::new() }),
            Ok("EKS"),
            Ok("\u{F8F2}"),
            Ok(" and "),
            Err(Tag::Phoneme("wˈɪn".into())),
            Ok("Nguyen"),
            Ok("\u{F8F2}"),
            Ok("."),
            Err(Tag::Break(700)),
        ]);
        let rendered = Renderer::new().render(&sentence);
        assert_eq!(rendered.written, "Ask Dr. Smith about EKS and Nguyen.");
        assert_eq!(rendered.spoken, "Ask Doctor Smith about E K S and [Nguyen](/wˈɪn/).");
        assert_eq!((rendered.pause_before_ms, rendered.pause_after_ms, rendered.rate, rendered.language), (0, 700, None, None));
    }

    #[test]
    fn a_rate_or_a_language_spanning_sentences_is_carried_to_each() {
        let mut renderer = Renderer::new();
        let first = marked(&[Err(Tag::Break(200)), Err(Tag::Rate(150)), Err(Tag::Lang(Language::parse("fr").unwrap())), Ok("Bonjour.")]);
        let second = marked(&[Ok("Ça va ?"), Ok("\u{F8F2}"), Ok("\u{F8F2}")]);
        let third = "Back to normal.";
        let (a, b, c) = (renderer.render(&first), renderer.render(&second), renderer.render(third));
        assert_eq!((a.rate, a.language.as_ref().map(Language::as_str), a.pause_before_ms), (Some(150), Some("fr"), 200));
        assert_eq!((b.rate, b.language.as_ref().map(Language::as_str), b.written.as_str()), (Some(150), Some("fr"), "Ça va ?"));
        assert_eq!((c.rate, c.language), (None, None));
    }

    #[test]
    fn say_as_kinds_are_said_in_forms_every_voice_reads() {
        let en = Language::parse("en").unwrap();
        let say = |interpret: &str, format: &str, text: &str| said(&Tag::SayAs { interpret: interpret.into(), format: format.into() }, text, &en);
        assert_eq!(say("digits", "", "1234"), "1 2 3 4");
        assert_eq!(say("telephone", "", "+1 (555) 123-4567"), "+ 1, 5 5 5, 1 2 3, 4 5 6 7");
        assert_eq!(say("date", "dmy", "01/12/2026"), "December first, twenty twenty-six");
        assert_eq!(say("date", "mdy", "12/01/2026"), "December first, twenty twenty-six");
        assert_eq!(say("date", "md", "12/01"), "December first");
        assert_eq!(say("date", "y", "1999"), "nineteen ninety-nine");
        assert_eq!(say("date", "ymd", "not a date"), "not a date");
        assert_eq!(say("ordinal", "", "3"), "third");
        assert_eq!(say("cardinal", "", "1,234"), "one thousand two hundred thirty-four");
        assert_eq!(say("time", "", "1'21\""), "one minute twenty-one seconds");
        assert_eq!(say("time", "", "3:30 pm"), "3:30 pm");
        let fr = Language::parse("fr").unwrap();
        let zh = Language::parse("zh").unwrap();
        let tag = |i: &str, f: &str| Tag::SayAs { interpret: i.into(), format: f.into() };
        assert_eq!(said(&tag("ordinal", ""), "3", &fr), "troisième");
        assert_eq!(said(&tag("ordinal", ""), "3", &zh), "第三");
        assert_eq!(said(&tag("date", "dm"), "1/12", &fr), "premier décembre");
        assert_eq!(said(&tag("date", "ym"), "2026-12", &zh), "二零二六年十二月");
    }

    #[test]
    fn markers_survive_any_value_and_are_never_text() {
        let tag = Tag::Sub("Dr. Smith, \"M.D.\" & co".into());
        let text = format!("{}x{CLOSE}", marker(&tag));
        assert_eq!(tokens(&text), [Token::Open(tag), Token::Text("x".into()), Token::Close]);
        assert_eq!(written(&text), "x");
        assert!(marker(&Tag::Rate(150)).chars().all(|c| !c.is_alphanumeric() && !c.is_whitespace() && !c.is_ascii_punctuation()));
    }
}
