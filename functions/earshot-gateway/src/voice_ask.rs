//! What a request asks of the voice, as a typed value: a voice of the backend (or, on Kokoro, a blend of
//! its voices), or one of OpenAI's names, which each arm turns into a voice of its own.
//!
//! OpenAI's thirteen names are not voices here: a client written for OpenAI sends `alloy` or `nova` and
//! expects two different voices. Each backend gives them out over its voices for the conversation's
//! language, its voice for the language first, then the others in its catalogue's order, round again where
//! it has fewer voices than names (so a backend with five voices speaks five distinct ones, and `alloy`
//! is always its voice for the language). The deployment may pin any of them (`EARSHOT_OPENAI_VOICES`);
//! a pinned voice that cannot speak the language is passed over for the rule. docs/openai.md lists what
//! the rule gives for each backend's voices.

use std::collections::BTreeMap;

use earshot_core::speech::SpeechBackend;
use earshot_core::text::language::Language;
use earshot_core::voice_blend::VoiceBlend;

/// OpenAI's voice names, in the order a backend gives its voices out to them.
pub const OPENAI_VOICES: [&str; 13] = ["alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse", "marin", "cedar"];

/// What a request's `voice` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceAsk {
    /// A voice of the backend, by its id, or a blend of its voices by its canonical name.
    Named(String),
    /// One of OpenAI's names ([`OPENAI_VOICES`]): each arm speaks its own voice for it.
    OpenAi(&'static str),
}

impl VoiceAsk {
    /// A request's `voice`, as written: OpenAI's names in any case, a blend under its canonical name,
    /// anything else a voice id (checked against the backend when the arm is chosen).
    pub fn read(written: &str) -> Result<VoiceAsk, String> {
        if let Some(name) = OPENAI_VOICES.iter().find(|n| n.eq_ignore_ascii_case(written)) {
            return Ok(VoiceAsk::OpenAi(name));
        }
        match VoiceBlend::parse(written) {
            Some(Ok(blend)) => Ok(VoiceAsk::Named(blend.to_string())),
            Some(Err(why)) => Err(format!("`{written}` is not a voice blend: {why}")),
            None => Ok(VoiceAsk::Named(written.to_string())),
        }
    }

    /// The voice named, where the request named one of the backend's.
    pub fn named(&self) -> Option<&str> {
        match self {
            VoiceAsk::Named(v) => Some(v),
            VoiceAsk::OpenAi(_) => None,
        }
    }
}

impl std::fmt::Display for VoiceAsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoiceAsk::Named(v) => f.write_str(v),
            VoiceAsk::OpenAi(name) => f.write_str(name),
        }
    }
}

/// The deployment's own choices of voice for OpenAI's names, per backend (`EARSHOT_OPENAI_VOICES`:
/// `{"kokoro": {"nova": "af_bella"}, "polly": {"onyx": "matthew"}}`); what it leaves out follows the rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiVoiceTable(BTreeMap<String, BTreeMap<&'static str, String>>);

impl OpenAiVoiceTable {
    /// Reads the setting's JSON; a name that is not OpenAI's is refused (a typo would pin nothing).
    pub fn parse(json: &str) -> Result<OpenAiVoiceTable, String> {
        let value: BTreeMap<String, BTreeMap<String, String>> =
            serde_json::from_str(json).map_err(|e| format!("an object of backends, each an object of OpenAI's names to voices: {e}"))?;
        let mut table = BTreeMap::new();
        for (backend, names) in value {
            let mut pinned = BTreeMap::new();
            for (name, voice) in names {
                let Some(openai) = OPENAI_VOICES.iter().find(|n| n.eq_ignore_ascii_case(&name)) else {
                    return Err(format!("`{name}` is not one of OpenAI's voices ({})", OPENAI_VOICES.join(", ")));
                };
                pinned.insert(*openai, voice);
            }
            table.insert(backend, pinned);
        }
        Ok(OpenAiVoiceTable(table))
    }

    /// The voice `backend` speaks OpenAI's `name` in, for `language` where it is known: the deployment's
    /// choice where it is one of the backend's voices that speaks the language, else the rule.
    pub fn voice(&self, backend: &dyn SpeechBackend, name: &str, language: Option<&Language>) -> String {
        let pinned = self.0.get(backend.name()).and_then(|names| names.get(name));
        let speaks = |voice: &str| language.is_none_or(|l| backend.voice_speaks(voice, l));
        if let Some(voice) = pinned.filter(|v| backend.voices().iter().any(|x| &x.id == *v) && speaks(v)) {
            return voice.clone();
        }
        let voices = voices_for(backend, language);
        let at = OPENAI_VOICES.iter().position(|n| *n == name).unwrap_or(0);
        voices[at % voices.len()].clone()
    }

    /// What each of OpenAI's names is on `backend` for `language`, in OpenAI's order (`GET /v1/audio/voices`).
    pub fn table(&self, backend: &dyn SpeechBackend, language: Option<&Language>) -> Vec<(&'static str, String)> {
        OPENAI_VOICES.iter().map(|name| (*name, self.voice(backend, name, language))).collect()
    }
}

