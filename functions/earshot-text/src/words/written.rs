//! The written words of a sentence, as a listener would point at them: a run of letters and digits with
//! what joins them inside one word (`don't`, `allez-vous`, `3.14`, `12,50`), or one Han or kana character.
//! The Kokoro container cuts a text the same way (`infra/kokoro/kokoro_server/timings.py`), so that its
//! words and these are the same list.

use std::sync::LazyLock;

use regex::Regex;

// Letters and digits as Python's `str.isalnum` (the container's `[^\W_]`) counts them: Unicode letters and
// numbers, not the marks, joiners and connectors that Rust's `\w` adds (an emoji's variation selector
// would otherwise be a word).
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\p{L}\p{N}]+(?:['’\-.,:/][\p{L}\p{N}]+)*").expect("the word pattern"));

/// Han (every block the container reads as Han) and kana: one word per character.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F) || c == '々' || c == '〆'
}

/// The words of `text`, in order.
pub fn written_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in WORD.find_iter(text).map(|m| m.as_str()) {
        if !token.chars().any(is_cjk) {
            words.push(token.to_string());
            continue;
        }
        let mut run = String::new();
        for c in token.chars() {
            if is_cjk(c) {
                if run.chars().any(char::is_alphanumeric) {
                    words.push(std::mem::take(&mut run));
                }
                run.clear();
                words.push(c.to_string());
            } else {
                run.push(c);
            }
        }
        if run.chars().any(char::is_alphanumeric) {
            words.push(run);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_words_stay_whole_with_what_joins_them() {
        assert_eq!(
            written_words("It costs $12.50, don't you think? Allez-vous bien…"),
            ["It", "costs", "12.50", "don't", "you", "think", "Allez-vous", "bien"]
        );
    }

    #[test]
    fn emoji_and_their_joiners_are_not_words() {
        assert_eq!(written_words("I ❤\u{fe0f} it, 👩\u{200d}💻 too."), ["I", "it", "too"]);
    }

    #[test]
    fn han_and_kana_are_one_word_per_character() {
        assert_eq!(written_words("你好，世界。我有3个苹果"), ["你", "好", "世", "界", "我", "有", "3", "个", "苹", "果"]);
        assert_eq!(written_words("これはpen"), ["こ", "れ", "は", "pen"]);
    }
}
