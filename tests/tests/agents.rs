//! The agents a team brings: an OpenAI-compatible endpoint and an HTTP agent of its own (SSE, NDJSON or
//! plain text), each against its stand-in streaming at token pace with a tool-call pause, through the
//! gateway to captions and audio; every mapped failure; multi-turn `messages` passed on; the key read
//! from Secrets Manager (moto). The OpenAI-compatible stand-in's streams are judged by the official
//! `openai` Python package (`tests/judges/openai_reads.py`), which must read every one of them as
//! earshot does.

use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{AnswerFormat, HttpAgent, HttpAgentSettings, OpenAiAgent, OpenAiSettings};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{speak, CallOptions, ClientError, SpeakBody, Turn};
use earshot_core::agent::{AgentEvent, AgentInput, AgentSource};
use earshot_e2e::moto::Moto;
use earshot_e2e::{check_conversation, prompt, serve, EarshotProcess, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings};
use earshot_standins::{start_agents, AgentStandIns};
use tokio_util::sync::CancellationToken;

/// Fast enough for a quick suite, slow enough that the answer is still being written while it is spoken.
const TOKENS_PER_SECOND: f64 = 40.0;

fn openai_settings(base_url: String) -> OpenAiSettings {
    OpenAiSettings {
        base_url,
        model: "standin".into(),
        api_key: Some("sk-local".into()),
        system_prompt: "Answer briefly.".into(),
        temperature: Some(0.2),
        max_tokens: Some(300),
        connect_timeout: Duration::from_secs(5),
        max_event_bytes: earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES,
    }
}

/// What a source produced for a prompt: its text, its pauses, and the code of the failure that ended it.
async fn collect(agent: &dyn AgentSource, prompt: &str) -> (String, usize, Option<String>) {
    let mut rx = match agent.start(AgentInput::prompt(prompt), CancellationToken::new()).await {
        Ok(rx) => rx,
        Err(e) => return (String::new(), 0, Some(e.code)),
    };
    let (mut text, mut pauses) = (String::new(), 0);
    while let Some(item) = rx.recv().await {
        match item {
            Ok(AgentEvent::Delta(t)) => text.push_str(&t),
            Ok(AgentEvent::Pause) => pauses += 1,
            Ok(AgentEvent::Done) => return (text, pauses, None),
            Ok(AgentEvent::DoneUnmarked) => return (text, pauses, Some("done_unmarked".into())),
            Err(e) => return (text, pauses, Some(e.code)),
        }
    }
    (text, pauses, Some("channel closed without done".into()))
}

/// What the official openai package read from the stand-in (run off the runtime, which serves the stand-in).
async fn openai_reads(base_url: &str, prompt: &str) -> serde_json::Value {
    let (base_url, prompt) = (base_url.to_string(), prompt.to_string());
    tokio::task::spawn_blocking(move || openai_reads_blocking(&base_url, &prompt)).await.unwrap()
}

