//! Makes an agent's Markdown speakable, as it streams.
//!
//! Agents answer in Markdown, and a voice must not read its syntax aloud. The normaliser removes
//! heading hashes, quote marks, list bullets, emphasis and strike-through markers, inline-code
//! backticks, link and image syntax (keeping the words), HTML tags, citation marks (`[1]`), table
//! pipes and horizontal rules, and drops fenced code blocks (a voice reading code verbatim helps no
//! one; the captions still carry the agent's text). Line breaks are kept: the segmenter reads them.
//!
//! Like the segmenter it is a pure state machine over chunks of any size: it holds back only a
//! construct it cannot decide yet (a line's first characters, an emphasis run and the character after
//! it, a link up to its closing parenthesis), each bounded in length, so its output does not depend
//! on chunking and its work is linear in the text.

/// How far (bytes) a link's text or target, or a tag, is read ahead before it is taken as plain text.
const CONSTRUCT_REACH: usize = 400;
/// How much of a line's start (bytes) is held to recognise a block prefix.
const PREFIX_REACH: usize = 16;

/// The streaming Markdown-to-speech normaliser.
#[derive(Debug, Clone)]
pub struct Normaliser {
    held: String,
    at_line_start: bool,
    /// The fence that opened the code block being skipped (```` ``` ```` or `~~~`, with its length).
    fence: Option<(char, usize)>,
    table_row: bool,
    prev: Option<char>,
}

impl Default for Normaliser {
    fn default() -> Self {
        Normaliser { held: String::new(), at_line_start: true, fence: None, table_row: false, prev: None }
    }
}

/// The outcome of looking at the held text at one position.
enum Look {
    /// Not enough text to decide.
    NeedMore,
    /// Consume this many bytes, emitting the given text.
    Take(usize, Emit),
}

enum Emit {
    Nothing,
    Text(String),
    Char(char),
}

impl Normaliser {
    /// A normaliser at the start of a text.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds Markdown and returns the speakable text it completes.
    pub fn push(&mut self, text: &str) -> String {
        self.held.push_str(text);
        self.run(false)
    }

    /// Returns everything still held, at the end of the answer.
    pub fn flush(&mut self) -> String {
        let out = self.run(true);
        self.at_line_start = true;
        self.fence = None;
        self.table_row = false;
        self.prev = None;
        out
    }

