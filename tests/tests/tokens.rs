//! Token mode through the real `earshot serve` process: tokens minted by `earshot token`, and by PyJWT as
//! docs/access.md shows an app's backend minting them, speak; every failure has its status and code and nothing else happens; scopes
//! hold (backends, release modes, size, conversations); one bearer cannot interrupt another's
//! conversation.

use std::process::Command;
use std::time::Duration;

use earshot_client::{interrupt_as, speak, CallOptions, ClientError, SpeakBody};
use earshot_e2e::{earshot_bin, prompt, text, EarshotProcess};
use earshot_gateway::auth::{mint, now, Claims};

const KEYS: &str = "k2026=0123456789abcdef0123456789abcdef,k2025=fedcba9876543210fedcba9876543210";

async fn gateway() -> EarshotProcess {
    // Two backends, so that a scope can allow one and refuse the other; the synthetic voice is the default.
    let earshot =
        EarshotProcess::start(&["--backends", "synthetic,kokoro", "--kokoro-url", "http://127.0.0.1:9", "--auth", "token", "--token-keys", KEYS]).await;
    earshot
}

/// `earshot serve` in token mode with the synthetic voice, and `more` flags.
async fn token_gateway(more: &[&str]) -> EarshotProcess {
    let args: Vec<&str> = ["--backends", "synthetic", "--auth", "token", "--token-keys", KEYS].iter().copied().chain(more.iter().copied()).collect();
    EarshotProcess::start(&args).await
}