/// The voices `backend` gives out to OpenAI's names for `language`: its voice for the language (or its
/// default) first, then its other voices whose own language it is, in its catalogue's order. Where even
/// its voice for the language is not one of the language's own (a container whose voices are all of
/// another language, each reading this one with its foreign timbre), every voice that speaks it.
fn voices_for(backend: &dyn SpeechBackend, language: Option<&Language>) -> Vec<String> {
    let first = language.and_then(|l| backend.voice_for_language(l)).unwrap_or_else(|| backend.default_voice());
    let voices = backend.voices();
    let own = |v: &earshot_core::speech::Voice| match language {
        Some(l) => Language::of_voice(&v.language).as_ref() == Some(l),
        None => Language::of_voice(&v.language) == voices.iter().find(|x| x.id == first).and_then(|x| Language::of_voice(&x.language)),
    };
    let mut out = vec![first.clone()];
    out.extend(voices.iter().filter(|v| v.id != first && own(v)).map(|v| v.id.clone()));
    if !voices.iter().any(|v| v.id == first && own(v)) {
        let speaks = |v: &str| language.is_none_or(|l| backend.voice_speaks(v, l));
        let rest: Vec<String> = voices.iter().filter(|v| !out.contains(&v.id) && speaks(&v.id)).map(|v| v.id.clone()).collect();
        out.extend(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use earshot_core::speech::{SessionOptions, SpeechError, SpeechSession, Voice};

    /// A catalogue alone (the rule opens nothing): voices with their languages, the first the default,
    /// every voice reading every language of `reads` where set (as the Kokoro container's do).
    struct Catalogue {
        voices: Vec<(&'static str, &'static str)>,
        reads: Option<Vec<&'static str>>,
    }

    #[async_trait]
    impl SpeechBackend for Catalogue {
        fn name(&self) -> &str {
            "kokoro"
        }
        fn voices(&self) -> Vec<Voice> {
            self.voices.iter().map(|(v, l)| Voice { id: v.to_string(), language: l.to_string(), description: String::new() }).collect()
        }
        fn default_voice(&self) -> String {
            self.voices[0].0.to_string()
        }
        fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
            match &self.reads {
                Some(reads) => self.voices.iter().any(|(v, _)| *v == voice) && reads.contains(&language.as_str()),
                None => self.voices.iter().any(|(v, l)| *v == voice && Language::of_voice(l).as_ref() == Some(language)),
            }
        }
        fn languages(&self) -> Vec<(Language, String)> {
            match &self.reads {
                Some(reads) => reads.iter().map(|l| (Language::parse(l).unwrap(), self.default_voice())).collect(),
                None => earshot_core::speech::languages_of(&self.voices(), &self.default_voice()),
            }
        }
        async fn open(&self, _: SessionOptions) -> Result<SpeechSession, SpeechError> {
            Err(SpeechError::new("backend_unreachable", "the rule opens nothing", true))
        }
        async fn health(&self) -> Result<(), SpeechError> {
            Ok(())
        }
    }

    fn given(backend: &Catalogue, language: &str) -> Vec<String> {
        let language = Language::parse(language).unwrap();
        OpenAiVoiceTable::default().table(backend, Some(&language)).into_iter().map(|(_, v)| v).collect()
    }

    #[test]
    fn the_names_go_round_the_language_s_own_voices_and_one_voice_is_said_for_all() {
        let production = Catalogue {
            voices: vec![("af_heart", "en-US"), ("af_bella", "en-US"), ("am_michael", "en-US"), ("bf_emma", "en-GB"), ("ff_siwis", "fr"), ("zf_xiaobei", "zh")],
            reads: None,
        };
        let english = given(&production, "en");
        assert_eq!(&english[..5], ["af_heart", "af_bella", "am_michael", "bf_emma", "af_heart"], "its voice for English first, then round");
        assert!(given(&production, "fr").iter().all(|v| v == "ff_siwis"), "one French voice: every name says it");
    }

    #[test]
    fn a_container_whose_voices_are_all_of_another_language_gives_them_all_out() {
        let local = Catalogue { voices: vec![("jf_alpha", "ja"), ("jf_nezumi", "ja"), ("jm_kumo", "ja")], reads: Some(vec!["en", "fr", "ja"]) };
        assert_eq!(&given(&local, "en")[..4], ["jf_alpha", "jf_nezumi", "jm_kumo", "jf_alpha"]);
    }

    #[test]
    fn a_request_s_voice_is_read_as_what_it_names() {
        assert_eq!(VoiceAsk::read("Shimmer"), Ok(VoiceAsk::OpenAi("shimmer")));
        assert_eq!(VoiceAsk::read("af_sky+af_bella"), Ok(VoiceAsk::Named("af_bella(0.500)+af_sky(0.500)".into())));
        assert_eq!(VoiceAsk::read("ruth"), Ok(VoiceAsk::Named("ruth".into())));
        assert!(VoiceAsk::read("a(0)+b").is_err());
    }
}