    fn run(&mut self, eof: bool) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < self.held.len() {
            let look = self.look(i, eof);
            match look {
                Look::NeedMore => break,
                Look::Take(n, emit) => {
                    let taken = &self.held[i..i + n];
                    if let Some(last) = taken.chars().next_back() {
                        self.prev = Some(last);
                    }
                    match emit {
                        Emit::Nothing => {}
                        Emit::Text(t) => out.push_str(&t),
                        Emit::Char(c) => out.push(c),
                    }
                    i += n;
                }
            }
        }
        self.held.drain(..i);
        out
    }

    fn look(&mut self, i: usize, eof: bool) -> Look {
        if self.at_line_start {
            // Only the start of a line is searched for its end, so the work stays linear.
            let rest = &self.held[i..];
            let line_end = rest.find('\n');
            let line = rest[..line_end.unwrap_or(rest.len())].to_string();
            if let Some(look) = self.line_start(&line, line_end, line_end.is_some() || eof) {
                return look;
            }
        }
        let rest = &self.held[i..];
        if self.fence.is_some() {
            let line_end = rest.find('\n');
            // Inside a code block: drop the line.
            return match line_end {
                Some(n) => {
                    self.at_line_start = true;
                    Look::Take(n + 1, Emit::Nothing)
                }
                None if eof => Look::Take(rest.len(), Emit::Nothing),
                None => Look::NeedMore,
            };
        }

        let c = rest.chars().next().unwrap_or('\n');
        match c {
            '\n' => {
                self.at_line_start = true;
                self.table_row = false;
                Look::Take(1, Emit::Char('\n'))
            }
            '\\' => match rest[1..].chars().next() {
                Some(p) if p.is_ascii_punctuation() => Look::Take(1 + p.len_utf8(), Emit::Char(p)),
                None if !eof => Look::NeedMore,
                _ => Look::Take(1, Emit::Char('\\')),
            },
            '`' => Look::Take(rest.chars().take_while(|&b| b == '`').count(), Emit::Nothing),
            '*' | '_' | '~' => self.emphasis(rest, c, eof),
            '!' if rest[1..].starts_with('[') => self.link(rest, 1, eof),
            '!' if rest.len() == 1 && !eof => Look::NeedMore,
            '[' => self.link(rest, 0, eof),
            '<' => self.tag(rest, eof),
            '|' if self.table_row => {
                let trailing = rest[1..].split('\n').next().is_some_and(|l| l.trim().is_empty());
                if trailing && !(eof || rest[1..].contains('\n')) {
                    return Look::NeedMore;
                }
                Look::Take(1, if trailing { Emit::Nothing } else { Emit::Text(",".into()) })
            }
            _ => Look::Take(c.len_utf8(), Emit::Char(c)),
        }
    }

    /// Block syntax at the start of a line. `None` when the line starts with plain text.
    fn line_start(&mut self, line: &str, line_end: Option<usize>, whole_line: bool) -> Option<Look> {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        // Hold a short start of line that could still become block syntax.
        let undecided =
            !whole_line && line.len() < PREFIX_REACH && trimmed.chars().all(|c| matches!(c, '#' | '>' | '-' | '*' | '+' | '`' | '~' | '|' | ':' | '_' | ' '));
        if undecided {
            return Some(Look::NeedMore);
        }
        let through_newline = line.len() + usize::from(line_end.is_some());

        // Code fences open and close code blocks; the fence line itself is dropped.
        let fence_char = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
        if let Some(fc) = fence_char {
            let run = trimmed.chars().take_while(|&c| c == fc).count();
            if run >= 3 {
                if !whole_line {
                    return Some(if line.len() < CONSTRUCT_REACH { Look::NeedMore } else { Look::Take(line.len(), Emit::Nothing) });
                }
                match self.fence {
                    None => self.fence = Some((fc, run)),
                    Some((open, len)) if open == fc && run >= len && trimmed[run..].trim().is_empty() => self.fence = None,
                    Some(_) => {}
                }
                self.at_line_start = true;
                return Some(Look::Take(through_newline, Emit::Nothing));
            }
        }
        if self.fence.is_some() {
            return None;
        }
        self.at_line_start = false;

        // A horizontal rule, or a table's separator row: dropped.
        let rule = trimmed.chars().filter(|c| !c.is_whitespace()).count() >= 3
            && (trimmed.chars().all(|c| c == '-' || c == ' ')
                || trimmed.chars().all(|c| c == '*' || c == ' ')
                || trimmed.chars().all(|c| c == '_' || c == ' '));
        let separator_row = trimmed.starts_with('|') && trimmed.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
        if whole_line && (rule || separator_row) {
            self.at_line_start = true;
            return Some(Look::Take(through_newline, Emit::Nothing));
        }

        // Headings, block quotes, bullets and table rows lose their prefix.
        let mut prefix = indent;
        let mut rest = trimmed;
        loop {
            if let Some(after) = rest.strip_prefix('>') {
                let after_space = after.strip_prefix(' ').unwrap_or(after);
                prefix += rest.len() - after_space.len();
                rest = after_space;
                continue;
            }
            break;
        }
        let hashes = rest.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
            prefix += hashes + 1;
        } else if ["- ", "* ", "+ "].iter().any(|bullet| rest.starts_with(bullet)) {
            // `starts_with`, not a slice: the line may start with a character wider than one byte.
            prefix += 2;
        } else if rest.starts_with('|') {
            self.table_row = true;
            prefix += 1;
        }
        if prefix > 0 {
            return Some(Look::Take(prefix, Emit::Nothing));
        }
        None
    }

    /// `*`, `_` and `~~` runs: emphasis markers are dropped; `2 * 3`, `snake_case` and `~5` stay.
    fn emphasis(&self, rest: &str, c: char, eof: bool) -> Look {
        let run = rest.chars().take_while(|&x| x == c).count();
        let next = rest[run..].chars().next();
        if next.is_none() && !eof {
            return Look::NeedMore;
        }
        if c == '~' && run < 2 {
            return Look::Take(run, Emit::Text(rest[..run].to_string()));
        }
        let prev_space = self.prev.is_none_or(|p| p.is_whitespace());
        let next_space = next.is_none_or(|n| n.is_whitespace());
        let intraword = c == '_' && self.prev.is_some_and(char::is_alphanumeric) && next.is_some_and(char::is_alphanumeric);
        if (prev_space && next_space) || intraword {
            Look::Take(run, Emit::Text(rest[..run].to_string()))
        } else {
            Look::Take(run, Emit::Nothing)
        }
    }

    /// `[text](url)` and `![alt](url)` become their words; `[1]` citations vanish; other brackets
    /// stay as written.
    fn link(&self, rest: &str, bang: usize, eof: bool) -> Look {
        let open = bang;
        let body = &rest[open + 1..];
        let Some(close) = body.find([']', '\n']).filter(|&n| body.as_bytes()[n] == b']') else {
            let cut = body.find('\n').is_some() || body.len() >= CONSTRUCT_REACH || eof;
            return if cut { Look::Take(1, Emit::Char(rest.chars().next().unwrap_or('['))) } else { Look::NeedMore };
        };
        let label = &body[..close];
        let after = &body[close + 1..];
        if after.starts_with('(') {
            match matching_paren(after) {
                Some(end) if !after[..end].contains('\n') => {
                    let len = open + 1 + close + 1 + end + 1;
                    return Look::Take(len, Emit::Text(strip_inline(label)));
                }
                None if !eof && after.len() < CONSTRUCT_REACH && !after.contains('\n') => return Look::NeedMore,
                _ => {}
            }
        } else if after.is_empty() && !eof {
            return Look::NeedMore;
        }
        if bang == 0 && !label.is_empty() && label.chars().all(|c| c.is_ascii_digit() || c == ',' || c == ' ' || c == '-') {
            return Look::Take(close + 2, Emit::Nothing);
        }
        Look::Take(1, Emit::Char(rest.chars().next().unwrap_or('[')))
    }

    /// `<https://…>` and `<a@b.c>` lose their brackets; HTML tags vanish; a lone `<` stays.
    fn tag(&self, rest: &str, eof: bool) -> Look {
        let body = &rest[1..];
        let Some(end) = body.find(['>', '\n']) else {
            return if eof || body.len() >= CONSTRUCT_REACH { Look::Take(1, Emit::Char('<')) } else { Look::NeedMore };
        };
        if body.as_bytes()[end] != b'>' {
            return Look::Take(1, Emit::Char('<'));
        }
        let inner = &body[..end];
        if inner.starts_with("http://") || inner.starts_with("https://") || (inner.contains('@') && !inner.contains(' ')) {
            return Look::Take(end + 2, Emit::Text(inner.to_string()));
        }
        let name = inner.strip_prefix('/').unwrap_or(inner);
        let is_tag = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.split([' ', '/']).next().is_some_and(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if is_tag {
            let spoken = if name.starts_with("br") { " " } else { "" };
            Look::Take(end + 2, Emit::Text(spoken.into()))
        } else {
            Look::Take(1, Emit::Char('<'))
        }
    }
}

