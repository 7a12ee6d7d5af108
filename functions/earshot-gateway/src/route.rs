//! Steps 1 and 2 of a conversation ([`crate::conversation`]): which backends may answer, in which
//! order and with which voice ([`route`]), and the first of them that opens a session ([`open`]). Where
//! the language is not known yet, the core's switcher asks here again once the answer's first sentence
//! settles it ([`language_route`]): routing is the gateway's alone, switching the core's.

use std::sync::Arc;

use earshot_core::failover::{Arm, Failover, Opened};
use earshot_core::language::{Language, LanguageSource};
use earshot_core::protocol::BackendReason;
use earshot_core::speech::{codes, SpeakingRate, SpeechBackend, SpeechError};
use earshot_core::switcher::LanguageRoute;
use tokio_util::sync::CancellationToken;

use crate::api_error::ApiError;
use crate::auth::Claims;
use crate::config::Gateway;
use crate::owner::Owner;
use crate::request::SpeakRequest;
use crate::routing::Choice;
use crate::voice_ask::{OpenAiVoiceTable, VoiceAsk};
use earshot_core::output::OutputFormat;

/// The backends that may answer, in the order they are tried.
pub(crate) struct Route {
    pub choice: Choice,
    pub arms: Vec<Arm>,
    /// The conversation's language, where known, and where it came from.
    pub language: Option<(Language, LanguageSource)>,
    /// The backend chosen first, passed over because it cannot speak the language.
    pub language_from: Option<String>,
    /// The audio format the client plays (the request's, else the deployment's); `None`: the backend's.
    pub output: Option<OutputFormat>,
    /// How fast every arm speaks (the request's, else the deployment's).
    pub speaking_rate: SpeakingRate,
    /// The lexicon every arm says the conversation by: the owner's laid on the deployment's, or the
    /// deployment's ([`Gateway::lexicon_for`]).
    pub lexicon: Option<Arc<earshot_core::text::Lexicon>>,
}

