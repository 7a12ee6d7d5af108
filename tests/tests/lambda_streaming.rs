//! The Lambda binary served the way Lambda serves it (`cargo lambda watch`: function-URL semantics
//! with response streaming), against the AWS stand-ins: an answer arrives in pieces as it is
//! produced, not as one buffered body. `make test-lambda` starts the stack and runs this test with
//! `EARSHOT_LAMBDA_URL` set; on its own it is ignored.

use earshot_client::{speak, CallOptions};
use earshot_core::protocol::Delivery;
use earshot_e2e::{check_conversation, text};

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch: make test-lambda"]
async fn the_lambda_streams_its_answer_through_the_function_url() {
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    for delivery in [Delivery::Sse, Delivery::Binary] {
        let body = text("Hello there. How are you today? I hope it is going well.");
        let r = speak(&url, &body, &CallOptions { delivery, ..Default::default() }).await.expect("the Lambda answers");
        check_conversation(&r);
        let timeline = r.timeline.as_ref().unwrap();
        let server_span = timeline.done_ms.unwrap() - timeline.first_audio_sent_ms.unwrap();
        let client_span = r.marks.done_ms.unwrap() - r.marks.first_audio_decoded_ms.unwrap();
        // Buffered, the client would get the first audio and the end together; streamed, it sees most
        // of the time the server spent between them.
        // Three sentences take the voice well over 100 ms: enough for buffering to show.
        assert!(server_span > 100.0, "{delivery:?}: the server spoke for only {server_span:.0} ms, too short to tell streaming from buffering");
        assert!(client_span > server_span * 0.5, "{delivery:?}: client saw {client_span:.0} ms between first audio and end, the server {server_span:.0} ms");
    }
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch: make test-lambda"]
async fn an_interrupt_stops_the_lambda_mid_answer() {
    // A client that disconnects does not stop a streaming Lambda; the interrupt, sent as a second
    // invocation, reaches the speaking one through the DynamoDB table (moto's server here).
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    let kokoro = std::env::var("EARSHOT_KOKORO_URL").expect("EARSHOT_KOKORO_URL: the container behind the SageMaker stand-in");
    let stats = || async { reqwest::get(format!("{kokoro}/stats")).await.expect("stats").json::<serde_json::Value>().await.expect("stats JSON") };
    let body = earshot_client::SpeakBody {
        text: Some("This answer goes on for a long while, sentence after sentence. ".repeat(20)),
        backend: Some("kokoro".into()),
        conversation_id: Some("lambda-interrupt-1".into()),
        ..Default::default()
    };
    let stream = tokio::spawn({
        let url = url.clone();
        async move { speak(&url, &body, &CallOptions::default()).await }
    });
    for _ in 0..1000 {
        if stats().await["active_requests"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let sent = std::time::Instant::now();
    earshot_client::interrupt(&url, "lambda-interrupt-1").await.expect("202 from a second invocation");
    let r = tokio::time::timeout(std::time::Duration::from_secs(10), stream).await.expect("the stream ends").unwrap().expect("the Lambda answered");
    let ended = sent.elapsed();
    let mut idle = None;
    for _ in 0..500 {
        if stats().await["active_requests"] == 0 {
            idle = Some(sent.elapsed());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    eprintln!("interrupt under cargo lambda watch: stream ended after {ended:?}, container idle after {idle:?}");
    assert_eq!(r.error.expect("the stream ends with an error").code, "interrupted");
    // The poll (250 ms), a read, the container's cancel, and a loaded machine.
    assert!(ended < std::time::Duration::from_secs(2), "ended {ended:?} after the interrupt");
    assert!(idle.is_some_and(|t| t < std::time::Duration::from_secs(3)), "the container was still busy");
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch: make test-lambda"]
async fn a_client_that_leaves_stops_the_work_when_the_runtime_fails_the_writes() {
    // Under cargo lambda's emulator a client that leaves fails the function's writes to its response
    // stream, though only the second write after it left (the first still reaches the socket), which
    // drops the body and cancels the conversation (the same path as under earshot serve). Writes come
    // with each piece of audio, seconds apart while four long sentences take turns on one container,
    // and with the keep-alive on a quiet stream: test-lambda.sh sets it to 1 s, so the departure is
    // noticed within about two seconds whatever the voice's pace. AWS documents that a deployed
    // streaming function keeps running instead; there the interrupt or the maximum length stops it
    // (the test above).
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL");
    let kokoro = std::env::var("EARSHOT_KOKORO_URL").expect("EARSHOT_KOKORO_URL");
    // Twenty long sentences: about half a minute of synthesis on this machine if nothing stopped it.
    let body = earshot_client::SpeakBody {
        text: Some("This answer goes on for a long while, sentence after sentence. ".repeat(20)),
        backend: Some("kokoro".into()),
        ..Default::default()
    };
    let _ = speak(&url, &body, &CallOptions { stop_after_audio_chunks: Some(2), ..Default::default() }).await;
    let left = std::time::Instant::now();
    // Two keep-alives and the emulator's close (about 2 s), then the container's cancel, which waits for
    // the piece it is rendering (seconds for a long sentence on 2 cores): 5.5 s seen here.
    let within = earshot_e2e::Speed::measure(&kokoro).await.scaled(std::time::Duration::from_secs(9));
    let mut idle = None;
    while left.elapsed() < within + std::time::Duration::from_secs(10) {
        let stats: serde_json::Value = reqwest::get(format!("{kokoro}/stats")).await.expect("stats").json().await.expect("stats JSON");
        if stats["active_requests"] == 0 {
            idle = Some(left.elapsed());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    eprintln!("client left under cargo lambda watch: container idle after {idle:?}");
    assert!(idle.is_some_and(|t| t < within), "the container was still at work {within:?} after the client left (idle after {idle:?})");
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch with the OpenAI-compatible agent: make test-lambda"]
async fn the_lambda_speaks_for_an_openai_compatible_agent() {
    use earshot_gateway::auth::{mint, now, Claims};
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    // Token mode, its keys read from Secrets Manager at init: the app's backend mints with the same key.
    let key = b"0123456789abcdef0123456789abcdef";
    let claims = Claims { aud: "earshot".into(), exp: now() + 300, sub: Some("lambda-test".into()), ..Default::default() };
    let bearer = |c: &Claims| CallOptions { bearer: Some(mint("lambda-test", key, c).unwrap()), ..Default::default() };
    let refused = |r: Result<earshot_client::Received, earshot_client::ClientError>| match r {
        Err(earshot_client::ClientError::Refused { status, code, .. }) => (status, code),
        other => panic!("not refused: {:?}", other.map(|r| r.status)),
    };
    assert_eq!(refused(speak(&url, &earshot_e2e::prompt("brief"), &CallOptions::default()).await), (401, "token_missing".into()));
    let stale = Claims { exp: now() - 60, ..claims.clone() };
    assert_eq!(refused(speak(&url, &earshot_e2e::prompt("brief"), &bearer(&stale)).await), (401, "token_expired".into()));
    let polly_only = Claims { backends: Some(vec!["polly".into()]), ..claims.clone() };
    let synthetic = earshot_client::SpeakBody { backend: Some("synthetic".into()), ..earshot_e2e::prompt("brief") };
    assert_eq!(refused(speak(&url, &synthetic, &bearer(&polly_only)).await), (403, "token_out_of_scope".into()));
    let others = Claims { conversations: Some(vec!["bob:*".into()]), ..claims.clone() };
    let interrupt = earshot_client::interrupt_as(&url, "alice:1", Some(&mint("lambda-test", key, &others).unwrap())).await.unwrap_err();
    assert!(matches!(interrupt, earshot_client::ClientError::Refused { status: 403, .. }), "{interrupt}");
    // The stand-in answers only the key the function read from Secrets Manager at init.
    let r = speak(&url, &earshot_e2e::prompt("pause"), &bearer(&claims)).await.expect("the Lambda answers");
    let sentences = check_conversation(&r);
    assert_eq!(sentences[0], "Let me check that for you.");
    // The tool call released the first sentence while the model was silent.
    let t = r.timeline.as_ref().unwrap();
    assert!(t.sentences[1].complete_ms - t.sentences[0].released_ms.unwrap() > 1500.0);
    // A conversation reaches the agent through the Lambda too.
    let body = earshot_client::SpeakBody {
        messages: Some(vec![
            earshot_client::Turn::user("pause"),
            earshot_client::Turn::assistant("Let me check that for you."),
            earshot_client::Turn::user("brief"),
        ]),
        ..Default::default()
    };
    check_conversation(&speak(&url, &body, &bearer(&claims)).await.expect("the Lambda answers"));
}

/// `earshot key` against the deployment's table (moto's server here), as an operator runs it with their own
/// credentials: what it printed.
fn earshot_key_in_table(moto: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(earshot_e2e::earshot_bin())
        .arg("key")
        .args(args)
        .args(["--table", "interrupts", "--region", "us-east-1", "--endpoint-url", moto])
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .output()
        .expect("earshot key runs");
    assert!(out.status.success(), "earshot key {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch in token mode with the interrupt table: make test-lambda"]
async fn the_lambda_takes_api_keys_kept_in_its_table() {
    // What a new user does after `make deploy` in token mode: a key made once into the deployment's table, and
    // OpenAI's own SDK configured with only the function URL and that key.
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    let moto = std::env::var("EARSHOT_MOTO_URL").expect("EARSHOT_MOTO_URL: moto's server, which holds the deployment's table");
    let key = earshot_key_in_table(&moto, &["create", "--owner", "reader-app"]).trim().to_string();
    let id = key["sk-earshot-".len().."sk-earshot-".len() + 8].to_string();
    let sdk = |key: &str| {
        let out = std::process::Command::new(earshot_e2e::moto::judges_python())
            .arg(earshot_e2e::package_dir().join("openai/with_a_key.py"))
            .args([&url, key])
            .output()
            .expect("the OpenAI SDK runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let spoken = sdk(&key);
    assert!(spoken["bytes"].as_u64().is_some_and(|b| b > 24_000), "the SDK with only base_url and api_key speaks: {spoken}");
    let forged = format!("{}AAAA", &key[..key.len() - 4]);
    assert_eq!((sdk(&forged)["status"].as_u64(), sdk(&forged)["code"].as_str().map(String::from)), (Some(401), Some("key_unknown".into())));
    // The table holds the key's digest, never the key.
    let item = std::process::Command::new(earshot_e2e::moto::judges_python())
        .args(["-c", "import boto3,json,sys; db=boto3.client('dynamodb',endpoint_url=sys.argv[1],region_name='us-east-1',aws_access_key_id='a',aws_secret_access_key='s'); print(json.dumps(db.get_item(TableName='interrupts',Key={'conversation_id':{'S':'apikey-'+sys.argv[2]}})['Item']))"])
        .args([&moto, &id])
        .output()
        .expect("boto3 reads the item");
    let item = String::from_utf8_lossy(&item.stdout);
    assert!(item.contains("reader-app") && !item.contains(&key["sk-earshot-".len() + 8..]), "the table's item: {item}");
    // Revoked in the table: refused at the next request, with no new deployment.
    earshot_key_in_table(&moto, &["revoke", &id]);
    let revoked = sdk(&key);
    assert_eq!(
        (revoked["raised"].as_str(), revoked["status"].as_u64(), revoked["code"].as_str()),
        (Some("AuthenticationError"), Some(401), Some("key_revoked"))
    );
    assert!(earshot_key_in_table(&moto, &["list"]).contains(&format!("{id}  revoked  owner=reader-app")));
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch in token mode with the interrupt table: make test-lambda"]
async fn the_lambda_keeps_two_bearers_conversations_apart() {
    // Two users of one public function URL, each invocation its own: what one may reach of the other's
    // goes through the shared DynamoDB table (moto's server here), keyed by owner and id together.
    use earshot_client::{interrupt_as, ClientError, SpeakBody};
    use earshot_gateway::auth::{mint, now, Claims};
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    let key = b"0123456789abcdef0123456789abcdef";
    let token = |sub: &str, pattern: &str| {
        let claims = Claims { aud: "earshot".into(), exp: now() + 300, sub: Some(sub.into()), conversations: Some(vec![pattern.into()]), ..Default::default() };
        mint("lambda-test", key, &claims).unwrap()
    };
    let (alice, bob) = (token("alice", "call:*"), token("bob", "call:*"));
    let as_bearer = |bearer: &str| CallOptions { bearer: Some(bearer.to_string()), ..Default::default() };
    let status_code = |r: Result<earshot_client::Received, ClientError>| match r {
        Ok(r) => (r.status, r.error.map(|e| e.code).unwrap_or_default()),
        Err(ClientError::Refused { status, code, .. }) => (status, code),
        Err(e) => panic!("{e}"),
    };
    let long = SpeakBody { conversation_id: Some("call:1".into()), ..earshot_e2e::prompt("long") };
    let speaking = tokio::spawn({
        let (url, options) = (url.clone(), as_bearer(&alice));
        async move { speak(&url, &long, &options).await }
    });
    // The long answer runs for many seconds; by then its record is in the table.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(!speaking.is_finished(), "the long answer ended too soon to test anything");
    // Another owner's live conversation is as unknown as one never started.
    let tries = interrupt_as(&url, "call:1", Some(&bob)).await.unwrap_err();
    assert!(matches!(&tries, ClientError::Refused { status: 404, code, .. } if code == "unknown_conversation"), "{tries}");
    // Speaking under the same id is bob's own conversation: it begins and ends (deleting its own record) beside alice's.
    let same_id = SpeakBody { conversation_id: Some("call:1".into()), ..earshot_e2e::prompt("brief") };
    assert_eq!(status_code(speak(&url, &same_id, &as_bearer(&bob)).await), (200, String::new()));
    // Prefix tricks reach nothing: a pattern covers whole segments, and one that is not is refused.
    let bobs = token("bob", "bob:*");
    let trick = SpeakBody { conversation_id: Some("bob-smith:1".into()), ..earshot_e2e::prompt("brief") };
    assert_eq!(status_code(speak(&url, &trick, &as_bearer(&bobs)).await), (403, "token_out_of_scope".into()));
    assert_eq!(status_code(speak(&url, &trick, &as_bearer(&token("bob", "bob-*"))).await), (401, "token_malformed".into()));
    // Alice's conversation, record and Stop are hers still.
    assert!(!speaking.is_finished(), "alice's answer was stopped by another bearer");
    interrupt_as(&url, "call:1", Some(&alice)).await.expect("the owner stops its own conversation");
    let r = tokio::time::timeout(std::time::Duration::from_secs(10), speaking).await.expect("the stream ends").unwrap().unwrap();
    assert_eq!(r.error.map(|e| e.code).as_deref(), Some("interrupted"));
}

/// A function URL's request as Lambda hands it to the function (the API Gateway v2 payload: AWS, "Invoking
/// Lambda function URLs"), from the network address `source_ip` and, where given, signed by the IAM principal
/// `iam_arn`, sent through the Invoke API of `cargo lambda watch` (`EARSHOT_LAMBDA_INVOKE_URL`): its function
/// URL fills in neither the caller's address nor an IAM caller, so the request context is written here as
/// AWS documents it. The answer is the response's body (the Invoke API keeps the status in the stream's
/// prelude, which cargo lambda does not pass on).
async fn invoke_as(source_ip: &str, iam_arn: Option<&str>, path: &str, body: Option<serde_json::Value>) -> String {
    let url = std::env::var("EARSHOT_LAMBDA_INVOKE_URL").expect("EARSHOT_LAMBDA_INVOKE_URL: the Invoke API of cargo lambda watch");
    let mut context = serde_json::json!({
        "accountId": "123456789012", "apiId": "earshot", "domainName": "earshot.lambda-url.us-east-1.on.aws",
        "domainPrefix": "earshot", "requestId": "test", "routeKey": "$default", "stage": "$default",
        "time": "06/Dec/2026:18:00:00 +0000", "timeEpoch": 1_796_580_000_000u64,
        "http": { "method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip, "userAgent": "earshot-e2e" },
    });
    if let Some(arn) = iam_arn {
        context["authorizer"] = serde_json::json!({ "iam": {
            "accessKey": "AKIATEST", "accountId": "123456789012", "callerId": "AROATEST:session", "userArn": arn, "userId": "AROATEST:session",
        } });
    }
    let event = serde_json::json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": { "content-type": "application/json", "host": "earshot.lambda-url.us-east-1.on.aws" },
        "requestContext": context, "isBase64Encoded": false,
        "body": body.map(|b| b.to_string()).unwrap_or_default(),
    });
    let response = reqwest::Client::new().post(url).json(&event).send().await.expect("the Invoke API answers");
    response.text().await.unwrap_or_default()
}

/// Speaks `text` under `id` as the caller `source_ip` / `iam_arn`: the body of the answer.
async fn speak_as(source_ip: &str, iam_arn: Option<&str>, text: &str, id: &str) -> String {
    invoke_as(source_ip, iam_arn, "/v1/speak", Some(serde_json::json!({ "text": text, "conversation_id": id, "format": "sse" }))).await
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch with auth public, a 40-character budget and the interrupt table: make test-lambda"]
async fn the_lambda_keeps_strangers_apart_by_their_address() {
    // A function URL with auth NONE: each network address is an owner (an IPv6 one by its /64), with a
    // budget of its own (40 characters an hour here: one 31-character sentence, then less than a block).
    let sentence = "Hello there, how are you today?";
    let spoken = |body: &str| body.contains("event: done");
    let spent = |body: &str| body.contains("\"character_budget_spent\"");
    let body = speak_as("198.51.100.7", None, sentence, "a").await;
    assert!(spoken(&body), "{body}");
    let body = speak_as("198.51.100.7", None, sentence, "b").await;
    assert!(spent(&body), "198.51.100.7 spent its budget: {body}");
    let body = speak_as("198.51.100.8", None, sentence, "a").await;
    assert!(spoken(&body), "198.51.100.8's budget is its own: {body}");
    // One /64 is one caller: a new address in it is not a new budget.
    assert!(spoken(&speak_as("2001:db8:7:1::10", None, sentence, "a").await));
    let body = speak_as("2001:db8:7:1::99", None, sentence, "a").await;
    assert!(spent(&body), "a neighbour in the /64 shares its budget: {body}");
    // A stranger cannot stop another address's answer by guessing its id; the address that started it can.
    let speaking = tokio::spawn(speak_as("198.51.100.9", None, sentence, "support-1"));
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    assert!(!speaking.is_finished(), "the answer ended too soon to test anything");
    let body = invoke_as("198.51.100.10", None, "/v1/conversations/support-1/interrupt", None).await;
    assert!(body.contains("\"unknown_conversation\""), "another address's id is unknown to a stranger: {body}");
    let body = invoke_as("198.51.100.9", None, "/v1/conversations/support-1/interrupt", None).await;
    assert!(!body.contains("\"error\""), "its own address stops it: {body}");
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), speaking).await.expect("the stream ends").unwrap();
    assert!(body.contains("\"interrupted\""), "the answer ends interrupted: {body}");
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch configured for IAM with a 40-character budget: make test-lambda"]
async fn the_lambda_counts_an_assumed_role_as_one_owner_whatever_its_session_name() {
    // The caller picks its role session's name, so a new name per request must not be a new budget.
    let role = |name: &str, session: &str| format!("arn:aws:sts::123456789012:assumed-role/{name}/{session}");
    let sentence = "Hello there, how are you today?";
    let body = speak_as("198.51.100.20", Some(&role("voice-app", "alice-1")), sentence, "a").await;
    assert!(body.contains("event: done"), "{body}");
    let body = speak_as("198.51.100.21", Some(&role("voice-app", "alice-2")), sentence, "b").await;
    assert!(body.contains("\"character_budget_spent\""), "a second session name of the role shares its budget: {body}");
    let body = speak_as("198.51.100.20", Some(&role("other-app", "alice-1")), sentence, "a").await;
    assert!(body.contains("event: done"), "another role is another owner: {body}");
}

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch with auth public, a 2,000-character input budget and the table: make test-lambda"]
async fn the_lambda_budgets_what_a_stranger_sends() {
    // 900 characters of earlier turns for the prompt "ok", answered "Ok.": what the agent bills as input,
    // whatever the answer's length. Two fit in 2,000 characters an hour; a third is refused before the agent.
    let heavy = |id: &str| {
        serde_json::json!({
            "prompt": "ok", "conversation_id": id, "format": "sse",
            "messages": [{ "role": "user", "content": "x".repeat(900) }, { "role": "assistant", "content": "Ok." }],
        })
    };
    for id in ["s:1", "s:2"] {
        let body = invoke_as("198.51.100.30", None, "/v1/speak", Some(heavy(id))).await;
        assert!(body.contains("event: done"), "within the budget: {body}");
    }
    let body = invoke_as("198.51.100.30", None, "/v1/speak", Some(heavy("s:3"))).await;
    assert!(body.contains("\"input_budget_spent\""), "a third passes 2,000 characters, however short its answer: {body}");
    let body = invoke_as("198.51.100.31", None, "/v1/speak", Some(heavy("s:1"))).await;
    assert!(body.contains("event: done"), "another address's input budget is its own: {body}");
}