/// A token from the `earshot token` command.
fn token(args: &[&str]) -> String {
    let out = Command::new(earshot_bin()).arg("token").args(args).env("EARSHOT_TOKEN_KEYS", KEYS).output().expect("earshot token runs");
    assert!(out.status.success(), "earshot token: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn with(bearer: &str) -> CallOptions {
    CallOptions { bearer: Some(bearer.to_string()), ..Default::default() }
}

fn refused(result: Result<earshot_client::Received, ClientError>) -> (u16, String) {
    match result {
        Err(ClientError::Refused { status, code, .. }) => (status, code),
        Ok(r) => panic!("not refused: status {}, error {:?}", r.status, r.error),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn a_valid_token_speaks_and_every_failure_has_its_code() {
    let earshot = gateway().await;
    let short = text("Hello there.");
    let r = speak(&earshot.url, &short, &with(&token(&["--sub", "user-1"]))).await.unwrap();
    assert!(r.error.is_none() && r.status == 200, "{:?}", r.error);
    // The previous key still verifies (rotation), by its kid.
    let r = speak(&earshot.url, &short, &with(&token(&["--kid", "k2025"]))).await.unwrap();
    assert_eq!(r.status, 200);

    assert_eq!(refused(speak(&earshot.url, &short, &CallOptions::default()).await), (401, "token_missing".into()));
    assert_eq!(refused(speak(&earshot.url, &short, &with("not.a.token")).await), (401, "token_malformed".into()));
    let claims = Claims { aud: "earshot".into(), exp: now() + 60, ..Default::default() };
    let forged = mint("k2026", b"an-attacker-key-that-is-32-bytes!", &claims).unwrap();
    assert_eq!(refused(speak(&earshot.url, &short, &with(&forged)).await), (401, "token_bad_signature".into()));
    let expired = mint("k2026", b"0123456789abcdef0123456789abcdef", &Claims { exp: now() - 30, ..claims.clone() }).unwrap();
    assert_eq!(refused(speak(&earshot.url, &short, &with(&expired)).await), (401, "token_expired".into()));
    assert_eq!(refused(speak(&earshot.url, &short, &with(&token(&["--audience", "another-gateway"]))).await), (401, "token_wrong_audience".into()));

    // A client that cannot set headers puts the token in the query.
    let url = format!("{}/v1/speak?access_token={}", earshot.url, token(&[]));
    let response = reqwest::Client::new().post(&url).json(&serde_json::json!({"text": "Hi there."})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // Health stays open for monitors.
    assert_ne!(reqwest::get(format!("{}/healthz", earshot.url)).await.unwrap().status(), 401);
}

/// A token minted as the Python snippet of docs/access.md mints one, with PyJWT (a JWT library this project did not write).
fn pyjwt_token(kid: &str, key: &str, audience: &str) -> String {
    let script = "import sys, time, jwt\n\
        kid, key, aud = sys.argv[1:4]\n\
        print(jwt.encode({'aud': aud, 'sub': 'user-42', 'exp': int(time.time()) + 300, 'backends': ['synthetic'], 'max_chars': 2000, 'conversations': ['user-42:*']}, key, algorithm='HS256', headers={'kid': kid}))\n";
    let out = Command::new(earshot_e2e::moto::judges_python()).args(["-c", script, kid, key, audience]).output().expect("python with PyJWT");
    assert!(out.status.success(), "PyJWT: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn a_token_minted_with_pyjwt_as_the_readme_shows_is_accepted_and_its_scopes_hold() {
    let earshot = gateway().await;
    let token = pyjwt_token("k2026", "0123456789abcdef0123456789abcdef", "earshot");
    let mine = SpeakBody { conversation_id: Some("user-42:1".into()), ..text("Hello there.") };
    let r = speak(&earshot.url, &mine, &with(&token)).await.unwrap();
    assert_eq!((r.status, r.header("x-earshot-backend")), (200, Some("synthetic")));
    let kokoro = SpeakBody { backend: Some("kokoro".into()), ..mine.clone() };
    assert_eq!(refused(speak(&earshot.url, &kokoro, &with(&token)).await), (403, "token_out_of_scope".into()));
    let wrong_key = pyjwt_token("k2026", "not-the-gateway-key-but-32-bytes-long", "earshot");
    assert_eq!(refused(speak(&earshot.url, &mine, &with(&wrong_key)).await), (401, "token_bad_signature".into()));
    let other_gateway = pyjwt_token("k2026", "0123456789abcdef0123456789abcdef", "elsewhere");
    assert_eq!(refused(speak(&earshot.url, &mine, &with(&other_gateway)).await), (401, "token_wrong_audience".into()));
}

#[tokio::test]
async fn scopes_hold_a_token_to_its_backends_release_modes_and_size() {
    let earshot = gateway().await;
    let only_kokoro = token(&["--backend", "kokoro"]);
    let synthetic = SpeakBody { backend: Some("synthetic".into()), ..text("Hello there.") };
    assert_eq!(refused(speak(&earshot.url, &synthetic, &with(&only_kokoro)).await), (403, "token_out_of_scope".into()));
    // Without a backend named, the gateway chooses among those the token allows.
    let only_synthetic = token(&["--backend", "synthetic"]);
    let r = speak(&earshot.url, &text("Hello there."), &with(&only_synthetic)).await.unwrap();
    assert_eq!(r.header("x-earshot-backend"), Some("synthetic"));
    let incremental_only = token(&["--release", "incremental"]);
    let buffered = SpeakBody { release: Some("buffered".into()), ..text("Hello there.") };
    assert_eq!(refused(speak(&earshot.url, &buffered, &with(&incremental_only)).await), (403, "token_out_of_scope".into()));
    let small = token(&["--max-chars", "20"]);
    assert_eq!(refused(speak(&earshot.url, &text("This sentence is longer than twenty characters."), &with(&small)).await), (403, "token_out_of_scope".into()));
    assert_eq!(speak(&earshot.url, &text("Short one."), &with(&small)).await.unwrap().status, 200);
    // A token bound to conversations speaks only under them.
    let bound = token(&["--conversation", "user-7:*"]);
    assert_eq!(refused(speak(&earshot.url, &text("Hello there."), &with(&bound)).await), (403, "token_out_of_scope".into()));
    let mine = SpeakBody { conversation_id: Some("user-7:1".into()), ..text("Hello there.") };
    assert_eq!(speak(&earshot.url, &mine, &with(&bound)).await.unwrap().status, 200);
    // A pattern covers whole segments: a longer name that merely starts alike is not the bearer's.
    for trick in ["user-7", "user-7-smith:1", "user-77:1"] {
        let theirs = SpeakBody { conversation_id: Some(trick.into()), ..text("Hello there.") };
        assert_eq!(refused(speak(&earshot.url, &theirs, &with(&bound)).await), (403, "token_out_of_scope".into()), "{trick}");
    }
    // A pattern that is not whole segments is neither minted nor accepted.
    let out = Command::new(earshot_bin()).args(["token", "--conversation", "user-7-*"]).env("EARSHOT_TOKEN_KEYS", KEYS).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("user-42:*"), "{}", String::from_utf8_lossy(&out.stderr));
    let key = b"0123456789abcdef0123456789abcdef";
    let prefix = Claims { aud: "earshot".into(), exp: now() + 60, conversations: Some(vec!["user-7-*".into()]), ..Default::default() };
    let minted_elsewhere = mint("k2026", key, &prefix).unwrap();
    assert_eq!(refused(speak(&earshot.url, &mine, &with(&minted_elsewhere)).await), (401, "token_malformed".into()));
}

/// A long answer under `conversation_id`, spoken by `bearer` in the background; returns once it speaks.
async fn speaking_long(url: &str, conversation_id: &str, bearer: &str) -> tokio::task::JoinHandle<Result<earshot_client::Received, ClientError>> {
    let body = SpeakBody { conversation_id: Some(conversation_id.into()), ..prompt("long") };
    let (url, options) = (url.to_string(), with(bearer));
    let speaking = tokio::spawn(async move { speak(&url, &body, &options).await });
    tokio::time::sleep(Duration::from_millis(800)).await;
    speaking
}

#[tokio::test]
async fn a_token_cannot_interrupt_another_bearers_conversation() {
    let earshot = gateway().await;
    let alice = token(&["--sub", "alice", "--conversation", "alice:*"]);
    let bob = token(&["--sub", "bob", "--conversation", "bob:*"]);
    let speaking = speaking_long(&earshot.url, "alice:1", &alice).await;
    let bob_tries = interrupt_as(&earshot.url, "alice:1", Some(&bob)).await.unwrap_err();
    assert!(matches!(&bob_tries, ClientError::Refused { status: 403, code, .. } if code == "token_out_of_scope"), "{bob_tries}");
    let anonymous = interrupt_as(&earshot.url, "alice:1", None).await.unwrap_err();
    assert!(matches!(&anonymous, ClientError::Refused { status: 401, .. }), "{anonymous}");
    interrupt_as(&earshot.url, "alice:1", Some(&alice)).await.expect("the bearer interrupts its own conversation");
    let r = speaking.await.unwrap().unwrap();
    assert_eq!(r.error.map(|e| e.code).as_deref(), Some("interrupted"));
}

#[tokio::test]
async fn a_conversation_id_belongs_to_its_owner_not_to_whoever_names_it() {
    // Both tokens may use the same ids: the id is a name, the conversation is the owner's.
    let earshot = gateway().await;
    let alice = token(&["--sub", "alice", "--conversation", "call:*"]);
    let bob = token(&["--sub", "bob", "--conversation", "call:*"]);
    let speaking = speaking_long(&earshot.url, "call:1", &alice).await;
    // Another owner's live conversation is as unknown as one never started.
    let bob_tries = interrupt_as(&earshot.url, "call:1", Some(&bob)).await.unwrap_err();
    assert!(matches!(&bob_tries, ClientError::Refused { status: 404, code, .. } if code == "unknown_conversation"), "{bob_tries}");
    // Speaking under the same id is a conversation of bob's own, which begins and ends without touching alice's.
    let r = speak(&earshot.url, &SpeakBody { conversation_id: Some("call:1".into()), ..text("Hello there.") }, &with(&bob)).await.unwrap();
    assert!(r.error.is_none() && r.status == 200, "{:?}", r.error);
    // Tokens without `sub` are owners of their own, and never meet either.
    let anonymous = token(&["--conversation", "call:*"]);
    let also_anonymous = token(&["--conversation", "call:*", "--ttl", "200"]);
    assert_ne!(anonymous, also_anonymous);
    let tries = interrupt_as(&earshot.url, "call:1", Some(&anonymous)).await.unwrap_err();
    assert!(matches!(&tries, ClientError::Refused { status: 404, .. }), "{tries}");
    // Alice's conversation is still hers to stop, and bob's end did not forget it.
    interrupt_as(&earshot.url, "call:1", Some(&alice)).await.expect("the owner interrupts its own conversation");
    let r = speaking.await.unwrap().unwrap();
    assert_eq!(r.error.map(|e| e.code).as_deref(), Some("interrupted"));
}

#[tokio::test]
async fn token_edge_cases_each_have_their_code_and_a_challenge() {
    let earshot = gateway().await;
    let short = text("Hello there.");
    let key = b"0123456789abcdef0123456789abcdef";
    let base = Claims { aud: "earshot".into(), exp: now() + 60, sub: Some("u".into()), ..Default::default() };
    let ten_years = mint("k2026", key, &Claims { exp: now() + 10 * 365 * 86_400, ..base.clone() }).unwrap();
    assert_eq!(refused(speak(&earshot.url, &short, &with(&ten_years)).await), (401, "token_lifetime_too_long".into()));
    let later = mint("k2026", key, &Claims { nbf: Some(now() + 600), ..base.clone() }).unwrap();
    assert_eq!(refused(speak(&earshot.url, &short, &with(&later)).await), (401, "token_not_yet_valid".into()));
    let many = mint("k2026", key, &Claims { aud: earshot_gateway::auth::Audience::Many(vec!["web".into(), "earshot".into()]), ..base.clone() }).unwrap();
    assert_eq!(speak(&earshot.url, &short, &with(&many)).await.unwrap().status, 200, "an audience array that holds ours");
    let unknown_kid = mint("k1999", key, &base).unwrap();
    assert_eq!(refused(speak(&earshot.url, &short, &with(&unknown_kid)).await), (401, "token_bad_signature".into()));
    // Every 401 says how to authenticate (RFC 6750).
    let response = reqwest::Client::new().post(format!("{}/v1/speak", earshot.url)).json(&serde_json::json!({"text": "Hi."})).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], r#"Bearer realm="earshot""#);
    // Open endpoints say healthy or not, and nothing of what the gateway talks to.
    let health: serde_json::Value = reqwest::get(format!("{}/healthz", earshot.url)).await.unwrap().json().await.unwrap();
    assert_eq!(health["backends"]["kokoro"], serde_json::json!({"ok": false}), "{health}");
    assert!(!health.to_string().contains("127.0.0.1"), "{health}");
    let voices: serde_json::Value = reqwest::get(format!("{}/v1/voices", earshot.url)).await.unwrap().json().await.unwrap();
    assert!(voices.get("agent").is_none(), "{voices}");
}

#[tokio::test]
async fn one_caller_holds_at_most_its_share_of_live_conversations() {
    let earshot = token_gateway(&["--max-conversations-per-owner", "2"]).await;
    let alice = token(&["--sub", "alice", "--conversation", "a:*"]);
    let bob = token(&["--sub", "bob", "--conversation", "b:*"]);
    let first = speaking_long(&earshot.url, "a:1", &alice).await;
    let second = speaking_long(&earshot.url, "a:2", &alice).await;
    // A third of alice's, while two speak: refused before anything upstream, with when to retry.
    let third = SpeakBody { conversation_id: Some("a:3".into()), ..text("Hello there.") };
    match speak(&earshot.url, &third, &with(&alice)).await {
        Err(ClientError::Refused { status, code, message, .. }) => {
            assert_eq!((status, code.as_str()), (429, "too_many_conversations"));
            assert!(message.contains("2 conversations live"), "{message}");
        }
        other => panic!("a third live conversation of one caller was not refused: {:?}", other.map(|r| r.status)),
    }
    // Another caller is served meanwhile.
    let bobs = speak(&earshot.url, &SpeakBody { conversation_id: Some("b:1".into()), ..text("Hello there.") }, &with(&bob)).await.unwrap();
    assert!(bobs.error.is_none(), "{:?}", bobs.error);
    // One of alice's ends: its place is hers again.
    interrupt_as(&earshot.url, "a:1", Some(&alice)).await.unwrap();
    assert_eq!(first.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));
    let again = speak(&earshot.url, &third, &with(&alice)).await.expect("served once a place was given back");
    assert!(again.error.is_none(), "{:?}", again.error);
    interrupt_as(&earshot.url, "a:2", Some(&alice)).await.unwrap();
    assert_eq!(second.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));
}

#[tokio::test]
async fn a_token_narrows_its_owners_limits_and_never_widens_them() {
    let earshot = token_gateway(&["--max-conversations-per-owner", "2", "--max-chars-per-owner-hour", "4000"]).await;
    let url = earshot.url.as_str();
    let too_many = |r: Result<earshot_client::Received, ClientError>| refused(r) == (429, "too_many_conversations".to_string());
    let hello = |id: &str| SpeakBody { conversation_id: Some(id.into()), ..text("Hello there.") };

    // One live conversation under a token that allows one: a second is refused though the gateway allows two.
    let carol = token(&["--sub", "carol", "--conversation", "c:*", "--max-conversations", "1"]);
    let first = speaking_long(url, "c:1", &carol).await;
    assert!(too_many(speak(url, &hello("c:2"), &with(&carol)).await), "the token's one place is taken");
    interrupt_as(url, "c:1", Some(&carol)).await.unwrap();
    assert_eq!(first.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));

    // A token that claims ten cannot widen the gateway's two.
    let dave = token(&["--sub", "dave", "--conversation", "d:*", "--max-conversations", "10"]);
    let (one, two) = (speaking_long(url, "d:1", &dave).await, speaking_long(url, "d:2", &dave).await);
    assert!(too_many(speak(url, &hello("d:3"), &with(&dave)).await), "the gateway's limit holds over the token's claim");
    for (id, speaking) in [("d:1", one), ("d:2", two)] {
        interrupt_as(url, id, Some(&dave)).await.unwrap();
        assert_eq!(speaking.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));
    }

    // Characters: a token allowing 400 an hour is cut within its answer of 600 and then refused; the same
    // owner under a token without the claim still has the gateway's budget, less what was spoken.
    let erin = token(&["--sub", "erin", "--max-chars-per-hour", "400"]);
    let long = "This sentence is here to use the budget of one caller up. ".repeat(10);
    let cut = speak(url, &text(long.trim()), &with(&erin)).await.unwrap();
    assert_eq!(cut.error.as_ref().map(|e| e.code.as_str()), Some("character_budget_spent"), "{:?}", cut.error);
    assert_eq!(refused(speak(url, &text("Hello there."), &with(&erin)).await), (429, "character_budget_spent".into()));
    let erin_wide = token(&["--sub", "erin"]);
    let served = speak(url, &text("Hello there."), &with(&erin_wide)).await.unwrap();
    assert!(served.error.is_none(), "the gateway's own budget is not spent: {:?}", served.error);
}