/// Step 1: chooses the backend and its failover order among those the caller's token allows, with
/// the voice each would speak in. The requested voice is the chosen backend's (checked once it is
/// ready: a backend still starting does not know its voices); the others speak their voice for the
/// conversation's language (or their default), and one whose voice the token does not allow is left
/// out, as the token would refuse it.
///
/// Languages: a backend that cannot speak the conversation's language is passed over, as a full one
/// is. A backend the request names must speak it (else 400 `language_unsupported`); one the split or
/// the default chose is replaced by the first backend that can, with `backend_reason: language` and no
/// A/B arm (the arms are compared on answers each could have given). A language the request names that
/// no backend speaks is refused; a detected one that none speaks is set aside, and the default voice
/// speaks, as before languages were known. A voice the request names settles the language where only
/// detection would: the caller chose it.
pub(crate) fn route(gw: &Gateway, request: &SpeakRequest, scope: Option<&Claims>, owner: &Owner) -> Result<Route, ApiError> {
    let names: Vec<String> = gw.backend_names().into_iter().filter(|n| scope.is_none_or(|s| s.allows_backend(n))).collect();
    let routing = &gw.settings().routing;
    let mut language = request.language();
    if request.voice.as_ref().and_then(|v| v.named()).is_some() && matches!(language, Some((_, LanguageSource::Detected))) {
        language = None;
    }
    // Which backends can speak it: all, where the language is not known; a backend still starting
    // does not know its languages yet and is kept (it is refused as not ready when opened).
    let speaks = |name: &str, language: &Language| gw.backend(name).is_some_and(|b| b.readiness().is_err() || b.voice_for_language(language).is_some());
    let capable: Vec<String> = match &language {
        Some((l, _)) => names.iter().filter(|n| speaks(n, l)).cloned().collect(),
        None => names.clone(),
    };
    if let Some((l, source)) = &language {
        if capable.is_empty() && *source == LanguageSource::Request {
            return Err(language_unsupported(gw, &names, l, None));
        }
        if capable.is_empty() {
            language = None;
        }
    }
    let unit = owner.assignment_unit(&request.conversation_id);
    // Where requests may not name their backend, a caller the operator vouches for still may: an IAM
    // principal (the operator's own signed services, `earshot doctor --sigv4`), or a token whose `backends`
    // claim lists what its bearer may use (the app's backend chose them when it minted it).
    let trusted = owner.is_iam() || scope.is_some_and(|s| s.backends.is_some());
    let mut choice = routing.choose_for(request.backend.as_deref(), unit, &names, trusted)?;
    let mut language_from = None;
    if let Some((l, _)) = language.as_ref().filter(|_| !capable.contains(&choice.backend)) {
        if choice.reason == BackendReason::Request {
            return Err(language_unsupported(gw, &names, l, Some(&choice.backend)));
        }
        language_from = Some(choice.backend.clone());
        let instead = routing.choose(None, unit, &capable)?;
        choice = Choice { backend: instead.backend, reason: BackendReason::Language, arm: None };
    }
    let chosen = gw.backend(&choice.backend).cloned().ok_or_else(|| ApiError::upstream("no_backend", "no backend is configured", false))?;
    let ready = chosen.readiness().is_ok();
    let spoken = language.as_ref().map(|(l, _)| l);
    let table = &gw.settings().openai_voices;
    let voice = match (ready, &request.voice) {
        (true, requested) => voice_for(&chosen, requested.as_ref(), spoken, table)?,
        (false, Some(VoiceAsk::Named(v))) => v.clone(),
        (false, _) => chosen.default_voice(),
    };
    // The arm's voice is fixed here, whether or not its backend has finished starting (then the requested
    // one, or its default): a token that does not allow it never hears it, even from a backend that is
    // ready by the time the session opens. Ready, that is a 403; still starting (its voice for the language
    // is not known yet), the arm is left out, and with no other arm the caller is told to come back.
    let forbidden = scope.is_some_and(|s| !s.allows_voice(&voice));
    if forbidden && ready {
        return Err(ApiError::forbidden(
            "token_out_of_scope",
            format!("this token may not use the voice `{voice}` of {}: name an allowed voice", chosen.name()),
        ));
    }
    let starting = chosen.readiness().err();
    let chosen_name = chosen.name().to_string();
    let mut arms = if forbidden { Vec::new() } else { vec![Arm { backend: chosen, voice }] };
    for name in routing.fallbacks(&choice, &capable) {
        let Some(backend) = gw.backend(&name).cloned() else { continue };
        // OpenAI's name is each backend's own voice for it; a voice another backend named is not this one's.
        let voice = match &request.voice {
            Some(VoiceAsk::OpenAi(name)) if backend.readiness().is_ok() => table.voice(backend.as_ref(), name, spoken),
            _ => spoken.and_then(|l| backend.voice_for_language(l)).unwrap_or_else(|| backend.default_voice()),
        };
        if scope.is_none_or(|s| s.allows_voice(&voice)) {
            arms.push(Arm { backend, voice });
        }
    }
    match arms.first() {
        None => {
            // The backend's own words may name its address (the container's URL, the endpoint): the log
            // has them, the caller is told in earshot's.
            if let Some(e) = &starting {
                tracing::info!(backend = %chosen_name, code = %e.code, "refused while starting: {}", earshot_core::redact::redact(&e.message));
            }
            let code = starting.map_or(codes::NOT_READY.to_string(), |e| e.code);
            let said = SpeechError::new(&code, format!("{chosen_name} is starting, and no other voice this caller may use is ready: retry shortly"), true);
            return Err(ApiError::from_backend(said));
        }
        // The chosen arm was left out: the next speaks, as a failover (the A/B arm stays the assigned one).
        Some(first) if forbidden => {
            choice = Choice { backend: first.backend.name().to_string(), reason: BackendReason::Failover, arm: choice.arm };
        }
        Some(_) => {}
    }
    let output = request.output.or(gw.settings().output_format);
    let speaking_rate = request.rate.unwrap_or(gw.settings().speaking_rate);
    let lexicon = gw.lexicon_for(scope)?;
    Ok(Route { choice, arms, language, language_from, output, speaking_rate, lexicon })
}

/// The rate a conversation's arms are opened at for the client's `output` format (Polly's 8 kHz for
/// telephony; `None`: each arm's own). The cache's keys hold it, so whatever renders into the cache
/// outside a conversation (the warm-up) opens at this rate too.
pub(crate) fn session_rate(output: Option<OutputFormat>) -> Option<u32> {
    output.map(|o| o.sample_rate())
}

