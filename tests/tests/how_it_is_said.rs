//! How a sentence is said, end to end: a speaking rate (the Kokoro container's speed, Polly's prosody
//! rate as SSML) and a pronunciation lexicon (every arm sent the same words, a failover included; an
//! entry in IPA as phonemes to the container and a `<phoneme>` to Polly), with the words a client sees
//! still the written ones.

use std::sync::Arc;

use earshot_aws::{PollyBackend, PollySettings, SageMakerBackend, SageMakerSettings};
use earshot_client::{speak, CallOptions, Received, SpeakBody};
use earshot_core::protocol::TimingSource;
use earshot_core::speech::SpeechBackend;
use earshot_core::text::Lexicon;
use earshot_e2e::{agent, check_conversation, kokoro_backend, serve, text, EarshotProcess, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings, Routing};
use earshot_standins::{StandIns, StandInsConfig};

const ANSWER: &str = "Your order shipped this morning. It should arrive on Thursday, before noon.";
const LEXICON: &str = "# how this deployment says its product names\nSQL = sequel\nkubectl = cube control\nNguyen = /wˈɪn/\n";

fn settings(lexicon: Option<&str>) -> GatewaySettings {
    let mut settings = GatewaySettings { metrics_namespace: None, ..Default::default() };
    settings.cache.scope = earshot_core::cache::CacheScope::Off;
    settings.lexicon = lexicon.map(|l| Arc::new(Lexicon::parse(l).expect("the lexicon")));
    settings
}

async fn kokoro_gateway(lexicon: Option<&str>) -> String {
    let backend = kokoro_backend(Kokoro::shared()).await;
    let mut settings = settings(lexicon);
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    serve(Gateway::new(vec![backend], Arc::new(agent(200.0)), settings)).await.url
}

/// The answer's audio in milliseconds, and where its last word ends from the answer's start.
fn lengths(r: &Received) -> (f64, f64) {
    let timeline = r.timeline.as_ref().expect("a timeline");
    let audio: f64 = timeline.sentences.iter().map(|s| s.audio_ms).sum();
    let before_last: f64 = timeline.sentences[..timeline.sentences.len() - 1].iter().map(|s| s.audio_ms).sum();
    let (timing, words) = r.words(timeline.sentences.len() as u32 - 1);
    assert_eq!(timing, Some(TimingSource::Model), "the voice's own word timings");
    (audio, before_last + words.last().expect("words").end_ms)
}

#[tokio::test]
async fn a_slower_or_faster_rate_stretches_the_audio_and_its_word_timings_with_it() {
    let url = kokoro_gateway(None).await;
    let said_at = |rate: f64| {
        let url = url.clone();
        async move {
            let r = speak(&url, &SpeakBody { rate: Some(rate), ..text(ANSWER) }, &CallOptions::default()).await.expect("spoken");
            check_conversation(&r);
            lengths(&r)
        }
    };
    let (audio, last_word) = said_at(1.0).await;
    for rate in [0.75, 1.5] {
        let (scaled_audio, scaled_last_word) = said_at(rate).await;
        // Within 10 % of the length at the voice's own rate divided by the rate.
        for (what, normal, scaled) in [("audio", audio, scaled_audio), ("the last word's end", last_word, scaled_last_word)] {
            let expected = normal / rate;
            assert!((scaled - expected).abs() <= 0.10 * expected, "rate {rate}: {what} {scaled:.0} ms, expected about {expected:.0} ms (at 1: {normal:.0} ms)");
        }
    }
}

#[tokio::test]
async fn a_rate_outside_half_to_double_is_refused_before_any_speech() {
    let url = kokoro_gateway(None).await;
    for rate in [0.25, 2.5] {
        let response = reqwest::Client::new().post(format!("{url}/v1/speak")).json(&serde_json::json!({"text": "Hello.", "rate": rate})).send().await.unwrap();
        assert_eq!(response.status(), 400);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_rate", "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("0.5 to 2"), "{body}");
    }
}