#[tokio::test]
async fn where_requests_may_not_name_a_backend_a_token_listing_backends_still_may() {
    let earshot = EarshotProcess::start(&[
        "--backends",
        "synthetic,kokoro",
        "--kokoro-url",
        "http://127.0.0.1:9",
        "--auth",
        "token",
        "--token-keys",
        KEYS,
        "--ab-allow-override",
        "false",
    ])
    .await;
    let named = SpeakBody { backend: Some("synthetic".into()), ..text("Hello there.") };
    let plain = token(&["--sub", "frank"]);
    match speak(&earshot.url, &named, &with(&plain)).await {
        Err(ClientError::Refused { status, code, message, .. }) => {
            assert_eq!((status, code.as_str()), (400, "backend_choice_forbidden"));
            assert!(message.contains("`backends` claim"), "the refusal names the way: {message}");
        }
        other => panic!("a plain token named the backend: {:?}", other.map(|r| r.status)),
    }
    let listing = token(&["--sub", "frank", "--backend", "synthetic", "--backend", "kokoro"]);
    let spoken = speak(&earshot.url, &named, &with(&listing)).await.unwrap();
    assert!(spoken.error.is_none(), "{:?}", spoken.error);
    assert_eq!(spoken.session.as_ref().map(|s| s.backend.as_str()), Some("synthetic"));
}

