//! Cuts text into pieces shaped like an LLM's tokens: a word with its leading space, punctuation on
//! its own, long words in pieces of a few characters. Streaming these at a token rate reproduces the
//! chunking a real agent's stream has.

/// The longest piece a word is cut into.
const MAX_TOKEN_CHARS: usize = 6;

/// The text cut into LLM-like tokens; joined in order, they give back the text unchanged.
pub fn llm_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut current_chars = 0;
    let flush = |current: &mut String, count: &mut usize, tokens: &mut Vec<String>| {
        if !current.is_empty() {
            tokens.push(std::mem::take(current));
            *count = 0;
        }
    };
    for c in text.chars() {
        if c.is_whitespace() {
            // Whitespace opens the next token, as in most LLM vocabularies.
            if !current.chars().all(char::is_whitespace) {
                flush(&mut current, &mut current_chars, &mut tokens);
            }
            current.push(c);
            current_chars += 1;
        } else if c.is_alphanumeric() {
            let word_chars = current.chars().filter(|ch| !ch.is_whitespace()).count();
            let in_word = current.chars().last().is_some_and(|l| l.is_alphanumeric() || l.is_whitespace());
            if !in_word || word_chars >= MAX_TOKEN_CHARS {
                flush(&mut current, &mut current_chars, &mut tokens);
            }
            current.push(c);
            current_chars += 1;
        } else {
            if !current.chars().all(char::is_whitespace) {
                flush(&mut current, &mut current_chars, &mut tokens);
            }
            current.push(c);
            current_chars += 1;
            flush(&mut current, &mut current_chars, &mut tokens);
        }
    }
    flush(&mut current, &mut current_chars, &mut tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::llm_tokens;

    #[test]
    fn tokens_cover_the_text_and_look_like_an_llm_stream() {
        let text = "Sure. The extraordinary fee is $3.50, isn't it?\nYes!";
        let tokens = llm_tokens(text);
        assert_eq!(tokens.concat(), text);
        assert!(tokens.iter().all(|t| t.trim().chars().count() <= 6), "{tokens:?}");
        assert!(tokens.contains(&" The".to_string()), "{tokens:?}");
        assert!(tokens.contains(&".".to_string()));
    }
}