/// The index of the `)` that closes the `(` at the start of `s` (URLs may hold parentheses).
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Removes emphasis and code markers from a link's text.
fn strip_inline(label: &str) -> String {
    label.chars().filter(|c| !matches!(c, '*' | '`')).collect::<String>().replace("__", "").replace("~~", "")
}

/// Normalises a whole text at once.
pub fn normalise(markdown: &str) -> String {
    let mut n = Normaliser::new();
    let mut out = n.push(markdown);
    out.push_str(&n.flush());
    out
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn emphasis_and_code_markers_go() {
        assert_eq!(normalise("This is **very** _important_ and ~~old~~ `code()`."), "This is very important and old code().");
        assert_eq!(normalise("Keep 2 * 3 and snake_case and ~5 min."), "Keep 2 * 3 and snake_case and ~5 min.");
    }

    #[test]
    fn headings_quotes_and_bullets_lose_their_prefix() {
        assert_eq!(normalise("## Setup\n> Note this.\n- one\n* two\n+ three\n1. four"), "Setup\nNote this.\none\ntwo\nthree\n1. four");
    }

    #[test]
    fn links_keep_their_words() {
        assert_eq!(normalise("See [the docs](https://x.io/a_(b)) and ![a chart](c.png)."), "See the docs and a chart.");
        assert_eq!(normalise("Mail <me@x.io> or <https://x.io>."), "Mail me@x.io or https://x.io.");
        assert_eq!(normalise("Sky is blue.[1] Also [this] stays."), "Sky is blue. Also [this] stays.");
    }

    #[test]
    fn code_blocks_are_not_read() {
        assert_eq!(normalise("Run this:\n```bash\nmake run\necho hi\n```\nThen wait."), "Run this:\nThen wait.");
        assert_eq!(normalise("~~~\ncode\n~~~\nDone."), "Done.");
    }

    #[test]
    fn tables_and_rules_become_plain_lines() {
        assert_eq!(normalise("| a | b |\n|---|---|\n| 1 | 2 |\n\n---\nEnd."), " a , b \n 1 , 2 \n\nEnd.");
    }

    #[test]
    fn tags_and_escapes() {
        assert_eq!(normalise("a<br>b <b>bold</b> 3 < 4 \\*not emphasis\\*"), "a b bold 3 < 4 *not emphasis*");
    }

    #[test]
    fn lines_may_start_with_any_character() {
        // Each of these once sliced a line inside a character's bytes.
        for text in ["こんにちは。", "你好。", "“Hello,” she said.", "Hello there.\n— a dash", "😀 Hello there.", "é", "\n€ 5"] {
            assert_eq!(normalise(text), text);
        }
    }

    #[test]
    fn plain_text_passes_unchanged() {
        let text = "Hello there. It costs $3.50, i.e. cheap! Is it 10:30? Yes (probably).";
        assert_eq!(normalise(text), text);
    }
}