fn openai_reads_blocking(base_url: &str, prompt: &str) -> serde_json::Value {
    let python = earshot_e2e::moto::judges_python();
    let script = earshot_e2e::package_dir().join("judges/openai_reads.py");
    let out = std::process::Command::new(python).arg(script).args([base_url, prompt]).output().expect("python with the openai package");
    assert!(out.status.success(), "openai_reads.py failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("its JSON report")
}

#[tokio::test]
async fn the_official_openai_client_reads_every_stream_the_standin_serves_as_earshot_does() {
    let stand = start_agents(200.0).await.unwrap();
    let base = format!("{}/v1", stand.url);
    let agent = OpenAiAgent::new(openai_settings(base.clone())).unwrap();
    // (prompt, what openai raises, earshot's code): both read the same text up to the end or the failure.
    let cases = [
        ("brief", None, None),
        ("pause", None, None),
        ("[[filtered]] brief", None, Some("agent_content_filtered")),
        ("[[midstream]] brief", Some("APIError"), Some("agent_stream_error")),
        ("[[401]] brief", Some("AuthenticationError"), Some("agent_access_denied")),
        ("[[429]] brief", Some("RateLimitError"), Some("agent_throttled")),
        ("[[500]] brief", Some("InternalServerError"), Some("agent_unavailable")),
    ];
    for (prompt, raised, code) in cases {
        let judged = openai_reads(&base, prompt).await;
        let (text, pauses, failure) = collect(&agent, prompt).await;
        assert_eq!(judged["error"].as_str(), raised, "{prompt}: the openai package: {judged}");
        assert_eq!(failure.as_deref(), code, "{prompt}: earshot");
        assert_eq!(judged["text"].as_str().unwrap(), text, "{prompt}: the same text");
        assert_eq!(judged["tool_calls"].as_u64().unwrap() as usize, pauses, "{prompt}: a pause per tool call");
        if raised.is_none() {
            let finish = if prompt.contains("filtered") { "content_filter" } else { "stop" };
            assert_eq!(judged["finish_reason"], finish, "{prompt}");
        }
    }
    // A stream cut before any finish_reason: the package ends quietly; earshot says the answer broke.
    let judged = openai_reads(&base, "[[cut]] brief").await;
    let (text, _, failure) = collect(&agent, "[[cut]] brief").await;
    assert_eq!((judged["error"].is_null(), judged["finish_reason"].is_null()), (true, true), "{judged}");
    assert_eq!(judged["text"].as_str().unwrap(), text);
    assert_eq!(failure.as_deref(), Some("agent_stream_error"));
}

#[tokio::test]
async fn an_openai_agent_speaks_through_earshot_serve_releasing_what_it_said_before_its_tool_call() {
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let stand = start_agents(TOKENS_PER_SECOND).await.unwrap();
    let base = format!("{}/v1", stand.url);
    let earshot = EarshotProcess::start(&[
        "--kokoro-url",
        &kokoro.url,
        "--agent",
        "openai",
        "--openai-base-url",
        &base,
        "--openai-model",
        "standin",
        "--openai-api-key",
        "sk-local",
        "--system-prompt",
        "Answer briefly.",
    ])
    .await;
    earshot.healthy().await;
    let r = speak(&earshot.url, &prompt("pause"), &CallOptions::default()).await.unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences[0], "Let me check that for you.");
    assert!(sentences.len() >= 3, "{sentences:?}");
    // The first sentence was released during the tool call, not after it: the next text came 2 s later.
    let timeline = r.timeline.as_ref().unwrap();
    let (first, second) = (&timeline.sentences[0], &timeline.sentences[1]);
    assert!(second.complete_ms - first.released_ms.unwrap() > 1500.0, "released {:?}, next complete {}", first.released_ms, second.complete_ms);
    let seen = stand.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-local"));
    assert_eq!(seen.body["model"], "standin");
    assert_eq!(seen.body["messages"][0], serde_json::json!({"role": "system", "content": "Answer briefly."}));
    // A failure before the stream is a 502 with the mapped code.
    assert_eq!(failure(speak(&earshot.url, &prompt("[[401]] brief"), &CallOptions::default()).await), (502, "agent_access_denied".into()));
}

#[tokio::test]
async fn an_agents_key_never_reaches_the_gateways_log() {
    // The key planted in the agent's URL and header, and the service's own words, reach the log only
    // redacted, at every site that writes an upstream's text (the client's error, the conversation's end).
    let stand = start_agents(200.0).await.unwrap();
    let agent_url = format!("{}/agent/sse?key=planted-key-4242", stand.url);
    let earshot = EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--agent",
        "http",
        "--http-agent-url",
        &agent_url,
        "--http-agent-header",
        "authorization: Bearer sk-planted-4242",
        "--http-agent-text-pointer",
        "/delta/text",
    ])
    .await;
    earshot.healthy().await;
    for prompt_text in ["[[401]] brief", "[[500]] brief", "[[midstream]] brief"] {
        let (_, code) = failure(speak(&earshot.url, &prompt(prompt_text), &CallOptions::default()).await);
        assert!(code.starts_with("agent_"), "{prompt_text}: {code}");
    }
    let log = std::fs::read_to_string(earshot.log_path()).unwrap();
    assert!(log.contains("/agent/sse?[redacted]"), "the agent's URL is logged with its query redacted:\n{log}");
    assert_eq!(log.matches("upstream failure: the HTTP agent").count(), 3, "each failure is logged:\n{log}");
    for secret in ["planted-key-4242", "sk-planted-4242"] {
        assert!(!log.contains(secret), "`{secret}` is in the gateway's log:\n{log}");
    }
}