/// 400 `language_unsupported`: the named backend (or every one) cannot speak `language`; says what
/// each can speak.
fn language_unsupported(gw: &Gateway, names: &[String], language: &Language, named: Option<&str>) -> ApiError {
    let spoken = |name: &str| {
        let languages: Vec<String> = gw.backend(name).map(|b| b.languages().into_iter().map(|(l, _)| l.to_string()).collect()).unwrap_or_default();
        format!("{name}: {}", if languages.is_empty() { "none known yet".to_string() } else { languages.join(", ") })
    };
    let message = match named {
        Some(name) => format!("backend `{name}` cannot speak {language} ({}); choose another backend or leave `backend` out", spoken(name)),
        None => format!("no backend here can speak {language} ({})", names.iter().map(|n| spoken(n)).collect::<Vec<_>>().join("; ")),
    };
    ApiError::bad_request("language_unsupported", message)
}

/// The voice a ready backend speaks: the requested one (which must be its, or a blend of its voices where
/// it blends, and speak the language the request names), its voice for OpenAI's name, else its voice for
/// the language, else its default.
fn voice_for(
    backend: &Arc<dyn SpeechBackend>,
    requested: Option<&VoiceAsk>,
    language: Option<&Language>,
    table: &OpenAiVoiceTable,
) -> Result<String, ApiError> {
    let requested = match requested {
        Some(VoiceAsk::OpenAi(name)) => return Ok(table.voice(backend.as_ref(), name, language)),
        Some(VoiceAsk::Named(v)) => Some(v),
        None => None,
    };
    match requested {
        Some(v) if earshot_core::voice_blend::VoiceBlend::parse(v).is_some() && !backend.blends_voices() => Err(ApiError::bad_request(
            "voice_blend_unsupported",
            format!("backend `{}` speaks no blend of voices (`{v}`): name one of its voices, or ask for kokoro", backend.name()),
        )),
        Some(v) if earshot_core::voice_blend::offers(&backend.voices(), backend.blends_voices(), v) => match language {
            Some(l) if !backend.voice_speaks(v, l) => Err(ApiError::bad_request(
                "voice_language_mismatch",
                format!("the voice `{v}` of {} cannot speak {l}: name one of its {l} voices, or leave `voice` out", backend.name()),
            )),
            _ => Ok(v.clone()),
        },
        Some(v) => {
            let known: Vec<String> = backend.voices().into_iter().map(|x| x.id).collect();
            Err(ApiError::bad_request("unknown_voice", format!("backend `{}` has no voice `{v}` (voices: {})", backend.name(), known.join(", "))))
        }
        None => Ok(language.and_then(|l| backend.voice_for_language(l)).unwrap_or_else(|| backend.default_voice())),
    }
}

/// Routes `request` again for the language its answer's first sentence turns out to be in, as if the
/// request had named it: the arms in order, or `None` where none here speaks it (or the caller's token
/// allows none that does). The core's switcher decides what that calls for
/// ([`earshot_core::switcher::decide`]).
pub(crate) fn language_route(gw: Arc<Gateway>, request: &SpeakRequest, scope: Option<&Claims>, owner: &Owner) -> LanguageRoute {
    let (request, scope, owner) = (request.clone(), scope.cloned(), owner.clone());
    Arc::new(move |language: &Language| {
        let request = SpeakRequest { language: Some(language.clone()), ..request.clone() };
        route(&gw, &request, scope.as_ref(), &owner).ok().map(|routed| routed.arms)
    })
}