#[tokio::test]
async fn a_lexicon_entry_changes_what_the_voice_says_and_the_words_stay_as_written() {
    let said = "Run kubectl with SQL today.";
    let plain = speak(&kokoro_gateway(None).await, &text(said), &CallOptions::default()).await.expect("spoken");
    let lexicon = speak(&kokoro_gateway(Some(LEXICON)).await, &text(said), &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&lexicon), [said], "the client is told the sentence as written");
    let (timing, words) = lexicon.words(0);
    assert_eq!(timing, Some(TimingSource::Model));
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(texts, ["Run", "kubectl", "with", "SQL", "today"], "every word as written, each timed by the model");
    // "cube control" takes longer to say than the voice's own reading of "kubectl": another sound.
    let kubectl = |r: &Received| r.words(0).1.iter().find(|w| w.text == "kubectl").map(|w| w.end_ms - w.start_ms).unwrap();
    assert!((kubectl(&lexicon) - kubectl(&plain)).abs() > 50.0, "kubectl: {} ms with the lexicon, {} ms without", kubectl(&lexicon), kubectl(&plain));
    assert_ne!(lexicon.audio, plain.audio);
}

#[tokio::test]
async fn an_ipa_entry_is_said_with_its_phonemes_by_the_container_and_timed_as_written() {
    let said = "Call Nguyen today.";
    let plain = speak(&kokoro_gateway(None).await, &text(said), &CallOptions::default()).await.expect("spoken");
    let lexicon = speak(&kokoro_gateway(Some(LEXICON)).await, &text(said), &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&lexicon), [said], "the client is told the sentence as written");
    for r in [&plain, &lexicon] {
        let (timing, words) = r.words(0);
        assert_eq!(timing, Some(TimingSource::Model));
        assert_eq!(words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["Call", "Nguyen", "today"]);
    }
    // The voice's own reading of "Nguyen" has two syllables or more; /wˈɪn/ has one.
    let nguyen = |r: &Received| r.words(0).1.iter().find(|w| w.text == "Nguyen").map(|w| w.end_ms - w.start_ms).unwrap();
    assert!(nguyen(&lexicon) + 50.0 < nguyen(&plain), "Nguyen: {} ms as /wˈɪn/, {} ms as the voice reads it", nguyen(&lexicon), nguyen(&plain));
    assert_ne!(lexicon.audio, plain.audio);
}

async fn standins() -> StandIns {
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    earshot_standins::start(StandInsConfig { kokoro_url: kokoro.url.clone(), ..Default::default() }, 0).await.expect("the stand-ins start")
}

async fn polly(config: &earshot_aws::SdkConfig) -> Arc<dyn SpeechBackend> {
    let settings = PollySettings { first_audio_timeout: Some(earshot_e2e::untested_silence().await), ..Default::default() };
    Arc::new(PollyBackend::new(config, settings).expect("a Polly backend"))
}