/// How a conversation failed: the HTTP status and the code, whether the gateway refused it before the
/// stream or said so in an `error` message.
fn failure(result: Result<earshot_client::Received, ClientError>) -> (u16, String) {
    match result {
        Ok(r) => (r.status, r.error.map(|e| e.code).unwrap_or_else(|| "no error".into())),
        Err(ClientError::Refused { status, code, .. }) => (status, code),
        Err(e) => panic!("{e}"),
    }
}

/// The conversation secret of the gateways here, so that a test can derive the keys they send upstream.
fn secret() -> earshot_gateway::ConversationSecret {
    earshot_gateway::ConversationSecret::new(b"the agents suite's conversation secret").unwrap()
}

/// The synthetic voice (a tone) sending each answer's audio as soon as it has the text, as a voice far faster
/// than real time does: this suite is about agents, and nothing in it waits on playback's pace.
fn fast_voice() -> Arc<SyntheticBackend> {
    Arc::new(SyntheticBackend::new(SyntheticConfig { lead: Duration::from_secs(600), ..Default::default() }))
}

/// A gateway with the fast synthetic voice and `agent`.
async fn gateway(agent: Arc<dyn AgentSource>) -> String {
    let gw = Gateway::new(vec![fast_voice()], agent, GatewaySettings { metrics_namespace: None, conversation_secret: secret(), ..Default::default() });
    serve(gw).await.url
}

fn http_agent(stand: &AgentStandIns, shape: &str, format: AnswerFormat, pointer: Option<&str>) -> Arc<dyn AgentSource> {
    Arc::new(HttpAgent::new(http_agent_settings(stand, shape, format, pointer)).unwrap())
}

fn http_agent_settings(stand: &AgentStandIns, shape: &str, format: AnswerFormat, pointer: Option<&str>) -> HttpAgentSettings {
    HttpAgentSettings {
        url: format!("{}/agent/{shape}", stand.url),
        headers: vec![("x-tenant".into(), "voice".into())],
        format,
        text_pointer: pointer.map(str::to_string),
        connect_timeout: Duration::from_secs(5),
        max_event_bytes: earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES,
    }
}

#[tokio::test]
async fn an_http_agent_speaks_in_each_of_its_formats_with_its_pause() {
    let stand = start_agents(TOKENS_PER_SECOND).await.unwrap();
    for (shape, format, pointer) in [
        ("sse", AnswerFormat::Auto, Some("/delta/text")),
        ("ndjson", AnswerFormat::Auto, None),
        ("text", AnswerFormat::Auto, None),
        ("ndjson", AnswerFormat::Ndjson, Some("/text")),
    ] {
        let url = gateway(http_agent(&stand, shape, format, pointer)).await;
        let r = speak(&url, &prompt("pause"), &CallOptions::default()).await.unwrap();
        let sentences = check_conversation(&r);
        assert_eq!(
            sentences.join(" "),
            "Let me check that for you. Your order shipped this morning. It should arrive on Thursday, and the tracking number is in your e-mail.",
            "{shape}"
        );
        let timeline = r.timeline.as_ref().unwrap();
        let released = timeline.sentences[0].released_ms.unwrap();
        assert!(timeline.sentences[1].complete_ms - released > 1500.0, "{shape}: the first sentence waited for the pause's end");
        let seen = stand.seen.lock().unwrap().last().cloned().unwrap();
        let id = r.header("x-earshot-conversation-id").expect("the conversation's id");
        // The agent sees the conversation's key (its owner and id), never the client's id alone.
        let key = earshot_gateway::Owner::local().key(&secret(), id);
        assert_eq!(seen.body, serde_json::json!({"prompt": "pause", "messages": [], "conversation_id": key}), "{shape}");
        assert!(seen.headers.contains(&("x-tenant".into(), "voice".into())), "{shape}: the configured header");
    }
}

