//! A setting of an AWS part refused at start reads like every other refusal, `SETTING: why`, naming the
//! setting once: the Polly voice checked before Polly is asked anything, through `build` as both
//! binaries call it. No network: the voice is refused before any call.
#![cfg(feature = "aws")]

use earshot_wiring::{build, Place, Settings};

#[tokio::test]
async fn a_polly_voice_earshot_does_not_know_is_refused_naming_its_setting_once() {
    // The SDK's configuration is loaded offline: a Region and credentials given, an endpoint nobody
    // answers on (nothing is called).
    let vars = [
        ("EARSHOT_BACKENDS", "polly"),
        ("EARSHOT_POLLY_VOICE", "nosuchvoice"),
        ("EARSHOT_AWS_ENDPOINT", "https://127.0.0.1:9"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ];
    for (name, value) in vars.iter().filter(|(name, _)| name.starts_with("AWS_")) {
        // SAFETY: this test binary holds this one test, so no other thread reads the environment.
        unsafe { std::env::set_var(name, value) };
    }
    let get = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    let settings = Settings::from_vars(get, Place::Serve).expect("the settings themselves are valid");
    let refused = build(&settings, Place::Serve).await.err().expect("the voice is refused").to_string();
    assert!(refused.starts_with("EARSHOT_POLLY_VOICE (--polly-voice): `nosuchvoice` is not a Polly generative voice"), "{refused}");
    assert_eq!(refused.matches("EARSHOT_POLLY_VOICE").count(), 1, "named once: {refused}");
}
