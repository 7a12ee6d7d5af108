//! Kokoro's voice blends: a voice made of others, as Kokoro-FastAPI's users write them. `af_bella+af_sky`
//! is the two in equal parts, `af_bella(2)+af_sky(1)` two parts of one to one of the other; the container
//! speaks the weighted mean of their style vectors. A blend travels as its canonical name (each voice
//! once, in name order, its share of the whole to three places: `af_bella(0.667)+af_sky(0.333)`), so
//! that the same blend written two ways is one voice to the sentence cache and to a token's scope.
//!
//! Only a backend that says it blends ([`SpeechBackend::blends_voices`](crate::speech::SpeechBackend))
//! takes one; the others refuse it by name.

/// The most voices one blend is made of.
pub const MOST_PARTS: usize = 4;

/// A blend: voices, each with its share of the whole (the shares sum to 1).
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceBlend {
    parts: Vec<(String, f64)>,
}

impl VoiceBlend {
    /// `None` where `written` is a plain voice name (no `+` and no weight); otherwise the blend, or why it
    /// is not one.
    pub fn parse(written: &str) -> Option<Result<VoiceBlend, String>> {
        if !written.contains('+') && !written.contains('(') {
            return None;
        }
        Some(Self::parse_parts(written))
    }

    fn parse_parts(written: &str) -> Result<VoiceBlend, String> {
        let mut parts: Vec<(String, f64)> = Vec::new();
        for part in written.split('+') {
            let part = part.trim();
            let (name, weight) = match part.split_once('(') {
                None => (part, 1.0),
                Some((name, rest)) => {
                    let weight = rest.strip_suffix(')').and_then(|w| w.trim().parse::<f64>().ok());
                    match weight {
                        Some(w) if w.is_finite() && w > 0.0 && w <= 100.0 => (name.trim(), w),
                        _ => return Err(format!("`{part}`: a weight is a number above 0 and at most 100, in brackets after the voice")),
                    }
                }
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(format!("`{part}` does not name a voice"));
            }
            match parts.iter_mut().find(|(n, _)| n == name) {
                Some((_, w)) => *w += weight,
                None => parts.push((name.to_string(), weight)),
            }
        }
        if parts.len() > MOST_PARTS {
            return Err(format!("a blend is of at most {MOST_PARTS} voices, not {}", parts.len()));
        }
        let total: f64 = parts.iter().map(|(_, w)| w).sum();
        parts.iter_mut().for_each(|(_, w)| *w /= total);
        parts.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(VoiceBlend { parts })
    }

    /// The voices it is made of, in name order.
    pub fn voices(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().map(|(n, _)| n.as_str())
    }

    /// Each voice with its share of the whole.
    pub fn parts(&self) -> &[(String, f64)] {
        &self.parts
    }
}

impl std::fmt::Display for VoiceBlend {
    /// The canonical name: `a(0.667)+b(0.333)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, share)) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{name}({share:.3})")?;
        }
        Ok(())
    }
}

/// Whether `voice` names a voice of `voices`, or (where `blends`) a blend made only of them.
pub fn offers(voices: &[crate::speech::Voice], blends: bool, voice: &str) -> bool {
    match VoiceBlend::parse(voice) {
        None => voices.iter().any(|v| v.id == voice),
        Some(Ok(blend)) if blends => blend.voices().all(|name| voices.iter().any(|v| v.id == name)),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blend_written_two_ways_is_one_canonical_name() {
        let equal = VoiceBlend::parse("af_sky+af_bella").unwrap().unwrap();
        assert_eq!(equal.to_string(), "af_bella(0.500)+af_sky(0.500)");
        let weighted = VoiceBlend::parse("af_bella(2)+af_sky(1)").unwrap().unwrap();
        assert_eq!(weighted.to_string(), "af_bella(0.667)+af_sky(0.333)");
        assert_eq!(VoiceBlend::parse("af_bella(4) + af_sky(2)").unwrap().unwrap(), weighted);
        assert_eq!(VoiceBlend::parse(&weighted.to_string()).unwrap().unwrap().to_string(), weighted.to_string(), "the canonical name reads back as itself");
        assert_eq!(VoiceBlend::parse("af_bella+af_bella(3)").unwrap().unwrap().to_string(), "af_bella(1.000)", "a voice named twice is one");
        assert!(VoiceBlend::parse("af_heart").is_none(), "a plain name is not a blend");
    }

    #[test]
    fn what_is_not_a_blend_is_said() {
        for bad in ["af_bella(0)+af_sky", "af_bella(x)+af_sky", "af_bella(2+af_sky", "+af_sky", "a+b+c+d+e", "af_bella(1e9)+af_sky", "a b+c"] {
            assert!(VoiceBlend::parse(bad).unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_backend_offers_blends_of_its_own_voices_only_where_it_blends() {
        let voice = |id: &str| crate::speech::Voice { id: id.into(), language: "en-US".into(), description: String::new() };
        let voices = [voice("af_bella"), voice("af_sky")];
        assert!(offers(&voices, true, "af_bella(2)+af_sky(1)"));
        assert!(!offers(&voices, true, "af_bella+am_adam"), "a voice it does not have");
        assert!(!offers(&voices, false, "af_bella+af_sky"), "a backend that does not blend");
        assert!(offers(&voices, false, "af_sky") && !offers(&voices, false, "ruth"));
    }
}