#[tokio::test]
async fn an_http_agents_failures_reach_the_client_with_their_codes() {
    let stand = start_agents(200.0).await.unwrap();
    for (shape, prompt_text, code) in [
        ("sse", "[[401]] brief", "agent_access_denied"),
        ("ndjson", "[[429]] brief", "agent_throttled"),
        ("text", "[[500]] brief", "agent_unavailable"),
        ("sse", "[[midstream]] brief", "agent_stream_error"),
    ] {
        let url = gateway(http_agent(&stand, shape, AnswerFormat::Auto, Some("/delta/text"))).await;
        let (status, got) = failure(speak(&url, &prompt(prompt_text), &CallOptions::default()).await);
        assert_eq!(got, code, "{shape} {prompt_text}");
        // Before the stream, a 502; once speaking, an `error` message in the stream.
        assert_eq!(status, if prompt_text.contains("midstream") { 200 } else { 502 }, "{shape} {prompt_text}");
    }
    // What the agent's service says, its URL and any key in it stay in the gateway's log: a key planted
    // in the agent's URL and the service's own words ("Incorrect API key provided") never reach a client.
    for (shape, prompt_text) in [("sse", "[[401]] brief"), ("ndjson", "[[500]] brief"), ("sse", "[[midstream]] brief")] {
        let agent = Arc::new(
            HttpAgent::new(HttpAgentSettings {
                url: format!("{}/agent/{shape}?key=planted-key-4242", stand.url),
                headers: vec![("authorization".into(), "Bearer sk-planted-4242".into())],
                format: AnswerFormat::Auto,
                text_pointer: Some("/delta/text".into()),
                connect_timeout: Duration::from_secs(5),
                max_event_bytes: earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES,
            })
            .unwrap(),
        );
        let url = gateway(agent).await;
        let message = match speak(&url, &prompt(prompt_text), &CallOptions::default()).await {
            Ok(r) => r.error.expect("an error in the stream").message,
            Err(ClientError::Refused { message, .. }) => message,
            Err(e) => panic!("{e}"),
        };
        for leak in ["planted-key", "sk-planted", "127.0.0.1", "http", "Incorrect", "invalid_request_error"] {
            assert!(!message.contains(leak), "{shape} {prompt_text}: `{leak}` reached the client: {message}");
        }
        assert!(message.contains("request id"), "{message}");
    }
    // Nothing listening: unreachable, and retryable.
    let agent = HttpAgent::new(HttpAgentSettings {
        url: "http://127.0.0.1:9/agent".into(),
        headers: vec![],
        format: AnswerFormat::Auto,
        text_pointer: None,
        connect_timeout: Duration::from_secs(2),
        max_event_bytes: earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES,
    })
    .unwrap();
    let (_, _, failure) = collect(&agent, "brief").await;
    assert_eq!(failure.as_deref(), Some("agent_unreachable"));
}

#[tokio::test]
async fn a_conversation_reaches_each_agent_in_its_own_format() {
    let stand = start_agents(200.0).await.unwrap();
    let messages = vec![Turn::user("Where is my order?"), Turn::assistant("It shipped this morning."), Turn::user("When will it arrive?")];
    let body = SpeakBody { messages: Some(messages), ..Default::default() };
    let openai = gateway(Arc::new(OpenAiAgent::new(openai_settings(format!("{}/v1", stand.url))).unwrap())).await;
    let r = speak(&openai, &body, &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    let seen = stand.seen.lock().unwrap().last().cloned().unwrap();
    let roles: Vec<_> = seen.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        roles,
        vec![
            ("system".into(), "Answer briefly.".into()),
            ("user".into(), "Where is my order?".into()),
            ("assistant".into(), "It shipped this morning.".into()),
            ("user".into(), "When will it arrive?".into())
        ]
    );
    let http = gateway(http_agent(&stand, "sse", AnswerFormat::Sse, Some("/delta/text"))).await;
    check_conversation(&speak(&http, &body, &CallOptions::default()).await.unwrap());
    let seen = stand.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.body["prompt"], "When will it arrive?");
    assert_eq!(
        seen.body["messages"],
        serde_json::json!([{"role": "user", "content": "Where is my order?"}, {"role": "assistant", "content": "It shipped this morning."}])
    );
    // A conversation the gateway refuses never reaches the agent.
    let before = stand.seen.lock().unwrap().len();
    let bad = SpeakBody { messages: Some(vec![Turn::assistant("Hello.")]), ..Default::default() };
    assert_eq!(failure(speak(&openai, &bad, &CallOptions::default()).await), (400, "invalid_messages".into()));
    assert_eq!(stand.seen.lock().unwrap().len(), before);
}