#[tokio::test]
async fn a_key_removed_from_secrets_manager_stops_verifying_without_a_restart() {
    // The keys in Secrets Manager (moto), read at start and again on a request a second after the last
    // reading: rotation as docs/access.md says (add k2, then remove k1), on a server that keeps running.
    let moto = earshot_e2e::moto::Moto::start().await;
    let (k1, k2) = ("0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210");
    moto.boto3(&format!("client('secretsmanager').create_secret(Name='earshot/token-keys', SecretString='{{\"k1\": \"{k1}\"}}')\n"));
    let env =
        [("EARSHOT_AWS_ENDPOINT", moto.url.as_str()), ("AWS_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "secret")];
    let args = ["--backends", "synthetic", "--auth", "token", "--token-keys-secret", "earshot/token-keys", "--token-keys-refresh-seconds", "1"];
    let earshot = EarshotProcess::start_with_env(&args, &env).await;
    earshot.healthy().await;
    let bearer = |kid: &str, key: &str| {
        let claims = Claims { aud: "earshot".into(), exp: now() + 300, sub: Some("alice".into()), ..Default::default() };
        with(&mint(kid, key.as_bytes(), &claims).unwrap())
    };
    let hello = text("Hello there.");
    assert_eq!(speak(&earshot.url, &hello, &bearer("k1", k1)).await.unwrap().status, 200);
    assert_eq!(refused(speak(&earshot.url, &hello, &bearer("k2", k2)).await), (401, "token_bad_signature".into()), "k2 is not in the secret yet");

    moto.boto3(&format!("client('secretsmanager').put_secret_value(SecretId='earshot/token-keys', SecretString='{{\"k2\": \"{k2}\"}}')\n"));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // The first request after the interval is verified with the keys as they were, and starts the reading.
    let _ = speak(&earshot.url, &hello, &bearer("k1", k1)).await;
    let mut k1_refused = false;
    for _ in 0..50 {
        if let Err(ClientError::Refused { status: 401, code, .. }) = speak(&earshot.url, &hello, &bearer("k1", k1)).await {
            assert_eq!(code, "token_bad_signature");
            k1_refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(k1_refused, "k1, removed from the secret, still verifies");
    assert_eq!(speak(&earshot.url, &hello, &bearer("k2", k2)).await.unwrap().status, 200, "k2, added, verifies");
    let log = std::fs::read_to_string(earshot.log_path()).unwrap();
    assert!(log.contains("token keys read again: `k2`"), "{log}");
}

/// A request that sends 900 characters of earlier turns for a two-letter prompt answered "Ok.": what the
/// agent bills as input, whatever the answer's length.
fn heavy(id: &str) -> SpeakBody {
    let turn = |role: &str, content: String| earshot_client::Turn { role: role.into(), content };
    SpeakBody {
        prompt: Some("ok".into()),
        messages: Some(vec![turn("user", "x".repeat(900)), turn("assistant", "Ok.".into())]),
        conversation_id: Some(id.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn what_a_caller_sends_is_budgeted_even_when_it_leaves_after_the_headers() {
    let earshot = token_gateway(&["--script", "ok=Ok.", "--max-input-chars-per-owner-hour", "2000"]).await;
    let (frank, grace) = (token(&["--sub", "frank"]), token(&["--sub", "grace"]));
    for id in ["f:1", "f:2"] {
        let answered = speak(&earshot.url, &heavy(id), &with(&frank)).await.expect("within the budget");
        assert!(answered.error.is_none(), "{:?}", answered.error);
    }
    // 1,810 sent: a third would pass 2,000, however short its answer.
    match speak(&earshot.url, &heavy("f:3"), &with(&frank)).await {
        Err(ClientError::Refused { status, code, message }) => {
            assert_eq!((status, code.as_str()), (429, "input_budget_spent"), "{message}");
            assert!(message.contains("2000 characters"), "{message}");
        }
        other => panic!("a caller past its input budget was not refused: {:?}", other.map(|r| r.status)),
    }
    // Another caller's budget is its own.
    assert!(speak(&earshot.url, &heavy("g:1"), &with(&grace)).await.unwrap().error.is_none());
    // A caller that leaves once the headers come has still sent its input to the agent: charged.
    let client = reqwest::Client::new();
    let mut body = serde_json::to_value(heavy("g:2")).unwrap();
    body["format"] = "sse".into();
    let left = client.post(format!("{}/v1/speak", earshot.url)).bearer_auth(&grace).json(&body).send().await.expect("headers");
    assert_eq!(left.status(), 200);
    drop(left);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        refused(speak(&earshot.url, &heavy("g:3"), &with(&grace)).await),
        (429, "input_budget_spent".into()),
        "the request left after its headers stayed charged"
    );
}

#[tokio::test]
async fn a_caller_past_its_requests_a_minute_waits_for_the_minute_to_end() {
    let earshot = token_gateway(&["--max-requests-per-owner-minute", "2"]).await;
    let (heidi, ivan) = (token(&["--sub", "heidi", "--conversation", "h:*"]), token(&["--sub", "ivan"]));
    // Three requests inside one clock minute: start where the minute has time left.
    while std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 60 > 45 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for id in ["h:1", "h:2"] {
        assert!(speak(&earshot.url, &SpeakBody { conversation_id: Some(id.into()), ..text("Hi.") }, &with(&heidi)).await.unwrap().error.is_none());
    }
    match speak(&earshot.url, &SpeakBody { conversation_id: Some("h:3".into()), ..text("Hi.") }, &with(&heidi)).await {
        Err(ClientError::Refused { status, code, .. }) => assert_eq!((status, code.as_str()), (429, "request_rate_exceeded")),
        other => panic!("a third request in a minute was not refused: {:?}", other.map(|r| r.status)),
    }
    // Counted before the body is parsed: a body that would cost its parse (thousands of array elements,
    // and not even valid for the route) is refused for the rate, not read.
    let crafted = format!("{{\"text\": [{}]}}", vec!["1"; 16_000].join(","));
    let r = reqwest::Client::new().post(format!("{}/v1/speak", earshot.url)).bearer_auth(&heidi).body(crafted).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 429, "the rate before the parse: {}", r.text().await.unwrap_or_default());
    // An interrupt is counted too.
    let r = reqwest::Client::new().post(format!("{}/v1/conversations/h:1/interrupt", earshot.url)).bearer_auth(&heidi).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 429, "an interrupt past the rate");
    assert!(speak(&earshot.url, &SpeakBody { conversation_id: Some("i:1".into()), ..text("Hi.") }, &with(&ivan)).await.unwrap().error.is_none());
    // A token narrows the rate for its bearer: one request a minute.
    let judy = token(&["--sub", "judy", "--max-requests-per-minute", "1"]);
    assert!(speak(&earshot.url, &SpeakBody { conversation_id: Some("j:1".into()), ..text("Hi.") }, &with(&judy)).await.unwrap().error.is_none());
    let narrowed = speak(&earshot.url, &SpeakBody { conversation_id: Some("j:2".into()), ..text("Hi.") }, &with(&judy)).await;
    assert_eq!(refused(narrowed), (429, "request_rate_exceeded".into()), "the token's one request a minute holds");
}

#[tokio::test]
async fn a_token_in_the_query_reaches_no_log_at_any_level() {
    let args = ["--backends", "synthetic", "--auth", "token", "--token-keys", KEYS];
    let earshot = EarshotProcess::start_with_env(&args, &[("EARSHOT_LOG", "trace")]).await;
    let bearer = token(&["--sub", "kim"]);
    let url = format!("{}/v1/speak?access_token={bearer}", earshot.url);
    let response = reqwest::Client::new().post(&url).json(&serde_json::json!({"text": "Hi there."})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap();
    let log = std::fs::read_to_string(earshot.log_path()).unwrap();
    assert!(log.contains("token accepted"), "the request was logged at all: {log}");
    // The signature is the secret part: neither it nor the whole token is written.
    let signature = bearer.rsplit('.').next().unwrap();
    assert!(!log.contains(signature), "the token reached the log at trace level");
}
