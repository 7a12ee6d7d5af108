//! Polly's generative voices, as Polly says them: `DescribeVoices` with `Engine=generative`, read in the
//! background when the gateway starts and again with each health probe, so that a voice Polly adds is
//! offered without a release. Until the first answer (or where Polly cannot be reached), a built-in list
//! stands in: the voices of Polly's developer guide ("Generative voices") that earshot was tested with.
//!
//! Each voice is offered under earshot's name for it, its `Id` in lower case (`ruth`), with its
//! `LanguageCode` (`en-US`) and, for bilingual voices, its `AdditionalLanguageCodes`.
//! <https://docs.aws.amazon.com/polly/latest/API/API_DescribeVoices.html>

use std::sync::{Arc, RwLock};

use aws_sdk_polly::types::Voice as DescribedVoice;

/// One voice Polly offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollyVoice {
    /// earshot's name: the `Id` in lower case.
    pub id: String,
    /// Polly's `VoiceId` (`Ruth`).
    pub polly_id: String,
    /// Polly's `LanguageCode` (`en-US`).
    pub language: String,
    /// A bilingual voice's other languages.
    pub other_languages: Vec<String>,
}

/// Used until `DescribeVoices` answers: (earshot name, Polly's id, language).
const BUILT_IN: &[(&str, &str, &str)] = &[
    ("ruth", "Ruth", "en-US"),
    ("stephen", "Stephen", "en-US"),
    ("matthew", "Matthew", "en-US"),
    ("joanna", "Joanna", "en-US"),
    ("danielle", "Danielle", "en-US"),
    ("amy", "Amy", "en-GB"),
    ("olivia", "Olivia", "en-AU"),
    ("lea", "Lea", "fr-FR"),
    ("remi", "Remi", "fr-FR"),
];

/// The voices on offer: Polly's own list once it has answered, the built-in one before.
#[derive(Debug)]
pub struct VoiceCatalogue {
    voices: RwLock<(Arc<Vec<PollyVoice>>, Source)>,
}

/// Where the catalogue's voices came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The built-in list: Polly has not answered yet.
    BuiltIn,
    /// Polly's answer to `DescribeVoices`.
    Described,
}

impl Default for VoiceCatalogue {
    fn default() -> Self {
        let built_in = BUILT_IN
            .iter()
            .map(|(id, polly_id, language)| PollyVoice {
                id: id.to_string(),
                polly_id: polly_id.to_string(),
                language: language.to_string(),
                other_languages: Vec::new(),
            })
            .collect();
        VoiceCatalogue { voices: RwLock::new((Arc::new(built_in), Source::BuiltIn)) }
    }
}

impl VoiceCatalogue {
    /// The voices on offer now.
    pub fn voices(&self) -> Arc<Vec<PollyVoice>> {
        self.voices.read().expect("the voice catalogue's lock").0.clone()
    }

    /// Where the voices on offer came from.
    pub fn source(&self) -> Source {
        self.voices.read().expect("the voice catalogue's lock").1
    }

    /// The voice of earshot name `id` (any case).
    pub fn find(&self, id: &str) -> Option<PollyVoice> {
        self.voices().iter().find(|v| v.id.eq_ignore_ascii_case(id)).cloned()
    }

    /// Whether `id` names a voice of the built-in list (what a configured default is checked against
    /// before Polly has answered).
    pub fn built_in(id: &str) -> bool {
        BUILT_IN.iter().any(|(name, _, _)| name.eq_ignore_ascii_case(id))
    }

    /// The built-in voices' names, comma-separated (for messages).
    pub fn built_in_names() -> String {
        BUILT_IN.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
    }

    /// Takes `DescribeVoices`' answer. An empty answer changes nothing: a Region without generative
    /// voices is told by the voices failing, not by a gateway with none to offer.
    pub fn take(&self, described: &[DescribedVoice]) -> usize {
        let mut voices: Vec<PollyVoice> = described
            .iter()
            .filter_map(|v| {
                let polly_id = v.id()?.as_str().to_string();
                Some(PollyVoice {
                    id: polly_id.to_lowercase(),
                    polly_id,
                    language: v.language_code().map(|l| l.as_str().to_string()).unwrap_or_default(),
                    other_languages: v.additional_language_codes().iter().map(|l| l.as_str().to_string()).collect(),
                })
            })
            .collect();
        if voices.is_empty() {
            return 0;
        }
        voices.sort_by(|a, b| a.language.cmp(&b.language).then_with(|| a.id.cmp(&b.id)));
        voices.dedup_by(|a, b| a.id == b.id);
        let count = voices.len();
        *self.voices.write().expect("the voice catalogue's lock") = (Arc::new(voices), Source::Described);
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_polly::types::{LanguageCode, VoiceId};

    fn described(id: &str, language: &str, others: &[&str]) -> DescribedVoice {
        let mut v = DescribedVoice::builder().id(VoiceId::from(id)).language_code(LanguageCode::from(language));
        for o in others {
            v = v.additional_language_codes(LanguageCode::from(*o));
        }
        v.build()
    }

    #[test]
    fn polly_s_answer_replaces_the_built_in_list() {
        let c = VoiceCatalogue::default();
        assert_eq!((c.source(), c.voices().len()), (Source::BuiltIn, 9));
        assert!(c.find("Lea").is_some() && c.find("ayanda").is_none());
        let taken = c.take(&[
            described("Ruth", "en-US", &[]),
            described("Ayanda", "en-ZA", &[]),
            described("Kajal", "en-IN", &["hi-IN"]),
            described("Ruth", "en-US", &[]),
        ]);
        assert_eq!((taken, c.source()), (3, Source::Described));
        let kajal = c.find("kajal").unwrap();
        assert_eq!((kajal.polly_id.as_str(), kajal.language.as_str(), kajal.other_languages.clone()), ("Kajal", "en-IN", vec!["hi-IN".to_string()]));
        assert!(c.find("ayanda").is_some() && c.find("lea").is_none(), "Polly's list, not the built-in one");
        // Nothing described: the list stays.
        assert_eq!(c.take(&[]), 0);
        assert_eq!(c.voices().len(), 3);
    }
}
