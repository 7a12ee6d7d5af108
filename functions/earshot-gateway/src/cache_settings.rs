//! How the sentence cache is used ([`earshot_core::cache`]): its scope, its bounds, and the openers the
//! warm-up renders into it at start ([`crate::warmup`]).

use earshot_core::cache::{CacheLimits, CacheScope};

/// How the sentence cache is used.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSettings {
    /// Whose sentences are cached and who hears them (`deployment`, `owner` or `off`).
    pub scope: CacheScope,
    /// The cache's bounds: bytes held, and the longest sentence kept in characters.
    pub limits: CacheLimits,
    /// The openers rendered into the cache at start.
    pub warmup: Warmup,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings { scope: CacheScope::Deployment, limits: CacheLimits::default(), warmup: Warmup::default() }
    }
}

/// The openers rendered at start: each one in each backend's default voice (`voice` `None`), or in the
/// voice named beside it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Warmup {
    /// The openers, in the order they are rendered.
    pub openers: Vec<Opener>,
}

/// One opener of the warm-up list.
#[derive(Debug, Clone, PartialEq)]
pub struct Opener {
    /// The voice to render it in; `None`: every backend's default voice.
    pub voice: Option<String>,
    /// The sentence to render, as it will be spoken.
    pub text: String,
}

/// The openers rendered when none are configured: what agents start and end answers with.
pub const DEFAULT_OPENERS: &[&str] = &["Sure.", "Okay.", "One moment.", "Let me check that for you.", "Is there anything else I can help you with?"];

impl Warmup {
    /// The default list, in every backend's default voice.
    pub fn default_openers() -> Self {
        Warmup { openers: DEFAULT_OPENERS.iter().map(|t| Opener { voice: None, text: t.to_string() }).collect() }
    }

    /// Reads a list: a JSON array of sentences (every backend's default voice), a JSON object from voice
    /// to sentences, or `none`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        if spec.is_empty() || spec == "none" {
            return Ok(Warmup::default());
        }
        let value: serde_json::Value =
            serde_json::from_str(spec).map_err(|e| format!("not JSON ({e}): give a list of sentences, an object from voice to sentences, or none"))?;
        let sentences = |v: &serde_json::Value| -> Result<Vec<String>, String> {
            let list = v.as_array().ok_or("each voice's openers must be a list of sentences")?;
            list.iter().map(|s| s.as_str().map(str::to_string).ok_or_else(|| "every opener must be a string".to_string())).collect()
        };
        let openers = match &value {
            serde_json::Value::Array(_) => sentences(&value)?.into_iter().map(|text| Opener { voice: None, text }).collect(),
            serde_json::Value::Object(map) => {
                let mut openers = Vec::new();
                for (voice, list) in map {
                    openers.extend(sentences(list)?.into_iter().map(|text| Opener { voice: Some(voice.clone()), text }));
                }
                openers
            }
            _ => return Err("give a list of sentences, an object from voice to sentences, or none".into()),
        };
        Ok(Warmup { openers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_every_backend_s_default_voice_and_an_object_names_voices() {
        let list = Warmup::parse(r#"["Sure.", "One moment."]"#).unwrap();
        assert_eq!(list.openers, vec![Opener { voice: None, text: "Sure.".into() }, Opener { voice: None, text: "One moment.".into() }]);
        let voices = Warmup::parse(r#"{"ff_siwis": ["Bien sûr."]}"#).unwrap();
        assert_eq!(voices.openers, vec![Opener { voice: Some("ff_siwis".into()), text: "Bien sûr.".into() }]);
        assert_eq!(Warmup::parse("none").unwrap(), Warmup::default());
        for bad in ["Sure.", "[1]", r#"{"af_heart": "Sure."}"#, "3"] {
            assert!(Warmup::parse(bad).is_err(), "{bad} is refused");
        }
    }
}