#[tokio::test]
async fn polly_is_sent_the_lexicon_s_words_at_the_rate_as_ssml() {
    let s = standins().await;
    let config = earshot_e2e::run_aws::sdk_for(&s).await;
    let mut settings = settings(Some(LEXICON));
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    let url = serve(Gateway::new(vec![polly(&config).await], Arc::new(agent(200.0)), settings)).await.url;
    let r = speak(&url, &SpeakBody { rate: Some(1.5), ..text("We use SQL & more.") }, &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&r), ["We use SQL & more."]);
    let ssml = s.stats.polly_ssml.lock().unwrap().clone();
    assert_eq!(ssml, [r#"<speak><prosody rate="150%">We use sequel &amp; more.</prosody></speak>"#], "one document, escaped, at 150 %");
    // Words Polly does not time are estimated from the written sentence.
    let (timing, words) = r.words(0);
    assert_eq!(timing, Some(TimingSource::Estimated));
    assert_eq!(words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["We", "use", "SQL", "more"]);
    // At the voice's own rate the text goes plain.
    let r = speak(&url, &text("Plain SQL."), &CallOptions::default()).await.expect("spoken");
    check_conversation(&r);
    assert_eq!(s.stats.polly_ssml.lock().unwrap().len(), 1, "no SSML at rate 1");
    assert!(s.stats.polly_spoken.lock().unwrap().iter().any(|u| u.text == "Plain sequel."));
    // An IPA entry goes as a `<phoneme>` in IPA, at any rate, the words as written inside it.
    let r = speak(&url, &text("Ask Nguyen & me."), &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&r), ["Ask Nguyen & me."]);
    let ssml = s.stats.polly_ssml.lock().unwrap().clone();
    assert_eq!(ssml.last().map(String::as_str), Some(r#"<speak>Ask <phoneme alphabet="ipa" ph="wˈɪn">Nguyen</phoneme> &amp; me.</speak>"#));
    assert_eq!(r.words(0).1.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["Ask", "Nguyen", "me"]);
}

#[tokio::test]
async fn a_failover_before_the_first_audio_says_the_entry_as_the_first_arm_was_sent_it() {
    let s = standins().await;
    let config = earshot_e2e::run_aws::sdk_for(&s).await;
    let kokoro = SageMakerSettings {
        endpoint_name: "earshot-kokoro".into(),
        target_variant: None,
        voices: vec!["jf_alpha".into()],
        default_voice: "jf_alpha".into(),
        language_voices: vec![],
        speed: 1.0,
    };
    let sagemaker: Arc<dyn SpeechBackend> = Arc::new(SageMakerBackend::new(&config, kokoro));
    let mut settings = settings(Some(LEXICON));
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    settings.routing = Routing { failover: true, ..Default::default() };
    let url = serve(Gateway::new(vec![polly(&config).await, sagemaker], Arc::new(agent(200.0)), settings)).await.url;
    // Polly's stand-in fails the stream on the marker: the conversation moves to Kokoro on SageMaker.
    let said = "Try SQL with Nguyen [[ServiceFailureException]] now.";
    let r = speak(&url, &text(said), &CallOptions::default()).await.expect("spoken");
    check_conversation(&r);
    assert_eq!(r.session.as_ref().unwrap().backend, "kokoro", "the second arm (Kokoro on SageMaker) speaks");
    let to_kokoro: Vec<String> = s.stats.sagemaker_synthesize.lock().unwrap().iter().filter_map(|m| m["text"].as_str().map(str::to_string)).collect();
    assert_eq!(to_kokoro, ["Try sequel with [Nguyen](/wˈɪn/) [[ServiceFailureException]] now."], "the second arm is sent the lexicon's words and phonemes too");
    assert!(r.words(0).1.iter().any(|w| w.text == "SQL"), "and the client sees the written word");
}

/// The audio a conversation through `url` made of `said`, in milliseconds (the synthetic voice's sentence
/// lasts as long as the text it is sent: what the lexicon changed is heard in the length).
async fn audio_of(url: &str, said: &str) -> f64 {
    let r = speak(url, &text(said), &CallOptions::default()).await.expect("spoken");
    check_conversation(&r);
    r.timeline.as_ref().expect("a timeline").sentences.iter().map(|s| s.audio_ms).sum()
}

#[tokio::test]
async fn a_lexicon_kept_in_s3_is_read_at_start_again_when_edited_and_a_bad_one_is_refused_with_its_line() {
    // As a deployment keeps it (the CDK app uploads the file): an object read at start, on moto.
    let moto = earshot_e2e::moto::Moto::start().await;
    moto.boto3(
        "s3 = client('s3')\n\
         s3.create_bucket(Bucket='earshot-config')\n\
         s3.put_object(Bucket='earshot-config', Key='lexicons/products.lex', Body=b'# ours\\nkubectl = cube control, cube control, cube control\\n')\n\
         s3.put_object(Bucket='earshot-config', Key='lexicons/bad.lex', Body=b'kubectl = cube control\\nthis line has no equals sign\\n')\n",
    );
    let env =
        [("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_REGION", "us-east-1"), ("EARSHOT_AWS_ENDPOINT", moto.url.as_str())];
    let said = "Run kubectl today.";
    let plain = EarshotProcess::start(&["--backends", "synthetic", "--cache", "off"]).await;
    plain.healthy().await;
    let lexicon_args =
        ["--backends", "synthetic", "--cache", "off", "--lexicon", "s3://earshot-config/lexicons/products.lex", "--lexicon-refresh-seconds", "1"];
    let with = EarshotProcess::start_with_env(&lexicon_args, &env).await;
    with.healthy().await;
    let (written, aliased) = (audio_of(&plain.url, said).await, audio_of(&with.url, said).await);
    // 18 characters against 51 at the synthetic voice's 15 a second.
    assert!(aliased > 2.0 * written, "the voice was sent the alias: {aliased:.0} ms against {written:.0} ms as written");
    let log = std::fs::read_to_string(with.log_path()).unwrap();
    assert!(log.contains("the lexicon: 1 entries"), "{log}");
    // Edited in place, it is read again once its second has passed: a conversation after that says the new alias.
    moto.boto3("client('s3').put_object(Bucket='earshot-config', Key='lexicons/products.lex', Body=b'kubectl = cube control\\n')");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let mut again = aliased;
    for _ in 0..20 {
        again = audio_of(&with.url, said).await;
        if again < aliased {
            break;
        }
    }
    assert!(
        again < 0.7 * aliased && again > written,
        "the shorter alias is said once read again: {again:.0} ms (before {aliased:.0}, as written {written:.0})"
    );
    // A bad edit keeps what was read before.
    moto.boto3("client('s3').put_object(Bucket='earshot-config', Key='lexicons/products.lex', Body=b'no equals sign\\n')");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    for _ in 0..3 {
        assert_eq!(audio_of(&with.url, said).await, again, "a lexicon with a bad line is not taken");
    }
    let log = std::fs::read_to_string(with.log_path()).unwrap();
    assert!(log.contains("the lexicon read again from s3://earshot-config/lexicons/products.lex"), "{log}");
    assert!(log.contains("cannot read the lexicon again") && log.contains("line 1"), "{log}");
    // At start, a bad line or no such object stops the start, named.
    for (object, says) in [("lexicons/bad.lex", "s3://earshot-config/lexicons/bad.lex, line 2"), ("lexicons/none.lex", "no such object")] {
        let out = std::process::Command::new(earshot_e2e::earshot_bin())
            .args(["serve", "--port", "0", "--backends", "synthetic", "--lexicon", &format!("s3://earshot-config/{object}")])
            .envs(env.iter().copied())
            .output()
            .expect("earshot serve runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("lexicon") && stderr.contains(says), "{object}: {stderr}");
    }
}

#[tokio::test]
async fn an_owners_lexicon_named_by_its_token_is_laid_on_the_deployments_for_its_conversations_alone() {
    const KEYS: &str = "k2026=0123456789abcdef0123456789abcdef";
    let dir = std::env::temp_dir().join(format!("earshot-owner-lexicons-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (deployment, acme) = (dir.join("deployment.lex"), dir.join("acme.lex"));
    std::fs::write(&deployment, "kubectl = cube control\n").unwrap();
    std::fs::write(&acme, "# acme's own names\nAcme = A C M E, the company\nkubectl = cube control, cube control, cube control\n").unwrap();
    let owners = format!("acme={}", acme.display());
    let args = [
        "--backends",
        "synthetic",
        "--cache",
        "off",
        "--auth",
        "token",
        "--token-keys",
        KEYS,
        "--lexicon",
        deployment.to_str().unwrap(),
        "--owner-lexicons",
        &owners,
    ];
    let earshot = EarshotProcess::start(&args).await;
    earshot.healthy().await;
    let token = |args: &[&str]| {
        let out = std::process::Command::new(earshot_e2e::earshot_bin())
            .arg("token")
            .args(args)
            .env("EARSHOT_TOKEN_KEYS", KEYS)
            .output()
            .expect("earshot token runs");
        assert!(out.status.success(), "earshot token: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let (acme_token, other_token, unknown_token) =
        (token(&["--sub", "acme-app", "--lexicon", "acme"]), token(&["--sub", "other-app"]), token(&["--sub", "x", "--lexicon", "globex"]));
    let said = "Acme runs kubectl.";
    let audio = |bearer: String| {
        let url = earshot.url.clone();
        async move {
            let r = speak(&url, &text(said), &CallOptions { bearer: Some(bearer), ..Default::default() }).await.expect("spoken");
            assert_eq!(check_conversation(&r), [said], "the client is told the sentence as written");
            let words: Vec<String> = r.words(0).1.iter().map(|w| w.text.clone()).collect();
            assert_eq!(words, ["Acme", "runs", "kubectl"]);
            r.timeline.as_ref().expect("a timeline").sentences.iter().map(|s| s.audio_ms).sum::<f64>()
        }
    };
    // The synthetic voice's audio lasts as long as the text it is sent: "Acme runs cube control." (23
    // characters) for another owner; "A C M E, the company runs cube control, cube control, cube control." (67)
    // for acme's, whose entries come first and whose other words are still the deployment's.
    let (theirs, acmes) = (audio(other_token.clone()).await, audio(acme_token).await);
    assert!(acmes > 2.5 * theirs, "acme's lexicon said: {acmes:.0} ms against {theirs:.0} ms");
    assert_eq!(audio(other_token).await, theirs, "another owner is still said by the deployment's lexicon alone");
    // A token naming a lexicon the gateway does not have is refused before anything is said, naming those it has.
    let response = reqwest::Client::new()
        .post(format!("{}/v1/speak", earshot.url))
        .bearer_auth(unknown_token)
        .json(&serde_json::json!({"text": said}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "token_out_of_scope", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("`globex`") && body["error"]["message"].as_str().unwrap().contains("acme"), "{body}");
    let log = std::fs::read_to_string(earshot.log_path()).unwrap();
    assert!(log.contains("the owner lexicon `acme`: 2 entries"), "{log}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `text` read as SSML.
fn ssml(document: &str) -> SpeakBody {
    SpeakBody { markup: Some("ssml".into()), ..text(document) }
}

#[tokio::test]
async fn ssml_breaks_are_silence_of_their_length_and_aliases_phonemes_and_characters_keep_the_written_words() {
    let url = kokoro_gateway(None).await;
    let said = |body: SpeakBody| {
        let url = url.clone();
        async move {
            let r = speak(&url, &body, &CallOptions::default()).await.expect("spoken");
            let sentences = check_conversation(&r);
            (r, sentences)
        }
    };
    let (plain, _) = said(ssml("<speak>Call <sub alias=\"Doctor Smith\">Dr. Smith</sub>.</speak>")).await;
    let document = "<speak>Call <sub alias=\"Doctor Smith\">Dr. Smith</sub>.<break time=\"800ms\"/>\
        She is <say-as interpret-as=\"characters\">EKS</say-as> certified, and so is <phoneme alphabet=\"ipa\" ph=\"wˈɪn\">Nguyen</phoneme>.</speak>";
    let (r, sentences) = said(ssml(document)).await;
    assert_eq!(sentences, ["Call Dr. Smith.", "She is EKS certified, and so is Nguyen."], "the client is told the sentences as written");
    let timeline = r.timeline.as_ref().unwrap();
    // The break is 800 ms of silence after the first sentence's audio, whichever voice: the audio grows by it.
    let grown = timeline.sentences[0].audio_ms - plain.timeline.as_ref().unwrap().sentences[0].audio_ms;
    assert!((grown - 800.0).abs() <= 30.0, "the break added {grown:.0} ms");
    let (timing, words) = r.words(0);
    assert_eq!(timing, Some(TimingSource::Model));
    assert_eq!(words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["Call", "Dr", "Smith"]);
    assert!(words.last().unwrap().end_ms < timeline.sentences[0].audio_ms - 750.0, "the silence comes after the last word: {words:?}");
    let (_, words) = r.words(1);
    assert_eq!(words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["She", "is", "EKS", "certified", "and", "so", "is", "Nguyen"]);
    // "E K S" spelled takes longer than a word of three letters read as one.
    let span = |text: &str| words.iter().find(|w| w.text == text).map(|w| w.end_ms - w.start_ms).unwrap();
    assert!(span("EKS") > 1.5 * span("She"), "{words:?}");
    // Outside the subset: refused before any speech, naming the tag.
    let response = reqwest::Client::new()
        .post(format!("{url}/v1/speak"))
        .json(&serde_json::json!({"text": "<speak>Hi <emphasis>there</emphasis>.</speak>", "markup": "ssml"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_ssml", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("<emphasis>"), "{body}");
}

#[tokio::test]
async fn an_ssml_prosody_rate_speaks_its_sentences_faster_on_kokoro_and_goes_to_polly_as_a_prosody() {
    let url = kokoro_gateway(None).await;
    let audio = |r: &Received, i: usize| r.timeline.as_ref().unwrap().sentences[i].audio_ms;
    let body = ssml("<speak><prosody rate=\"150%\">Your order shipped this morning.</prosody> Your order shipped this morning.</speak>");
    let r = speak(&url, &body, &CallOptions::default()).await.expect("spoken");
    check_conversation(&r);
    let (fast, normal) = (audio(&r, 0), audio(&r, 1));
    assert!((fast - normal / 1.5).abs() <= 0.12 * normal / 1.5, "at 150 %: {fast:.0} ms against {normal:.0} ms at the voice's own rate");
    // Polly is sent the rate of each sentence as its own prosody, the rest as plain text.
    let s = standins().await;
    let config = earshot_e2e::run_aws::sdk_for(&s).await;
    let mut settings = settings(None);
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    let polly_url = serve(Gateway::new(vec![polly(&config).await], Arc::new(agent(200.0)), settings)).await.url;
    let body = ssml("<speak><prosody rate=\"x-slow\">Slow &amp; steady.</prosody> Then <say-as interpret-as=\"digits\">42</say-as> quick ones.</speak>");
    let r = speak(&polly_url, &body, &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&r), ["Slow & steady.", "Then 42 quick ones."]);
    assert_eq!(s.stats.polly_ssml.lock().unwrap().clone(), [r#"<speak><prosody rate="50%">Slow &amp; steady.</prosody></speak>"#]);
    assert!(s.stats.polly_spoken.lock().unwrap().iter().any(|u| u.text == "Then 4 2 quick ones."), "digits said one by one");
}

#[tokio::test]
async fn say_as_numbers_durations_and_dates_in_any_format_reach_every_arm_in_words() {
    // The rendering layer says them before any arm gets the sentence: Polly's stand-in records what it is sent,
    // and the Kokoro arm is sent the same text (then its spoken forms, which leave words as words).
    let s = standins().await;
    let config = earshot_e2e::run_aws::sdk_for(&s).await;
    let mut settings = settings(None);
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    let url = serve(Gateway::new(vec![polly(&config).await], Arc::new(agent(200.0)), settings)).await.url;
    let body = ssml(
        "<speak>She came <say-as interpret-as=\"ordinal\">3</say-as> of <say-as interpret-as=\"cardinal\">1,200</say-as> \
         on <say-as interpret-as=\"date\" format=\"md\">12/01</say-as>, in <say-as interpret-as=\"time\">1'21\"</say-as>.</speak>",
    );
    let r = speak(&url, &body, &CallOptions::default()).await.expect("spoken");
    assert_eq!(check_conversation(&r), ["She came 3 of 1,200 on 12/01, in 1'21\"."], "captions stay as written");
    let sent: Vec<String> = s.stats.polly_spoken.lock().unwrap().iter().map(|u| u.text.clone()).collect();
    assert!(sent.iter().any(|t| t == "She came third of one thousand two hundred on December first, in one minute twenty-one seconds."), "{sent:?}");
    // In French, as a `<lang>` tells it.
    let body = ssml("<speak><lang xml:lang=\"fr\">Il est arrivé <say-as interpret-as=\"ordinal\">3</say-as> le <say-as interpret-as=\"date\" format=\"dm\">1/12</say-as>.</lang></speak>");
    let r = speak(&url, &body, &CallOptions::default()).await.expect("spoken");
    check_conversation(&r);
    let sent: Vec<String> = s.stats.polly_spoken.lock().unwrap().iter().map(|u| u.text.clone()).collect();
    assert!(sent.iter().any(|t| t == "Il est arrivé troisième le premier décembre."), "{sent:?}");
}
