//! A slow or bursty agent as a new user meets one: `earshot serve` with the scripted agent writing at 3, 6
//! and 30 tokens a second (166 ms between tokens at 6: longer than the idle window), and with a 400 ms
//! pause right after each full stop. Decimals, prices, times, abbreviations, initials and version numbers
//! in English, French and Mandarin are each spoken as one sentence; `Sure.` followed by a pause is still
//! released within the idle window. The voice is the synthetic one: what is under test is where the
//! sentences are cut.

use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_e2e::EarshotProcess;

/// Each language's answer and the sentences it must be spoken as.
const ANSWERS: [(&str, &[&str]); 3] = [
    (
        "It costs $3.50 today. The U.S. team won. We meet at 4 p.m. today. Ask J. Smith. Version 2.1.3 is out.",
        &["It costs $3.50 today.", "The U.S. team won.", "We meet at 4 p.m. today.", "Ask J. Smith.", "Version 2.1.3 is out."],
    ),
    ("Il coûte 3.50 euros. M. Dupont arrive. La version 2.1 est sortie.", &["Il coûte 3.50 euros.", "M. Dupont arrive.", "La version 2.1 est sortie."]),
    ("温度是 3.5 度。版本 2.1 发布了。", &["温度是 3.5 度。", "版本 2.1 发布了。"]),
];

fn sentences(events: &[ServerEvent]) -> Vec<String> {
    events.iter().filter_map(|e| if let ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect()
}

async fn gateway(tokens_per_second: &str, scripts: &[String]) -> EarshotProcess {
    let mut args =
        vec!["--backends", "synthetic", "--synthetic-latency-ms", "20", "--cache", "off", "--tokens-per-second", tokens_per_second, "--first-token-ms", "0"];
    for script in scripts {
        args.extend_from_slice(&["--script", script]);
    }
    let earshot = EarshotProcess::start(&args).await;
    earshot.healthy().await;
    earshot
}

#[tokio::test]
async fn a_slow_agent_s_pauses_never_cut_a_decimal_an_abbreviation_or_an_initial() {
    for pace in ["3", "6", "30"] {
        let earshot = gateway(pace, &[]).await;
        // At 3 tokens a second, the English answer's two hardest sentences (a whole answer would take 15 s).
        let answers: Vec<(&str, &[&str])> = match pace {
            "3" => vec![("It costs $3.50 today. The U.S. team won.", &["It costs $3.50 today.", "The U.S. team won."][..])],
            _ => ANSWERS.to_vec(),
        };
        for (text, expected) in answers {
            let r = speak(&earshot.url, &SpeakBody { text: Some(text.into()), ..Default::default() }, &CallOptions::default()).await.expect("spoken");
            assert!(r.error.is_none(), "{:?}", r.error);
            assert_eq!(sentences(&r.events), expected, "at {pace} tokens a second");
        }
    }
}

#[tokio::test]
async fn a_pause_right_after_each_full_stop_never_cuts_and_sure_still_goes_at_once() {
    let scripts = [
        "prices=It costs $3.{wait:400}50 today.{wait:400} The U.S.{wait:400} team won.{wait:400} Ask J.{wait:400} Smith.".to_string(),
        "french=Il coûte 3.{wait:400}50 euros.{wait:400} M.{wait:400} Dupont arrive.".to_string(),
        "mandarin=温度是 3.{wait:400}5 度。{wait:400}版本 2.{wait:400}1 发布了。".to_string(),
        "sure=Sure.{wait:1500} Here it is.".to_string(),
    ];
    let earshot = gateway("30", &scripts).await;
    for (prompt, expected) in [
        ("prices", &["It costs $3.50 today.", "The U.S. team won.", "Ask J. Smith."][..]),
        ("french", &["Il coûte 3.50 euros.", "M. Dupont arrive."][..]),
        ("mandarin", &["温度是 3.5 度。", "版本 2.1 发布了。"][..]),
    ] {
        let r = speak(&earshot.url, &SpeakBody { prompt: Some(prompt.into()), ..Default::default() }, &CallOptions::default()).await.expect("spoken");
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(sentences(&r.events), expected, "{prompt}");
    }
    // "Sure." then a pause: released within the idle window, long before the agent goes on.
    let r = speak(&earshot.url, &SpeakBody { prompt: Some("sure".into()), ..Default::default() }, &CallOptions::default()).await.expect("spoken");
    let sentence_at = r.events.iter().position(|e| matches!(e, ServerEvent::Sentence(s) if s.text == "Sure.")).expect("Sure. is a sentence");
    let more_at = r.events.iter().position(|e| matches!(e, ServerEvent::Text(t) if t.text.contains("Here"))).expect("the rest came");
    assert!(sentence_at < more_at, "Sure. was released before the agent went on: {:?}", r.events.iter().map(ServerEvent::kind).collect::<Vec<_>>());
    let timeline = r.timeline.expect("a timeline");
    let first = &timeline.sentences[0];
    let waited = first.released_ms.unwrap() - first.complete_ms;
    assert!(first.complete_ms < 1_000.0 && waited < 100.0, "released within the idle window: complete at {} ms, released {waited} ms later", first.complete_ms);
}
