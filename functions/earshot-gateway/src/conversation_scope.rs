//! The `conversations` claim of a token: which conversation ids its bearer may speak under and
//! interrupt. A conversation id is made of **segments** separated by `:` (see
//! [`crate::request::check_conversation_id`] for the characters an id may hold), and a pattern matches whole
//! segments, so that the pattern for one name never reaches a longer name that merely starts like it:
//!
//! | pattern | covers |
//! | --- | --- |
//! | `*` | every id |
//! | `user-42:*` | `user-42:call-1`, `user-42:a:b`; not `user-42`, not `user-42-smith:1` |
//! | `user-42:call-1` | that id alone |
//!
//! Anything else holding `*` (such as `user-42-*`, which would also cover `user-42-smith-1`) is not a
//! pattern: a token carrying one is refused when it is verified, and `earshot token` will not mint it.
//! Ownership (`owner.rs`) already keeps every id a bearer gives inside its own namespace; the scope only
//! narrows which names that bearer's conversations may take.

use crate::request::check_conversation_id;

/// What separates the segments of a conversation id.
pub const SEPARATOR: char = ':';

/// Why `pattern` is not a conversation pattern, if it is not one.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern == "*" {
        return Ok(());
    }
    let named = pattern.strip_suffix(":*").unwrap_or(pattern);
    if named.contains('*') || check_conversation_id(named).is_err() {
        return Err(format!(
            "`{pattern}` is not a conversation pattern: give an id, `*`, or whole segments followed by `{SEPARATOR}*` (such as `user-42{SEPARATOR}*`); ids are 1 to 128 letters, digits and - _ . :"
        ));
    }
    Ok(())
}

/// Whether `pattern` (already checked) covers the conversation `id`.
pub fn covers(pattern: &str, id: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_suffix('*') {
        // `prefix` ends in the separator, so the id's segments up to it must be the pattern's, whole.
        Some(prefix) => id.len() > prefix.len() && id.starts_with(prefix),
        None => pattern == id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_whole_segments() {
        assert!(covers("*", "anything"));
        assert!(covers("user-42:*", "user-42:call-1"));
        assert!(covers("user-42:*", "user-42:a:b"));
        assert!(!covers("user-42:*", "user-42"), "the segment after the separator must be there");
        assert!(!covers("user-42:*", "user-42:"), "an empty last segment is not a segment");
        assert!(!covers("user-42:*", "user-42-smith:1"), "a longer name that starts alike is another name");
        assert!(!covers("bob:*", "bobby:1"));
        assert!(covers("bob:call-1", "bob:call-1"));
        assert!(!covers("bob:call-1", "bob:call-10"));
    }

    #[test]
    fn only_ids_star_and_whole_segment_prefixes_are_patterns() {
        for good in ["*", "user-42:*", "a:b:*", "exact-id", "user-42:call-1"] {
            assert_eq!(check_pattern(good), Ok(()), "{good}");
        }
        for bad in ["user-42-*", "bob*", "*:x", "a:*:b", "a**", "", ":*", "a b:*", "a/b"] {
            let why = check_pattern(bad).expect_err(bad);
            assert!(why.contains("user-42:*"), "the refusal shows a good pattern: {why}");
        }
    }
}