#[tokio::test]
async fn the_agents_key_comes_from_secrets_manager_once_at_start() {
    let moto = Moto::start().await;
    moto.boto3(
        "sm = client('secretsmanager')\n\
         sm.create_secret(Name='earshot/openai', SecretString='sk-from-secret')\n\
         sm.create_secret(Name='earshot/agent', SecretString='{\"api_key\": \"key-in-json\"}')\n",
    );
    let config = moto.sdk().await;
    let http = reqwest::Client::new();
    assert_eq!(earshot_aws::aws_json::secret_string(&http, &config, "earshot/openai").await.unwrap(), "sk-from-secret");
    assert_eq!(earshot_aws::aws_json::secret_string(&http, &config, "earshot/agent").await.unwrap(), "key-in-json");
    let missing = earshot_aws::aws_json::secret_string(&http, &config, "earshot/none").await.unwrap_err();
    assert_eq!(missing.error_type, "ResourceNotFoundException", "{missing:?}");

    // Wired as the Lambda wires it: the variables alone, the key read at build and sent as a bearer token.
    let stand = start_agents(200.0).await.unwrap();
    let vars = [
        ("EARSHOT_BACKENDS", "synthetic".to_string()),
        ("EARSHOT_AGENT", "openai".into()),
        ("EARSHOT_OPENAI_BASE_URL", format!("{}/v1", stand.url)),
        ("EARSHOT_OPENAI_MODEL", "standin".into()),
        ("EARSHOT_AGENT_KEY_SECRET", "earshot/openai".into()),
        ("EARSHOT_AWS_ENDPOINT", moto.url.clone()),
    ];
    let get = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    let settings = earshot_wiring::Settings::from_vars(get, earshot_wiring::Place::Serve).unwrap();
    // The SDK's credential chain reads these; moto accepts any.
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDTEST");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "secret");
    std::env::set_var("AWS_REGION", "us-east-1");
    let built = earshot_wiring::build(&settings, earshot_wiring::Place::Serve).await.unwrap();
    let url = serve(built.gateway().0).await.url;
    check_conversation(&speak(&url, &prompt("brief"), &CallOptions::default()).await.unwrap());
    assert_eq!(stand.seen.lock().unwrap().last().unwrap().authorization.as_deref(), Some("Bearer sk-from-secret"));
}

/// The AWS stand-ins at token pace, and an SDK configuration that reaches them.
async fn aws_standins() -> (earshot_standins::StandIns, earshot_aws::SdkConfig) {
    let standins = earshot_standins::start(earshot_standins::StandInsConfig { tokens_per_second: TOKENS_PER_SECOND, ..Default::default() }, 0).await.unwrap();
    let config = earshot_e2e::run_aws::sdk_for(&standins).await;
    (standins, config)
}

