//! A gateway anyone may call (auth `public`: a function URL with auth NONE, or `earshot serve --auth
//! public`) keeps strangers apart by their network address: each address is an owner, with a character
//! budget and conversation ids of its own, so one stranger cannot spend another's budget, interrupt its
//! answer or continue its agent session by guessing its id; and `/healthz` tells a stranger whether each
//! backend is healthy, never the upstream's words; the demo page it serves runs only its own scripts and
//! sends no referrer. Callers come from several loopback addresses
//! (127.0.0.2, 127.0.0.3, …: all loopback on Linux) to the real `earshot serve`.

use std::net::IpAddr;
use std::time::Duration;

use earshot_e2e::EarshotProcess;

/// An HTTP client whose connections come from `address`.
fn from(address: &str) -> reqwest::Client {
    reqwest::Client::builder().local_address(address.parse::<IpAddr>().ok()).build().expect("a client")
}

/// Speaks `text` under `id` from `client`: the status and the whole body.
async fn speak(client: &reqwest::Client, url: &str, text: &str, id: &str) -> (u16, String) {
    let body = serde_json::json!({ "text": text, "conversation_id": id, "format": "sse" });
    let response = client.post(format!("{url}/v1/speak")).json(&body).send().await.expect("a response");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

async fn interrupt(client: &reqwest::Client, url: &str, id: &str) -> u16 {
    client.post(format!("{url}/v1/conversations/{id}/interrupt")).send().await.expect("a response").status().as_u16()
}

#[tokio::test]
async fn each_address_has_its_own_budget() {
    // 40 characters an hour: one 31-character sentence, and less than a block (10) is left.
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--auth", "public", "--max-chars-per-owner-hour", "40"]).await;
    earshot.healthy().await;
    let sentence = "Hello there, how are you today?";
    let (one, two) = (from("127.0.0.2"), from("127.0.0.3"));
    let (status, body) = speak(&one, &earshot.url, sentence, "a").await;
    assert!(status == 200 && body.contains("event: done"), "{status}: {body}");
    let (status, body) = speak(&one, &earshot.url, sentence, "b").await;
    assert_eq!(status, 429, "127.0.0.2 spent its budget: {body}");
    assert!(body.contains("character_budget_spent"), "{body}");
    let (status, body) = speak(&two, &earshot.url, sentence, "a").await;
    assert!(status == 200 && body.contains("event: done"), "127.0.0.3's budget is its own: {status}: {body}");
}

#[tokio::test]
async fn many_addresses_together_run_into_the_deployment_s_ceiling() {
    // Each address may speak 1,000 characters an hour; all of them together 100. Two addresses, then
    // twenty more, each with budget of its own left: the ceiling refuses them all alike, 503 with
    // Retry-After, and a metric line counts each refusal.
    let earshot = EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--auth",
        "public",
        "--max-chars-per-owner-hour",
        "1000",
        "--ceiling-chars-per-hour",
        "100",
        "--ceiling-requests-per-hour",
        "1000",
    ])
    .await;
    earshot.healthy().await;
    let sentence = "Hello there, how are you today?";
    // A conversation reserves a quarter of the ceiling (25) at a time: three 31-character answers fit.
    let mut spoken = 0;
    let mut refused = Vec::new();
    for n in 2..24 {
        let client = from(&format!("127.0.1.{n}"));
        let response = client.post(format!("{}/v1/speak", earshot.url)).json(&serde_json::json!({"text": sentence, "format": "sse"})).send().await.unwrap();
        let (status, retry_after) = (response.status().as_u16(), response.headers().get("retry-after").is_some());
        let body = response.text().await.unwrap_or_default();
        match status {
            200 if body.contains("event: done") => spoken += 1,
            // A sentence past the ceiling mid-answer ends it with the ceiling's error.
            200 => assert!(body.contains("spend_ceiling"), "{body}"),
            503 => {
                assert!(body.contains("\"spend_ceiling\"") && retry_after, "{body}");
                refused.push(n);
            }
            other => panic!("127.0.1.{n}: {other} {body}"),
        }
    }
    assert!((2..=3).contains(&spoken), "the ceiling's 100 characters hold about three answers of 31: {spoken}");
    assert!(refused.len() >= 18, "every address after the ceiling is refused, whatever its own budget: {refused:?}");
    let lines = earshot.metric_lines_at_least(1).await;
    let reached = lines.iter().filter(|l| l["SpendCeilingReached"] == 1 && l["Limit"] == "characters").count();
    assert!(reached >= refused.len(), "a metric line for each refusal: {reached}");
}

#[tokio::test]
async fn a_ceiling_on_requests_holds_all_addresses_together() {
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--auth", "public", "--ceiling-requests-per-hour", "3"]).await;
    earshot.healthy().await;
    let mut statuses = Vec::new();
    for n in 2..7 {
        let (status, _) = speak(&from(&format!("127.0.2.{n}")), &earshot.url, "Hi.", "a").await;
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 200, 200, 503, 503], "three requests an hour for all addresses together");
}

