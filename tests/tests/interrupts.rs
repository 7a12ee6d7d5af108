//! Interrupts across processes, as on Lambda: the interrupt store on DynamoDB, through the real AWS SDK,
//! against moto's server (an implementation of the DynamoDB API that this project did not write), and
//! two gateways that share nothing but that store: one speaks through the real Kokoro container, the
//! other takes the interrupt. The same store keeps each caller's places and character budget: both are
//! held here across two gateways, and the budget in one gateway's own memory too.
//!
//! `make test-e2e` installs moto (`tests/moto/.venv`) and names its server in `EARSHOT_MOTO_SERVER`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TimeToLiveSpecification};
use earshot_aws::DynamoStore;
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{interrupt, interrupt_heard, speak, CallOptions, ClientError, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_core::store::Interrupt;
use earshot_e2e::moto::Moto;
use earshot_e2e::{agent, kokoro_backend, serve, Kokoro};
use earshot_gateway::auth::{mint, now, Claims, TokenAuth};
use earshot_gateway::{ConversationStore, Gateway, GatewaySettings, Interrupts};

async fn sdk(moto: &Moto) -> earshot_aws::SdkConfig {
    moto.sdk().await
}

/// The table as the CDK app creates it: key `conversation_id`, on demand, TTL on `expires_at`.
async fn table(config: &earshot_aws::SdkConfig, name: &str) {
    let client = aws_sdk_dynamodb::Client::new(config);
    client
        .create_table()
        .table_name(name)
        .attribute_definitions(AttributeDefinition::builder().attribute_name("conversation_id").attribute_type(ScalarAttributeType::S).build().unwrap())
        .key_schema(KeySchemaElement::builder().attribute_name("conversation_id").key_type(KeyType::Hash).build().unwrap())
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("the table is created");
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(TimeToLiveSpecification::builder().attribute_name("expires_at").enabled(true).build().unwrap())
        .send()
        .await
        .expect("TTL is set");
}

#[tokio::test]
async fn the_store_records_live_conversations_and_their_interrupts() {
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    table(&config, "interrupts").await;
    let store = DynamoStore::new(&config, "interrupts");
    let hour = Duration::from_secs(3600);

    assert!(!store.interrupt("nobody", None).await.unwrap(), "no live conversation under the id");
    store.begin("c1", "req-a", hour).await.unwrap();
    assert_eq!(store.interrupted("c1").await.unwrap(), None);
    assert!(store.interrupt("c1", None).await.unwrap());
    assert!(store.interrupt("c1", None).await.unwrap(), "idempotent while it lives");
    assert_eq!(store.interrupted("c1").await.unwrap(), Some(Interrupt { heard_ms: None }));
    // How much the client played travels with the interrupt to the invocation that speaks.
    assert!(store.interrupt("c1", Some(2750)).await.unwrap());
    assert_eq!(store.interrupted("c1").await.unwrap(), Some(Interrupt { heard_ms: Some(2750) }));

    // A later conversation under the same id owns the record: the first one's end leaves it.
    store.begin("c1", "req-b", hour).await.unwrap();
    assert_eq!(store.interrupted("c1").await.unwrap(), None, "a new conversation starts uninterrupted");
    store.end("c1", "req-a").await.unwrap();
    assert!(store.interrupt("c1", None).await.unwrap(), "still live: req-b has not ended");
    store.end("c1", "req-b").await.unwrap();
    assert!(!store.interrupt("c1", None).await.unwrap(), "over: an interrupt finds nothing");

    // An expired record (TTL deletes lazily) is not a live conversation.
    store.begin("c2", "req-c", Duration::ZERO).await.unwrap();
    assert!(!store.interrupt("c2", None).await.unwrap());

    // A store that cannot be reached says so, retryably.
    let gone = DynamoStore::new(&config, "no-such-table");
    let e = gone.interrupt("c1", None).await.unwrap_err();
    assert_eq!((e.code.as_str(), e.retryable), ("interrupt_store_unreachable", true));
}

#[tokio::test]
async fn an_owners_places_are_held_across_instances_and_lapse_by_themselves() {
    // Two stores with clients of their own, as two Lambda invocations: one owner's places are one count.
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    table(&config, "places").await;
    let (one, other) = (DynamoStore::new(&config, "places"), DynamoStore::new(&config, "places"));
    let minute = Duration::from_secs(60);
    assert!(one.claim("owner-a", "req-1", 2, minute).await.unwrap());
    assert!(other.claim("owner-a", "req-2", 2, minute).await.unwrap());
    assert!(!one.claim("owner-a", "req-3", 2, minute).await.unwrap(), "a third place of one owner is refused on either instance");
    assert!(other.claim("owner-a", "req-2", 2, minute).await.unwrap(), "a place already held is held");
    assert!(other.claim("owner-b", "req-4", 2, minute).await.unwrap(), "another owner has places of its own");
    other.release("owner-a", "req-1").await.unwrap();
    assert!(one.claim("owner-a", "req-3", 2, minute).await.unwrap(), "a place given back on one instance is free on the other");
    other.release("owner-a", "req-nobody").await.unwrap();

    // Writers racing for the last places: exactly as many win as there are places.
    let claims = (0..8).map(|i| {
        let store = if i % 2 == 0 { &one } else { &other };
        async move { store.claim("owner-c", &format!("race-{i}"), 3, minute).await.unwrap() }
    });
    let won = futures_util::future::join_all(claims).await.into_iter().filter(|w| *w).count();
    assert_eq!(won, 3, "three places, three winners");

    // A place whose process died lapses at its time to live.
    assert!(one.claim("owner-d", "crashed", 1, Duration::from_secs(1)).await.unwrap());
    assert!(!other.claim("owner-d", "next", 1, minute).await.unwrap());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(other.claim("owner-d", "next", 1, minute).await.unwrap(), "the lapsed place is taken");
}

/// The token key of the gateways in token mode here.
const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

/// A call as the caller `sub` (a token of [`KEY`] for its own conversations).
/// The conversation secret the instances of one deployment share (the CDK stack's, on Lambda): without
/// it each would key conversations its own way, and an interrupt through another would find nothing.
fn one_deployment() -> earshot_gateway::ConversationSecret {
    earshot_gateway::ConversationSecret::new(b"one deployment's conversation secret").unwrap()
}

fn as_caller(sub: &str) -> CallOptions {
    let claims = Claims { aud: "earshot".into(), exp: now() + 300, sub: Some(sub.into()), conversations: Some(vec![format!("{sub}:*")]), ..Default::default() };
    CallOptions { bearer: Some(mint("k1", KEY, &claims).unwrap()), ..Default::default() }
}

#[tokio::test]
async fn a_caller_at_its_limit_on_one_instance_is_refused_on_another() {
    // Two gateways in token mode sharing only the table, as two Lambda invocations: one live
    // conversation per caller, counted across both.
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    table(&config, "interrupts").await;
    let instance = || {
        let settings = GatewaySettings {
            interrupts: Interrupts::Shared { store: Arc::new(DynamoStore::new(&config, "interrupts")), poll: Duration::from_millis(250) },
            conversation_secret: one_deployment(),
            auth: Some(Arc::new(TokenAuth::new(vec![("k1".into(), KEY.to_vec())], "earshot").unwrap())),
            max_conversations_per_owner: Some(1),
            metrics_namespace: None,
            ..Default::default()
        };
        Gateway::new(vec![Arc::new(SyntheticBackend::new(SyntheticConfig::default()))], Arc::new(agent(200.0)), settings)
    };
    let (one, other) = (serve(instance()).await.url, serve(instance()).await.url);
    let token = as_caller;
    let long = |id: &str| SpeakBody {
        text: Some("This answer goes on for a good while, sentence after sentence. ".repeat(4)),
        conversation_id: Some(id.into()),
        ..Default::default()
    };
    let speaking = tokio::spawn({
        let (one, body, alice) = (one.clone(), long("alice:1"), token("alice"));
        async move { speak(&one, &body, &alice).await }
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    match speak(&other, &long("alice:2"), &token("alice")).await {
        Err(ClientError::Refused { status, code, .. }) => assert_eq!((status, code.as_str()), (429, "too_many_conversations")),
        other => panic!("the caller's second conversation on another instance was not refused: {:?}", other.map(|r| r.status)),
    }
    let bob = speak(&other, &SpeakBody { text: Some("Hello there.".into()), conversation_id: Some("bob:1".into()), ..Default::default() }, &token("bob"))
        .await
        .unwrap();
    assert!(bob.error.is_none(), "another caller is served: {:?}", bob.error);
    earshot_client::interrupt_as(&other, "alice:1", token("alice").bearer.as_deref()).await.expect("interrupted through the table");
    assert_eq!(speaking.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));
    // The place is given back by a task after the stream ends: retried briefly.
    let mut served = None;
    for _ in 0..40 {
        match speak(&other, &SpeakBody { text: Some("Hi.".into()), conversation_id: Some("alice:3".into()), ..Default::default() }, &token("alice")).await {
            Err(ClientError::Refused { status: 429, .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
            r => {
                served = Some(r.expect("served"));
                break;
            }
        }
    }
    assert!(served.is_some_and(|r| r.error.is_none()), "the caller is served again once its conversation ended");
}

/// A gateway in token mode whose callers may speak 100 characters an hour, with a quick synthetic voice.
fn budgeted(interrupts: Interrupts) -> Gateway {
    let settings = GatewaySettings {
        interrupts,
        conversation_secret: one_deployment(),
        auth: Some(Arc::new(TokenAuth::new(vec![("k1".into(), KEY.to_vec())], "earshot").unwrap())),
        max_chars_per_owner_hour: Some(100),
        metrics_namespace: None,
        ..Default::default()
    };
    let voice = SyntheticConfig { first_audio: Duration::from_millis(10), chars_per_second: 1_500.0, ..Default::default() };
    Gateway::new(vec![Arc::new(SyntheticBackend::new(voice))], Arc::new(agent(2_000.0)), settings)
}

/// One caller's hour on `one` and `other` (the same gateway, or two sharing the table): an answer within its
/// budget; one that reaches it mid-way, cut after its first sentence; then refused before any speech, while
/// another caller is served.
async fn a_budget_spent(one: &str, other: &str) {
    let text = |t: &str, id: &str| SpeakBody { text: Some(t.into()), conversation_id: Some(id.into()), ..Default::default() };
    // 28 characters of 100.
    let first = speak(one, &text("One two three. Four five six.", "alice:1"), &as_caller("alice")).await.expect("spoken");
    assert!(first.error.is_none(), "{:?}", first.error);
    // 28 more fit; the next 61 do not: the answer ends after its first sentence's audio.
    let long = "Seven eight nine ten eleven. This sentence is far too long for what is left of the hour.";
    let cut = speak(other, &text(long, "alice:2"), &as_caller("alice")).await.expect("started");
    let error = cut.error.clone().expect("ended by the budget");
    assert_eq!(error.code, "character_budget_spent", "{error:?}");
    let ended: Vec<u32> = cut.events.iter().filter_map(|e| if let ServerEvent::SentenceEnd(end) = e { Some(end.index) } else { None }).collect();
    assert_eq!(ended, vec![0], "the first sentence was spoken whole, the second not at all");
    assert!(!cut.events.iter().any(|e| matches!(e, ServerEvent::Audio(a) if a.index == 1)), "no audio of the sentence that did not fit");
    // Spent: refused before anything is spoken, on either instance, with when to come back.
    for url in [one, other] {
        match speak(url, &text("Hi.", "alice:3"), &as_caller("alice")).await {
            Err(ClientError::Refused { status, code, message }) => {
                assert_eq!((status, code.as_str()), (429, "character_budget_spent"));
                assert!(message.contains("100 characters"), "{message}");
            }
            other => panic!("a caller with its budget spent was not refused: {:?}", other.map(|r| r.status)),
        }
    }
    let bob = speak(one, &text("Hello there.", "bob:1"), &as_caller("bob")).await.expect("another caller is served");
    assert!(bob.error.is_none(), "{:?}", bob.error);
}

#[tokio::test]
async fn a_callers_character_budget_cuts_an_answer_then_refuses_it_and_serves_others() {
    let url = serve(budgeted(Interrupts::Local)).await.url;
    a_budget_spent(&url, &url).await;
}

#[tokio::test]
async fn a_callers_character_budget_is_one_across_instances_sharing_the_table() {
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    table(&config, "interrupts").await;
    let shared = || Interrupts::Shared { store: Arc::new(DynamoStore::new(&config, "interrupts")), poll: Duration::from_millis(250) };
    let (one, other) = (serve(budgeted(shared())).await.url, serve(budgeted(shared())).await.url);
    a_budget_spent(&one, &other).await;
    // The store holds it as a rolling hour: what the first answer reserved and did not speak was given back.
    let store = DynamoStore::new(&config, "interrupts");
    let owner_key = earshot_gateway::owner::Owner::subject("carol").budget_key();
    let reserved = store.reserve_chars(&owner_key, 60, 30, 1, 100).await.unwrap();
    assert_eq!(reserved.granted, 30);
    store.refund_chars(&owner_key, &[(reserved.minute, 10)]).await.unwrap();
    assert_eq!(store.reserve_chars(&owner_key, 60, 100, 1, 100).await.unwrap().granted, 80, "20 spent, 80 left");
    // A window of a minute (requests per minute) through the same table.
    let requests = earshot_gateway::owner::Owner::subject("carol").limit_key("requests");
    for _ in 0..2 {
        assert_eq!(store.reserve_chars(&requests, 1, 1, 1, 2).await.unwrap().granted, 1);
    }
    let refused = store.reserve_chars(&requests, 1, 1, 1, 2).await.unwrap();
    assert!(refused.granted == 0 && (1..=60).contains(&refused.retry_after_s), "{refused:?}");
}

#[tokio::test]
async fn a_store_that_fails_is_told_in_earshots_words_not_dynamodbs() {
    // The store's own text names the table, the endpoint and the account: the client gets a sentence
    // and a request id, the log gets the rest.
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    let settings = GatewaySettings {
        interrupts: Interrupts::Shared { store: Arc::new(DynamoStore::at(&config, "interrupts", "http://127.0.0.1:9")), poll: Duration::from_millis(250) },
        auth: Some(Arc::new(TokenAuth::new(vec![("k1".into(), KEY.to_vec())], "earshot").unwrap())),
        metrics_namespace: None,
        ..Default::default()
    };
    let url = serve(Gateway::new(vec![Arc::new(SyntheticBackend::new(SyntheticConfig::default()))], Arc::new(agent(200.0)), settings)).await.url;
    let claims =
        Claims { aud: "earshot".into(), exp: now() + 300, sub: Some("alice".into()), conversations: Some(vec!["alice:*".into()]), ..Default::default() };
    let bearer = mint("k1", KEY, &claims).unwrap();
    let told = |e: ClientError| match e {
        ClientError::Refused { status, code, message } => (status, code, message),
        other => panic!("{other}"),
    };
    let (status, code, message) = told(earshot_client::interrupt_as(&url, "alice:1", Some(&bearer)).await.unwrap_err());
    assert_eq!((status, code.as_str()), (502, "interrupt_store_unreachable"));
    let (_, _, speak_message) = told(
        speak(
            &url,
            &SpeakBody { text: Some("Hi.".into()), conversation_id: Some("alice:1".into()), ..Default::default() },
            &CallOptions { bearer: Some(bearer.clone()), ..Default::default() },
        )
        .await
        .unwrap_err(),
    );
    for said in [&message, &speak_message] {
        assert!(said.contains("request id"), "{said}");
        assert!(!said.contains("DynamoDB") && !said.contains("127.0.0.1") && !said.contains("dispatch"), "the store's own text reached the client: {said}");
    }
}

#[tokio::test]
async fn an_interrupt_taken_by_another_instance_stops_the_speaking_one() {
    let moto = Moto::start().await;
    let config = sdk(&moto).await;
    table(&config, "interrupts").await;
    let kokoro = Kokoro::shared();
    let poll = Duration::from_millis(250);
    let shared = || Interrupts::Shared { store: Arc::new(DynamoStore::new(&config, "interrupts")), poll };

    // The speaking instance: the real container. The other instance shares only the table.
    let speaking = Gateway::new(
        vec![kokoro_backend(kokoro).await],
        Arc::new(agent(200.0)),
        GatewaySettings { interrupts: shared(), metrics_namespace: None, conversation_secret: one_deployment(), ..Default::default() },
    );
    let speaking = serve(speaking).await.url;
    let other = Gateway::new(
        vec![kokoro_backend(kokoro).await],
        Arc::new(agent(200.0)),
        GatewaySettings { interrupts: shared(), metrics_namespace: None, conversation_secret: one_deployment(), ..Default::default() },
    );
    let other = serve(other).await.url;

    let body = SpeakBody {
        text: Some("This answer goes on for a long while, sentence after sentence. ".repeat(20)),
        conversation_id: Some("lambda-7".into()),
        ..Default::default()
    };
    let stream = tokio::spawn({
        let speaking = speaking.clone();
        async move { speak(&speaking, &body, &CallOptions::default()).await }
    });
    // Interrupt once the container is at work.
    for _ in 0..600 {
        if kokoro.stats().await["active_requests"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = Instant::now();
    // Saying how much was played: it travels through the table to the instance that speaks.
    interrupt_heard(&other, "lambda-7", None, Some(1000.0)).await.expect("202 from the instance that does not speak");
    let r = tokio::time::timeout(Duration::from_secs(10), stream).await.expect("the stream ends").unwrap().unwrap();
    let stream_ended = sent.elapsed();
    kokoro.wait_idle(Duration::from_secs(5)).await;
    let container_idle = sent.elapsed();
    eprintln!("interrupt through the store: stream ended after {stream_ended:?}, container idle after {container_idle:?} (poll {poll:?})");
    let error = r.error.expect("the stream ends with an error");
    assert_eq!((error.code.as_str(), error.heard_ms), ("interrupted", Some(1000)));
    let heard = error.heard.expect("what was heard of it");
    assert!("This answer goes on for a long while, sentence after sentence. ".repeat(20).starts_with(&heard), "{heard:?}");
    // Within one poll, one read and the container's cancel, with room for a loaded machine.
    assert!(stream_ended < poll + Duration::from_millis(1500), "the stream ended {stream_ended:?} after the interrupt");

    // Over: the record is cleared, and a second interrupt finds nothing on either instance.
    let mut refused = None;
    for _ in 0..50 {
        match interrupt(&other, "lambda-7").await {
            Err(ClientError::Refused { status, .. }) => {
                refused = Some(status);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert_eq!(refused, Some(404));
}