#[tokio::test]
async fn an_agent_on_agentcore_speaks_through_the_real_sdk_keeping_one_session_per_conversation() {
    let (standins, config) = aws_standins().await;
    let agent = |arn: &str| {
        let settings = earshot_aws::AgentCoreSettings { runtime_arn: arn.into(), qualifier: None, text_pointer: "/data".into() };
        Arc::new(earshot_aws::AgentCoreAgent::new(&config, settings).unwrap()) as Arc<dyn AgentSource>
    };
    let url = gateway(agent("arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/support_agent-AbCdEf1234")).await;
    let first = SpeakBody { conversation_id: Some("c-42".into()), ..prompt("pause") };
    let r = speak(&url, &first, &CallOptions::default()).await.unwrap();
    assert_eq!(check_conversation(&r)[0], "Let me check that for you.");
    // An unsignalled pause (the tool runs inside the agent): the finished sentence went out during the silence.
    let t = r.timeline.as_ref().unwrap();
    assert!(t.sentences[1].complete_ms - t.sentences[0].released_ms.unwrap() > 1500.0);
    let second = SpeakBody {
        conversation_id: Some("c-42".into()),
        messages: Some(vec![Turn::user("pause"), Turn::assistant("Let me check that for you.")]),
        ..prompt("brief")
    };
    check_conversation(&speak(&url, &second, &CallOptions::default()).await.unwrap());
    let calls = standins.stats.agentcore_calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    let key = earshot_gateway::Owner::local().key(&secret(), "c-42");
    assert_eq!(calls[0].0, earshot_aws::agentcore::runtime_session_id(Some(&key)));
    assert_eq!(calls[0].0, calls[1].0, "one runtime session for the conversation");
    assert_eq!(calls[1].1["prompt"], "brief");
    assert_eq!(calls[1].1["conversation_id"], key.as_str());
    assert_eq!(calls[1].1["messages"][1], serde_json::json!({"role": "assistant", "content": "Let me check that for you."}));
    // The service's errors, as the SDK reads them.
    assert_eq!(failure(speak(&url, &prompt("[[ThrottlingException]] brief"), &CallOptions::default()).await), (502, "agent_throttled".into()));
    let missing = gateway(agent("arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/missing")).await;
    assert_eq!(failure(speak(&missing, &prompt("brief"), &CallOptions::default()).await), (502, "agent_model_not_found".into()));
}

#[tokio::test]
async fn two_bearers_under_one_conversation_id_reach_two_agent_sessions() {
    // A conversation id is a name a client chooses: two users who choose the same one must not share an
    // agent session (its memory) on AgentCore or on an HTTP agent.
    use earshot_gateway::auth::{mint, now, Claims, TokenAuth};
    use earshot_gateway::Owner;
    let key = b"0123456789abcdef0123456789abcdef";
    let deployment = |agent: Arc<dyn AgentSource>, conversation_secret: earshot_gateway::ConversationSecret| async move {
        let auth = TokenAuth::new(vec![("k1".into(), key.to_vec())], "earshot").unwrap();
        let settings = GatewaySettings { metrics_namespace: None, auth: Some(Arc::new(auth)), conversation_secret, ..Default::default() };
        serve(Gateway::new(vec![fast_voice()], agent, settings)).await.url
    };
    let token_gateway = |agent: Arc<dyn AgentSource>| deployment(agent, secret());
    let bearer = |sub: &str| {
        let claims = Claims { aud: "earshot".into(), exp: now() + 300, sub: Some(sub.into()), conversations: Some(vec!["*".into()]), ..Default::default() };
        CallOptions { bearer: Some(mint("k1", key, &claims).unwrap()), ..Default::default() }
    };
    let same_id = SpeakBody { conversation_id: Some("c:1".into()), ..prompt("brief") };

    let (standins, config) = aws_standins().await;
    let settings = earshot_aws::AgentCoreSettings {
        runtime_arn: "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/support_agent-AbCdEf1234".into(),
        qualifier: None,
        text_pointer: "/data".into(),
    };
    let url = token_gateway(Arc::new(earshot_aws::AgentCoreAgent::new(&config, settings).unwrap())).await;
    for sub in ["alice", "bob"] {
        check_conversation(&speak(&url, &same_id, &bearer(sub)).await.unwrap());
    }
    let sessions: Vec<String> = standins.stats.agentcore_calls.lock().unwrap().iter().map(|(session, _)| session.clone()).collect();
    let expected: Vec<String> =
        ["alice", "bob"].iter().map(|sub| earshot_aws::agentcore::runtime_session_id(Some(&Owner::subject(sub).key(&secret(), "c:1")))).collect();
    assert_eq!(sessions, expected, "one runtime session per owner");
    assert_ne!(sessions[0], sessions[1]);

    let stand = start_agents(TOKENS_PER_SECOND).await.unwrap();
    let url = token_gateway(http_agent(&stand, "sse", AnswerFormat::Auto, Some("/delta/text"))).await;
    for sub in ["alice", "bob"] {
        check_conversation(&speak(&url, &same_id, &bearer(sub)).await.unwrap());
    }
    let ids: Vec<serde_json::Value> = stand.seen.lock().unwrap().iter().map(|seen| seen.body["conversation_id"].clone()).collect();
    let expected: Vec<serde_json::Value> = ["alice", "bob"].iter().map(|sub| serde_json::json!(Owner::subject(sub).key(&secret(), "c:1"))).collect();
    assert_eq!(ids, expected, "the HTTP agent sees each owner's key, never the shared id");

    // Another deployment sharing the agent (its own conversation secret): the same owner and id are
    // another session there, and the key is not the bare digest of owner and id anyone could compute.
    let other = earshot_gateway::ConversationSecret::new(b"another deployment's conversation secret").unwrap();
    let url = deployment(http_agent(&stand, "sse", AnswerFormat::Auto, Some("/delta/text")), other.clone()).await;
    check_conversation(&speak(&url, &same_id, &bearer("alice")).await.unwrap());
    let seen = stand.seen.lock().unwrap().last().unwrap().body["conversation_id"].clone();
    assert_eq!(seen, serde_json::json!(Owner::subject("alice").key(&other, "c:1")));
    assert_ne!(seen, expected[0], "two deployments, two sessions for one owner and id");
}