#[tokio::test]
async fn a_trusted_proxy_names_its_callers_and_an_untrusted_peer_cannot() {
    // Each address may speak 40 characters an hour: one 31-character sentence. 127.0.3.1 is the proxy.
    let earshot =
        EarshotProcess::start(&["--backends", "synthetic", "--auth", "public", "--max-chars-per-owner-hour", "40", "--trusted-proxies", "127.0.3.1/32"]).await;
    earshot.healthy().await;
    let sentence = "Hello there, how are you today?";
    let via = |client: &reqwest::Client, forwarded_for: &str| {
        let body = serde_json::json!({ "text": sentence, "format": "sse" });
        client.post(format!("{}/v1/speak", earshot.url)).header("x-forwarded-for", forwarded_for).json(&body).send()
    };
    let proxy = from("127.0.3.1");
    // Two callers behind the proxy are two owners: each speaks its sentence; the first again is spent.
    for caller in ["198.51.100.1", "198.51.100.2"] {
        let r = via(&proxy, &format!("6.6.6.6, {caller}")).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{caller}: its own budget");
        assert!(r.text().await.unwrap().contains("event: done"));
    }
    assert_eq!(via(&proxy, "198.51.100.1").await.unwrap().status().as_u16(), 429, "198.51.100.1 spent its own budget");
    // A peer that is no trusted proxy is itself, whatever it writes: the header does not buy it a new budget.
    let stranger = from("127.0.3.2");
    let first = via(&stranger, "198.51.100.3").await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    assert!(first.text().await.unwrap().contains("event: done"), "spoken to the end, its characters charged");
    assert_eq!(via(&stranger, "198.51.100.4").await.unwrap().status().as_u16(), 429, "the header was ignored: the same owner");
}

#[tokio::test]
async fn a_stranger_cannot_interrupt_another_address_s_conversation_by_its_id() {
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--auth", "public"]).await;
    earshot.healthy().await;
    let (owner, stranger) = (from("127.0.0.4"), from("127.0.0.5"));
    let long = "This answer goes on for a while, so that there is time to try to stop it from elsewhere. And then it goes on some more.";
    let speaking = tokio::spawn({
        let (owner, url) = (owner.clone(), earshot.url.clone());
        async move { speak(&owner, &url, long, "support-1").await }
    });
    // The conversation is live once its first audio could have come; the synthetic voice needs 200 ms.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(interrupt(&stranger, &earshot.url, "support-1").await, 404, "the id is nothing of the stranger's");
    assert_eq!(interrupt(&owner, &earshot.url, "support-1").await, 202, "its own address stops it");
    let (status, body) = speaking.await.unwrap();
    assert!(status == 200 && body.contains("\"interrupted\""), "the answer ended interrupted: {body}");
}

#[tokio::test]
async fn a_stranger_learns_whether_a_backend_is_healthy_never_why() {
    // A Kokoro container that is not there: its health check fails with a message naming its address.
    let earshot = EarshotProcess::start(&["--backends", "synthetic,kokoro", "--kokoro-url", "http://127.0.0.1:9", "--auth", "public"]).await;
    let health = from("127.0.0.6").get(format!("{}/healthz", earshot.url)).send().await.expect("a response").text().await.unwrap();
    let report: serde_json::Value = serde_json::from_str(&health).expect("JSON");
    assert_eq!(report["backends"]["kokoro"]["ok"], false, "{report}");
    assert!(!health.contains("127.0.0.1:9") && report["backends"]["kokoro"].get("error").is_none(), "no upstream text: {health}");
}

#[tokio::test]
async fn the_demo_page_runs_only_its_own_scripts_and_sends_no_referrer() {
    let web = earshot_e2e::package_dir().join("../web");
    let web = web.to_str().expect("a path in UTF-8");
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--auth", "public", "--web-dir", web]).await;
    for path in ["/", "/app.js"] {
        let page = reqwest::get(format!("{}{path}", earshot.url)).await.expect("the page");
        assert_eq!(page.status(), 200, "{path}");
        let header = |name: &str| page.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        assert_eq!(header("content-security-policy"), earshot_gateway::router::PAGE_CONTENT_SECURITY_POLICY, "{path}");
        assert!(header("content-security-policy").contains("script-src 'self';"), "no inline script, no eval");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
    }
    // The page itself has nothing the policy refuses: no inline script or handler.
    let html = std::fs::read_to_string(format!("{web}/index.html")).unwrap();
    assert!(!html.contains("onsubmit=") && !html.contains("onclick=") && !html.contains("<script>"), "inline script in index.html");
}