/// Step 2: opens the first arm that takes the conversation, through the sentence cache where it is on
/// (the owner's part of it under scope `owner`), with the switcher routing it again by `language_route`
/// where given, and by `reroute` for a sentence its voice passes over. With none, the client is told before any stream starts (503 with `Retry-After` for
/// starting or full, 502 for a failure).
pub(crate) async fn open(
    gw: &Gateway,
    route: &Route,
    owner: &Owner,
    conversation_id: &str,
    cancel: &CancellationToken,
    language_route: Option<LanguageRoute>,
    reroute: Option<LanguageRoute>,
) -> Result<Opened, ApiError> {
    let language = route.language.as_ref().map(|(l, _)| l.clone());
    let failover = Failover::new(route.arms.clone())
        .open_timeout(gw.settings().backend_open_timeout)
        .language(language)
        .sample_rate(session_rate(route.output))
        .speaking_rate(route.speaking_rate)
        .lexicon(route.lexicon.clone())
        .cache(gw.cache_use(owner))
        .arm_health(Some(gw.arm_health().clone()))
        .language_route(language_route)
        .reroute(reroute);
    match failover.open_arms(conversation_id, cancel).await {
        Ok(opened) => Ok(opened),
        Err((backend, e)) => {
            if e.code == codes::BUSY {
                if let Some(namespace) = &gw.settings().metrics_namespace {
                    crate::metrics::log_refusal(&backend, namespace);
                }
            }
            Err(ApiError::from_backend(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GatewaySettings;
    use crate::routing::Routing;
    use async_trait::async_trait;
    use earshot_core::speech::{SessionOptions, SpeechError, SpeechSession, Voice};
    use std::time::Duration;

    /// A backend known by its name, voices and readiness alone (`route` opens nothing).
    struct Named {
        name: &'static str,
        /// Each voice with its language.
        voices: Vec<(&'static str, &'static str)>,
        ready: bool,
    }

    #[async_trait]
    impl SpeechBackend for Named {
        fn name(&self) -> &str {
            self.name
        }
        fn voices(&self) -> Vec<Voice> {
            self.voices.iter().map(|(v, l)| Voice { id: v.to_string(), language: l.to_string(), description: String::new() }).collect()
        }
        fn default_voice(&self) -> String {
            self.voices[0].0.to_string()
        }
        async fn open(&self, _: SessionOptions) -> Result<SpeechSession, SpeechError> {
            Err(SpeechError::new("backend_unreachable", "not opened in these tests", true))
        }
        async fn health(&self) -> Result<(), SpeechError> {
            Ok(())
        }
        fn readiness(&self) -> Result<(), SpeechError> {
            if self.ready {
                Ok(())
            } else {
                Err(SpeechError::new(codes::NOT_READY, "loading from http://10.0.0.7:8080", true))
            }
        }
    }

    fn gateway(kokoro_ready: bool, failover: bool) -> Gateway {
        gateway_with(kokoro_ready, Routing { failover, ..Default::default() })
    }

    /// Kokoro speaks English and French; Polly English, French and Mandarin.
    fn gateway_with(kokoro_ready: bool, routing: Routing) -> Gateway {
        gateway_of(GatewaySettings { routing, metrics_namespace: None, ..Default::default() }, kokoro_ready)
    }

    fn gateway_of(settings: GatewaySettings, kokoro_ready: bool) -> Gateway {
        let kokoro = Arc::new(Named { name: "kokoro", voices: vec![("af_heart", "en-US"), ("am_adam", "en-US"), ("ff_siwis", "fr")], ready: kokoro_ready });
        let polly = Arc::new(Named { name: "polly", voices: vec![("Joanna", "en-US"), ("Lea", "fr-FR"), ("Zhiyu", "cmn-CN")], ready: true });
        let agent = Arc::new(earshot_agents::ScriptedAgent::new(earshot_agents::ScriptedConfig {
            tokens_per_second: 1000.0,
            first_token_delay: Duration::ZERO,
            ..Default::default()
        }));
        Gateway::new(vec![kokoro, polly], agent, settings)
    }

    fn language(route: &Route) -> Option<(String, LanguageSource)> {
        route.language.as_ref().map(|(l, s)| (l.to_string(), *s))
    }

    #[test]
    fn a_backend_that_cannot_speak_the_language_is_passed_over_with_the_reason() {
        let gw = gateway(true, true);
        let zh = route(&gw, &request(r#"{"text":"今天天气很好，我们去公园散步吧。"}"#), None, &Owner::local()).unwrap();
        assert_eq!((zh.choice.backend.as_str(), zh.choice.reason, zh.language_from.as_deref()), ("polly", BackendReason::Language, Some("kokoro")));
        assert_eq!(language(&zh), Some(("zh".into(), LanguageSource::Detected)));
        assert_eq!(arms(&zh), vec![("polly".into(), "Zhiyu".into())], "no failover to an arm that cannot speak it");
        // French: both speak it, each arm in its French voice.
        let fr = route(&gw, &request(r#"{"text":"Bonjour, je suis votre assistant et je vais vous répondre tout de suite."}"#), None, &Owner::local()).unwrap();
        assert_eq!((fr.choice.reason, fr.language_from.as_deref()), (BackendReason::Default, None));
        assert_eq!(arms(&fr), vec![("kokoro".into(), "ff_siwis".into()), ("polly".into(), "Lea".into())]);
        // Named, not detected: the tag's language.
        let named = route(&gw, &request(r#"{"text":"OK.","language":"cmn-Hans-CN"}"#), None, &Owner::local()).unwrap();
        assert_eq!(language(&named), Some(("zh".into(), LanguageSource::Request)));
    }

    #[test]
    fn a_language_no_backend_speaks_is_refused_when_named_and_set_aside_when_detected() {
        let gw = gateway(true, true);
        let named = route(&gw, &request(r#"{"text":"Hi.","language":"ko"}"#), None, &Owner::local()).err().unwrap();
        assert_eq!((named.status.as_u16(), named.error.code.as_str()), (400, "language_unsupported"));
        assert!(named.error.message.contains("kokoro: en, fr") && named.error.message.contains("polly: en, fr, zh"), "{}", named.error.message);
        let asked = route(&gw, &request(r#"{"text":"Hi.","language":"zh","backend":"kokoro"}"#), None, &Owner::local()).err().unwrap();
        assert_eq!(asked.error.code, "language_unsupported");
        assert!(asked.error.message.contains("backend `kokoro` cannot speak zh"), "{}", asked.error.message);
        let detected = route(&gw, &request(r#"{"text":"Привет, как дела? Всё хорошо."}"#), None, &Owner::local()).unwrap();
        assert_eq!((language(&detected), detected.choice.reason), (None, BackendReason::Default));
    }

    #[test]
    fn a_named_voice_settles_a_detected_language_but_must_speak_a_named_one() {
        let gw = gateway(true, true);
        let chose = route(&gw, &request(r#"{"text":"今天天气很好。","voice":"am_adam"}"#), None, &Owner::local()).unwrap();
        assert_eq!((chose.choice.backend.as_str(), language(&chose)), ("kokoro", None));
        let mismatch = route(&gw, &request(r#"{"text":"Bonjour.","language":"fr","voice":"am_adam"}"#), None, &Owner::local()).err().unwrap();
        assert_eq!(mismatch.error.code, "voice_language_mismatch");
    }

    #[test]
    fn the_split_keeps_its_arms_for_answers_both_can_speak_and_passes_over_the_other_for_the_rest() {
        let routing = Routing { weights: vec![("kokoro".into(), 50), ("polly".into(), 50)], failover: true, ..Default::default() };
        let gw = gateway_with(true, routing);
        let (mut passed_over, mut assigned) = (0, 0);
        for i in 0..40 {
            let body = format!(r#"{{"text":"今天天气很好。","conversation_id":"c-{i}"}}"#);
            let r = route(&gw, &request(&body), None, &Owner::local()).unwrap();
            assert_eq!(r.choice.backend, "polly", "only Polly speaks Mandarin");
            match r.choice.reason {
                BackendReason::Language => {
                    assert_eq!((r.choice.arm.as_deref(), r.language_from.as_deref()), (None, Some("kokoro")));
                    passed_over += 1;
                }
                BackendReason::Ab => {
                    assert_eq!(r.choice.arm.as_deref(), Some("polly"));
                    assigned += 1;
                }
                other => panic!("unexpected reason {other:?}"),
            }
        }
        assert!(passed_over > 5 && assigned > 5, "both halves of the split seen: {passed_over} passed over, {assigned} assigned");
    }

    fn request(body: &str) -> SpeakRequest {
        crate::request::parse(body.as_bytes(), &axum::http::HeaderMap::new(), &Default::default()).expect("a valid request")
    }

    fn scope(voices: &[&str]) -> Claims {
        Claims {
            aud: "earshot".into(),
            exp: u64::MAX,
            iat: None,
            nbf: None,
            sub: Some("user-1".into()),
            backends: None,
            voices: Some(voices.iter().map(|v| v.to_string()).collect()),
            releases: None,
            lexicon: None,
            max_chars: None,
            conversations: None,
            max_conversations: None,
            max_chars_per_hour: None,
            max_input_chars_per_hour: None,
            max_requests_per_minute: None,
        }
    }

    fn arms(route: &Route) -> Vec<(String, String)> {
        route.arms.iter().map(|a| (a.backend.name().to_string(), a.voice.clone())).collect()
    }

    #[test]
    fn openai_s_names_are_each_arm_s_own_voices_round_its_voices_for_the_language() {
        let gw = gateway(true, true);
        let spoken = |voice: &str| {
            let body = format!(r#"{{"text":"Hello there, how are you doing today?","voice":"{voice}"}}"#);
            arms(&route(&gw, &request(&body), None, &Owner::local()).unwrap())
        };
        let pair = |k: &str, p: &str| vec![("kokoro".to_string(), k.to_string()), ("polly".to_string(), p.to_string())];
        // Kokoro has two English voices, its voice for English first; Polly one, said for every name.
        assert_eq!(spoken("alloy"), pair("af_heart", "Joanna"));
        assert_eq!(spoken("ash"), pair("am_adam", "Joanna"));
        assert_eq!(spoken("ballad"), pair("af_heart", "Joanna"), "round again past the backend's voices");
        assert_eq!(spoken("NOVA"), spoken("nova"), "in any case");
        // French: each arm's French voice.
        let french =
            route(&gw, &request(r#"{"text":"Bonjour, je suis votre assistant et je vais vous répondre.","voice":"ash"}"#), None, &Owner::local()).unwrap();
        assert_eq!(arms(&french), pair("ff_siwis", "Lea"));
        // The deployment pins a name; one pinned to a voice that cannot speak the language follows the rule.
        let table = crate::voice_ask::OpenAiVoiceTable::parse(r#"{"kokoro": {"alloy": "am_adam", "ash": "ff_siwis"}}"#).unwrap();
        let pinned = gateway_of(
            GatewaySettings { routing: Routing { failover: true, ..Default::default() }, openai_voices: table, metrics_namespace: None, ..Default::default() },
            true,
        );
        let body = |v: &str| request(&format!(r#"{{"text":"Hello there, how are you doing today?","voice":"{v}"}}"#));
        assert_eq!(arms(&route(&pinned, &body("alloy"), None, &Owner::local()).unwrap())[0].1, "am_adam");
        assert_eq!(arms(&route(&pinned, &body("ash"), None, &Owner::local()).unwrap())[0].1, "am_adam", "ff_siwis is not an English voice here");
        assert!(crate::voice_ask::OpenAiVoiceTable::parse(r#"{"kokoro": {"allloy": "am_adam"}}"#).is_err(), "a name not OpenAI's");
    }

    #[test]
    fn a_blend_is_refused_by_name_where_the_backend_does_not_blend() {
        let gw = gateway(true, true);
        let e = route(&gw, &request(r#"{"text":"Hello.","backend":"polly","voice":"Joanna+Lea"}"#), None, &Owner::local()).err().unwrap();
        assert_eq!((e.status.as_u16(), e.error.code.as_str()), (400, "voice_blend_unsupported"));
        assert!(e.error.message.contains("polly"), "{}", e.error.message);
    }

    #[test]
    fn the_failover_order_follows_the_chosen_backend_with_each_fallbacks_default_voice() {
        let gw = gateway(true, true);
        let route = route(&gw, &request(r#"{"text":"Hi","voice":"am_adam"}"#), None, &Owner::local()).unwrap();
        assert_eq!(arms(&route), vec![("kokoro".into(), "am_adam".into()), ("polly".into(), "Joanna".into())]);
        assert_eq!(route.language, None, "`Hi` is too short to tell");
        let off = gateway(true, false);
        assert_eq!(route_len(&off), 1, "no failover: one arm");
    }

    fn route_len(gw: &Gateway) -> usize {
        route(gw, &request(r#"{"text":"Hi"}"#), None, &Owner::local()).unwrap().arms.len()
    }

    #[test]
    fn a_fallback_whose_voice_the_token_does_not_allow_is_left_out() {
        // A spill to it would be refused by the token; leaving it out makes a full backend a 503, not a 403.
        let gw = gateway(true, true);
        let route = route(&gw, &request(r#"{"text":"Hi"}"#), Some(&scope(&["af_heart"])), &Owner::local()).unwrap();
        assert_eq!(arms(&route), vec![("kokoro".into(), "af_heart".into())]);
    }

    #[test]
    fn the_requested_voice_is_checked_once_its_backend_is_ready() {
        let ready = gateway(true, true);
        assert_eq!(route(&ready, &request(r#"{"text":"Hi","voice":"nobody"}"#), None, &Owner::local()).err().unwrap().error.code, "unknown_voice");
        let out_of_scope = route(&ready, &request(r#"{"text":"Hi","voice":"am_adam"}"#), Some(&scope(&["af_heart", "Joanna"])), &Owner::local()).err().unwrap();
        assert_eq!((out_of_scope.status.as_u16(), out_of_scope.error.code.as_str()), (403, "token_out_of_scope"));
        // Still loading, its voices unknown: the conversation may fail over rather than be refused.
        let loading = gateway(false, true);
        let route = route(&loading, &request(r#"{"text":"Hi","voice":"nobody"}"#), None, &Owner::local()).unwrap();
        assert_eq!(arms(&route), vec![("kokoro".into(), "nobody".into()), ("polly".into(), "Joanna".into())]);
    }

    #[test]
    fn where_requests_may_not_name_a_backend_an_iam_caller_and_a_token_listing_backends_still_may() {
        let closed = gateway_with(true, Routing { allow_override: false, ..Default::default() });
        let named = request(r#"{"text":"Hi","backend":"polly"}"#);
        assert_eq!(route(&closed, &named, None, &Owner::local()).err().unwrap().error.code, "backend_choice_forbidden");
        assert_eq!(route(&closed, &named, Some(&scope(&["Joanna"])), &Owner::subject("u")).err().unwrap().error.code, "backend_choice_forbidden");
        let iam = route(&closed, &named, None, &Owner::iam("arn:aws:iam::123456789012:role/doctor")).unwrap();
        assert_eq!((iam.choice.backend.as_str(), iam.choice.reason), ("polly", BackendReason::Request));
        let listing = Claims { backends: Some(vec!["kokoro".into(), "polly".into()]), ..scope(&["Joanna"]) };
        assert_eq!(route(&closed, &named, Some(&listing), &Owner::subject("u")).unwrap().choice.backend, "polly");
    }

    #[tokio::test]
    async fn an_arm_that_failed_to_open_is_remembered() {
        // Both arms fail to open (`Named` opens nothing): each is remembered as sick.
        let gw = gateway(true, true);
        let chosen = route(&gw, &request(r#"{"text":"Hi"}"#), None, &Owner::local()).unwrap();
        assert_eq!(arms(&chosen).len(), 2);
        let failed = open(&gw, &chosen, &Owner::local(), "c-1", &CancellationToken::new(), None, None).await.err().unwrap();
        assert_eq!(failed.error.code, "backend_unreachable");
        let sick = gw.arm_health().report();
        assert_eq!((sick["kokoro"].code.as_str(), sick["polly"].code.as_str()), ("backend_unreachable", "backend_unreachable"));
    }

    #[test]
    fn a_token_that_forbids_the_voice_is_refused_while_its_backend_is_still_starting() {
        // Kokoro's default, af_heart, which this token does not allow: refused once Kokoro is ready; while it
        // loads (its voice for the language not known yet), its arm is left out: the fallback speaks, or,
        // with none, the caller is told to come back (503, retryable).
        let ready = gateway(true, true);
        let refused = route(&ready, &request(r#"{"text":"Hi","backend":"kokoro"}"#), Some(&scope(&["Joanna"])), &Owner::local()).err().unwrap();
        assert_eq!((refused.status.as_u16(), refused.error.code.as_str()), (403, "token_out_of_scope"));
        let loading = gateway(false, true);
        let later = route(&loading, &request(r#"{"text":"Hi","backend":"kokoro"}"#), Some(&scope(&["Joanna"])), &Owner::local()).err().unwrap();
        assert_eq!((later.status.as_u16(), later.error.code.as_str()), (503, codes::NOT_READY));
        assert!(!later.error.message.contains("10.0.0.7") && later.error.message.contains("kokoro is starting"), "{}", later.error.message);
        let fallback = route(&loading, &request(r#"{"text":"Hi"}"#), Some(&scope(&["Joanna"])), &Owner::local()).unwrap();
        assert_eq!(arms(&fallback), vec![("polly".into(), "Joanna".into())], "the starting arm whose default is forbidden is left out");
        let loading = gateway(false, true);
        let allowed = route(&loading, &request(r#"{"text":"Hi","backend":"kokoro"}"#), Some(&scope(&["af_heart"])), &Owner::local()).unwrap();
        assert_eq!(arms(&allowed), vec![("kokoro".into(), "af_heart".into())]);
    }
}
