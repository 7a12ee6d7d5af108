//! `earshot say --show-spoken`, as a new user checks a pronunciation: each sentence of the answer printed
//! with what the Kokoro voice is sent for it, from a running gateway, without reading any code.

use std::process::Command;

use earshot_e2e::{earshot_bin, EarshotProcess};

#[tokio::test]
async fn earshot_say_shows_what_the_voice_is_sent_for_each_sentence() {
    let earshot = EarshotProcess::start(&["--backends", "synthetic"]).await;
    let say = |text: &'static str, language: Option<&'static str>| {
        let url = earshot.url.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec!["say", "--url", &url, "--text", text, "--out", "/dev/null", "--show-spoken"];
            if let Some(language) = language {
                args.extend(["--language", language]);
            }
            let out = Command::new(earshot_bin()).args(&args).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    let english = say("Upgrade to v2.1.3 on localhost:8080. It costs US$1,299.99.", None).await.unwrap();
    assert!(english.contains("[0] Upgrade to v2.1.3 on localhost:8080."), "{english}");
    assert!(english.contains("said: Upgrade to version two point one point three on localhost colon eight zero eight zero."), "{english}");
    assert!(english.contains("said: It costs one thousand two hundred ninety-nine U S dollars and ninety-nine cents."), "{english}");
    let french = say("Louis XIV vivait au XVIIe siècle.", Some("fr")).await.unwrap();
    assert!(french.contains("said: Louis quatorze vivait au dix-septième siècle."), "{french}");
    let mandarin = say("他的月薪是¥1.2万。", None).await.unwrap();
    assert!(mandarin.contains("said: 他的月薪是一点二万元。"), "{mandarin}");
}
