//! `earshot split` as a new user runs it: text on standard input, JSON lines out.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn split(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_earshot"))
        .arg("split")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("earshot starts");
    // A rejected flag ends the process before it reads: a broken pipe here is expected.
    let _ = child.stdin.take().expect("stdin").write_all(input);
    child.wait_with_output().expect("earshot finishes")
}

fn lines(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "earshot failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone())
        .expect("UTF-8 output")
        .lines()
        .map(|l| serde_json::from_str::<String>(l).expect("each line is a JSON string"))
        .collect()
}

const ANSWER: &str = "  Sure. Dr. Smith moved the meeting to 10:30 a.m. on Jan. 5.\nThe fee is $1,299.99, i.e. the same as 2.10.0.Please confirm by e-mail at jane.doe@example.com.  ";

#[test]
fn writes_one_trimmed_json_string_a_sentence() {
    assert_eq!(
        lines(&split(&[], ANSWER.as_bytes())),
        vec![
            "Sure.",
            "Dr. Smith moved the meeting to 10:30 a.m. on Jan. 5.",
            "The fee is $1,299.99, i.e. the same as 2.10.0.",
            "Please confirm by e-mail at jane.doe@example.com.",
        ]
    );
}

#[test]
fn feeding_a_few_characters_at_a_time_changes_nothing() {
    let whole = lines(&split(&[], ANSWER.as_bytes()));
    for n in ["1", "3", "7"] {
        assert_eq!(lines(&split(&["--feed-chars", n], ANSWER.as_bytes())), whole, "--feed-chars {n}");
    }
}

#[test]
fn options_fast_first_max_chars_markdown_and_lang() {
    let fast = lines(&split(&["--fast-first", "--fast-first-words", "3"], b"Well, let me think about that, and then I will answer. Done."));
    assert_eq!(fast[0], "Well, let me think about that,");
    let short = lines(&split(&["--max-chars", "20"], b"This sentence is long, and it keeps going on and on."));
    assert!(short.iter().all(|s| s.chars().count() <= 20), "{short:?}");
    let md = lines(&split(&["--markdown"], b"## Plan\n- **Step one** is [setup](https://x.io).\n```\ncode here\n```\nDone."));
    assert_eq!(md, vec!["Plan", "Step one is setup.", "Done."]);
    let ja = lines(&split(&["--lang", "ja"], "はい。そうです！".as_bytes()));
    assert_eq!(ja, vec!["はい。", "そうです！"]);
    // The language chooses the abbreviation lists: a French `Me.` is a title.
    let lawyer = "Je vous présente Me. Dupont. Elle arrive.".as_bytes();
    assert_eq!(lines(&split(&["--lang", "fr-CA"], lawyer)), vec!["Je vous présente Me. Dupont.", "Elle arrive."]);
    assert_eq!(lines(&split(&["--lang", "auto"], lawyer)), vec!["Je vous présente Me.", "Dupont.", "Elle arrive."]);
}

#[test]
fn bad_input_gets_a_clear_message_and_a_failure_code() {
    let bad_utf8 = split(&[], b"Hello \xff world.");
    assert!(!bad_utf8.status.success());
    assert!(String::from_utf8_lossy(&bad_utf8.stderr).contains("not valid UTF-8"), "{}", String::from_utf8_lossy(&bad_utf8.stderr));

    let unknown_flag = split(&["--no-such-flag"], b"Hi.");
    assert!(!unknown_flag.status.success());
    assert!(String::from_utf8_lossy(&unknown_flag.stderr).contains("--no-such-flag"));

    let bad_lang = split(&["--lang", "french"], b"Hi.");
    assert!(!bad_lang.status.success());
    assert!(String::from_utf8_lossy(&bad_lang.stderr).contains("is not a BCP 47 language tag"));

    let zero = split(&["--max-chars", "0"], b"Hi.");
    assert!(!zero.status.success());
}

#[test]
fn empty_input_gives_no_sentences() {
    assert!(lines(&split(&[], b"   \n ")).is_empty());
}
