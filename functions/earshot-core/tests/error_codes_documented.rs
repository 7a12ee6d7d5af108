//! Every error code the Rust code can give a client is documented in `docs/protocol.md`. The codes
//! are found in the sources themselves, as string literals shaped like a code (a known prefix, snake
//! case), so a new code fails here until the protocol names it. A code made by formatting (a prefix
//! before a code from outside, `"tts_{code}"`) is found too, and its prefix must be documented as
//! `` `tts_…` ``.

mod common;

const PREFIXES: &[&str] = &[
    "agent_",
    "backend_",
    "polly_",
    "model_",
    "internal",
    "body_",
    "input_",
    "invalid_",
    "empty_",
    "answer_",
    "unknown_",
    "missing_",
    "conflicting_",
    "incomplete_",
    "no_",
    "shutting_",
    "server_",
    "interrupt",
    "conversation_",
    "token_",
    "language_",
    "voice_",
    "headers_",
    "host_",
    "origin_",
    "too_many_",
    "iam_",
    "reserved_",
    "spend_",
];

/// Literals shaped like codes that are not codes: keys of files earshot reads, named by their writers.
const NOT_CODES: &[&str] = &[
    // A level's answer length in the JSON of infra/kokoro/measure_capacity.py, read by `earshot plan`.
    "answer_audio_s",
    // An answer's characters in the bench's results.json (its `capacity` section), read by `earshot plan`.
    "answer_characters",
    // OpenAI's error types and usage field on `/v1/audio/speech` (docs/openai.md): its words, not codes.
    "invalid_request_error",
    "server_error",
    "input_tokens",
    // The Kokoro container's answer of protocol 1.0 to a cancel for a finished id, which the gateway takes as
    // the withdrawal's end (a stand-in in earshot-backends' tests says it); never sent to a client.
    "unknown_request",
];

/// String literals of `source` that look like error codes.
fn codes(source: &str) -> Vec<String> {
    source
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            // A bare prefix (`starts_with("polly_")`) names a family, not a code.
            s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                && PREFIXES.iter().any(|p| s.starts_with(p))
                && !NOT_CODES.contains(s)
                && (s.contains('_') || *s == "internal")
                && !s.ends_with('_')
        })
        .map(str::to_string)
        .collect()
}

/// Prefixes of codes made by formatting: literals such as `tts_{code}` (snake case, then one
/// placeholder and nothing after it).
fn formatted_prefixes(source: &str) -> Vec<String> {
    source
        .split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|s| {
            let (prefix, rest) = s.split_once('{')?;
            let placeholder = rest.strip_suffix('}')?;
            let snake = |t: &str| t.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
            (prefix.ends_with('_') && prefix.len() > 1 && snake(prefix) && snake(placeholder)).then(|| prefix.to_string())
        })
        .collect()
}

#[test]
fn the_scan_sees_literal_and_formatted_codes() {
    let source = r#"report("backend_gone", x); report(&format!("tts_{code}"), y); log("the {name}"); f("{}_{}"); c.starts_with("polly_")"#;
    assert_eq!(codes(source), vec!["backend_gone"]);
    assert_eq!(formatted_prefixes(source), vec!["tts_"]);
}

#[test]
fn every_code_the_gateway_can_send_is_documented() {
    let functions = common::functions_dir();
    let files = common::crate_sources();
    let protocol = std::fs::read_to_string(functions.join("../docs/protocol.md")).expect("docs/protocol.md");
    let mut found = std::collections::BTreeSet::new();
    let mut prefixes = std::collections::BTreeSet::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file");
        found.extend(codes(&source));
        prefixes.extend(formatted_prefixes(&source));
    }
    assert!(prefixes.contains("tts_"), "the scan found the formatted codes: {prefixes:?}");
    let undocumented: Vec<&String> = prefixes.iter().filter(|p| !protocol.contains(&format!("`{p}…`"))).collect();
    assert!(undocumented.is_empty(), "code prefixes missing from docs/protocol.md (as `prefix…`): {undocumented:?}");
    assert!(found.len() > 30, "the scan found the codes: {found:?}");
    let undocumented: Vec<&String> = found.iter().filter(|code| !protocol.contains(&format!("`{code}`"))).collect();
    assert!(undocumented.is_empty(), "codes missing from docs/protocol.md: {undocumented:?}");
}