/// This process's resident memory, in bytes (the gateway and the stand-ins run in it).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kb.unwrap_or(0) * 1024
}

#[tokio::test]
async fn agents_that_hang_stall_or_flood_end_with_their_codes_within_their_limits() {
    use earshot_core::agent_deadlines::AgentDeadlines;
    let stand = start_agents(TOKENS_PER_SECOND).await.unwrap();
    let limit = Duration::from_millis(800);
    let deadlines = AgentDeadlines { response: limit, first_event: limit, between_events: limit };
    let gateway_with = |agent: Arc<dyn AgentSource>| async move {
        let settings = GatewaySettings { metrics_namespace: None, agent_deadlines: deadlines, ..Default::default() };
        serve(Gateway::new(vec![Arc::new(SyntheticBackend::new(SyntheticConfig::default()))], agent, settings)).await.url
    };
    // The endless event must meet its size limit before its first-event deadline, however slow the machine:
    // the limit is set where any token is far below it and an unoptimised parser on a busy machine reaches
    // it in milliseconds (the default, a megabyte, took longer than 800 ms beside a busy process).
    let max_event_bytes = 64 << 10;
    let bounded_http = |shape: &str, pointer: Option<&str>| -> Arc<dyn AgentSource> {
        Arc::new(HttpAgent::new(HttpAgentSettings { max_event_bytes, ..http_agent_settings(&stand, shape, AnswerFormat::Auto, pointer) }).unwrap())
    };
    let agents: Vec<(&str, Arc<dyn AgentSource>)> = vec![
        ("sse", bounded_http("sse", Some("/delta/text"))),
        ("ndjson", bounded_http("ndjson", None)),
        ("openai", Arc::new(OpenAiAgent::new(OpenAiSettings { max_event_bytes, ..openai_settings(format!("{}/v1", stand.url)) }).unwrap())),
    ];
    let before = resident_bytes();
    for (shape, agent) in agents {
        let url = gateway_with(agent).await;
        for (marker, code, at_least) in [
            ("[[hang]]", "agent_no_response", limit),
            ("[[silent]]", "agent_first_token_timeout", limit),
            ("[[stall]]", "agent_stalled", limit),
            ("[[endless]]", "agent_event_too_large", Duration::ZERO),
            ("[[huge-error]]", "agent_unavailable", Duration::ZERO),
        ] {
            let asked = std::time::Instant::now();
            let (_, got) = failure(speak(&url, &prompt(&format!("{marker} brief")), &CallOptions::default()).await);
            let took = asked.elapsed();
            assert_eq!(got, code, "{shape} {marker}");
            // Each ends at its limit (plus a loaded machine's slack), never at some outer one.
            assert!(took >= at_least && took < at_least + Duration::from_secs(3), "{shape} {marker}: ended after {took:?}");
        }
    }
    // A 100 MB error body and an endless event were never held: the process grew by far less.
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 40 << 20, "resident memory grew by {} MB", grown >> 20);
}
