//! Log lines that stay one line each, whatever they quote.
//!
//! A log line may quote text from outside: an agent's answer in an `invalid_ssml` message, an upstream
//! service's error, a header. On Lambda every line of standard output and standard error is one CloudWatch
//! event, and a line that reads as an embedded-metric document (`{"_aws": …}`) is taken as a metric: a
//! newline inside a quoted answer would let the agent write a line of its own, a forged metric included.
//! So every line the process logs goes out through [`OneLine`], which writes a newline, a carriage
//! return or any other control character inside the line as an escape (`\n`, `\r`, `\x1b`…), keeping
//! only the line's own end. One writer for every logged string, rather than escaping at each call site,
//! so that a message added later cannot forget it.
//!
//! Written by hand: tracing-subscriber escapes `Debug` values but writes `Display` ones as they are, and
//! offers no option for it; the rule is a dozen lines.

use std::io::{self, Write};

/// A writer of log lines: each `write_all` (tracing's formatter writes one event, whole, in one call)
/// keeps its last newline and escapes every other control character but the tab, and the escape that
/// starts a terminal's colours where `colours` is on.
pub struct OneLine<W> {
    inner: W,
    colours: bool,
}

impl<W: Write> OneLine<W> {
    /// Lines written to `inner`; `colours`: the formatter's own ANSI colours are let through.
    pub fn new(inner: W, colours: bool) -> Self {
        OneLine { inner, colours }
    }
}

/// Standard error, one line per event, without colours (what the Lambda and `earshot serve` log to).
pub fn stderr() -> OneLine<io::Stderr> {
    OneLine::new(io::stderr(), false)
}

/// Standard error with the formatter's colours let through.
pub fn stderr_coloured() -> OneLine<io::Stderr> {
    OneLine::new(io::stderr(), true)
}

fn escaped(byte: u8, colours: bool) -> bool {
    (byte.is_ascii_control() && byte != b'\t') && !(colours && byte == 0x1b)
}

impl<W: Write> Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (buf, &b""[..]),
        };
        if !body.iter().any(|b| escaped(*b, self.colours)) {
            return self.inner.write_all(buf);
        }
        let mut line = Vec::with_capacity(buf.len() + 16);
        for &byte in body {
            match byte {
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                b if escaped(b, self.colours) => line.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                b => line.push(b),
            }
        }
        line.extend_from_slice(end);
        self.inner.write_all(&line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(line: &str, colours: bool) -> String {
        let mut out = Vec::new();
        OneLine::new(&mut out, colours).write_all(line.as_bytes()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_answer_quoted_in_a_log_line_cannot_start_a_line_of_its_own() {
        let forged = "WARN conversation failed: `Hi.\n{\"_aws\":{\"CloudWatchMetrics\":[]},\"Spent\":0}\r\n` is not a closed tag\n";
        let line = written(forged, false);
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert!(line.ends_with("is not a closed tag\n") && line.contains("`Hi.\\n{\"_aws\""), "{line}");
        assert_eq!(written("plain\tline\n", false), "plain\tline\n");
        assert_eq!(written("\u{1b}[31mred\u{1b}[0m\n", true), "\u{1b}[31mred\u{1b}[0m\n");
        assert_eq!(written("\u{1b}]0;title\u{7}\n", false), "\\x1b]0;title\\x07\n");
    }
}
