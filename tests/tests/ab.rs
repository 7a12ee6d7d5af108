//! The A/B experiment as a new user runs it: `make run-aws`'s gateway (Kokoro on the SageMaker stand-in
//! and Polly's, 50/50, the real SDK clients), a few dozen answers, then `earshot ab` on the gateway's
//! log, and the same lines read back from CloudWatch Logs (moto's server) through the real SDK.

use std::process::Command;

use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_e2e::moto::Moto;
use earshot_e2e::run_aws::RunAws;
use earshot_e2e::{earshot_bin, EarshotProcess};
use serde_json::{json, Value};

const ANSWERS: usize = 36;
const EXPERIMENT: &str = "e2e-voices";

/// `earshot ab` with `args`, its JSON report.
fn ab(args: &[&str], env: &[(&str, &str)]) -> Value {
    let out = Command::new(earshot_bin()).arg("ab").args(args).arg("--json").envs(env.iter().copied()).output().expect("earshot ab runs");
    assert!(out.status.success(), "earshot ab failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// What does not depend on the window the lines were read for (the endpoint's share does).
fn figures(report: &Value) -> Vec<(String, u64, Value, Value)> {
    report["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["arm"].as_str().unwrap().to_string(), a["answers"].as_u64().unwrap(), a["ttfa_ms"].clone(), a["served_by"].clone()))
        .collect()
}

#[tokio::test]
async fn earshot_ab_reports_both_arms_of_a_run_aws_session_from_its_log_and_from_cloudwatch_logs() {
    // The flags of `make run-aws` (scripts/run-local.sh), with an experiment named.
    let stack = RunAws::start("ab", &["--ab-experiment", EXPERIMENT]).await;
    let earshot = &stack.earshot;

    let mut arms = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..ANSWERS {
        let body = SpeakBody { text: Some("Sure. Your order ships today.".into()), conversation_id: Some(format!("ab:{i}")), ..Default::default() };
        let r = speak(&earshot.url, &body, &CallOptions::default()).await.expect("the answer is spoken");
        let session = r.session.as_ref().expect("a session");
        assert_eq!(session.experiment.as_deref(), Some(EXPERIMENT), "the session names the experiment");
        *arms.entry(session.arm.clone().expect("an arm")).or_default() += 1;
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    assert_eq!(arms.len(), 2, "both arms were assigned: {arms:?}");
    earshot.metric_lines_at_least(ANSWERS).await;
    let log = earshot.stdout.to_str().unwrap().to_string();

    // The local log, as `make run-aws` leaves it, with the picture.
    let plot = std::env::temp_dir().join(format!("earshot-e2e-ab-{}.svg", std::process::id()));
    let local = ab(&["--log", &log, "--plot", plot.to_str().unwrap(), "--no-lambda"], &[]);
    assert_eq!(local["experiment"], EXPERIMENT);
    let reported: Vec<(String, u64)> = figures(&local).into_iter().map(|(arm, n, _, _)| (arm, n)).collect();
    assert_eq!(reported, arms.iter().map(|(a, n)| (a.clone(), *n as u64)).collect::<Vec<_>>(), "every answer in the arm its session named");
    for arm in local["arms"].as_array().unwrap() {
        let name = arm["arm"].as_str().unwrap();
        let p50 = arm["ttfa_ms"]["p50"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 < 10_000.0, "{name}: first audio p50 {p50} ms");
        assert!(arm["ttfa_ms"]["p90"].as_f64().unwrap() >= p50);
        assert_eq!(arm["failures"], 0, "{arm}");
        let parts = &arm["cost_parts_per_1000"];
        assert_eq!(parts["lambda"], 0.0, "--no-lambda: the gateway's time bills nothing");
        // Polly bills the characters it spoke; the endpoint's hours go to the answers Kokoro spoke.
        let (polly, endpoint) = (parts["polly"].as_f64().unwrap(), parts["endpoint"].as_f64().unwrap());
        match name {
            "polly" => assert!(polly > 0.0 && endpoint == 0.0, "{parts}"),
            _ => assert!(polly == 0.0 && endpoint > 0.0, "{parts}"),
        }
    }
    assert!(local["verdict"].as_str().unwrap().starts_with("Not enough data yet"), "{}", local["verdict"]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 2, "one curve per arm");

    // The same lines in a log group, as the Lambda's stdout lands there, among Lambda's own lines.
    let moto = Moto::start().await;
    let lines_file = std::env::temp_dir().join(format!("earshot-e2e-ab-{}.lines", std::process::id()));
    std::fs::write(&lines_file, std::fs::read_to_string(&earshot.stdout).unwrap()).unwrap();
    moto.boto3(&format!(
        r#"
import json, time
logs = client('logs')
logs.create_log_group(logGroupName='/aws/lambda/earshot-gateway')
logs.create_log_stream(logGroupName='/aws/lambda/earshot-gateway', logStreamName='stream')
events = [{{'timestamp': int(time.time() * 1000) - 1000, 'message': 'START RequestId: 1 Version: $LATEST'}}]
for line in open('{}'):
    line = line.strip()
    if line.startswith('{{') and '"_aws"' in line:
        events.append({{'timestamp': json.loads(line)['_aws']['Timestamp'], 'message': line}})
events.sort(key=lambda e: e['timestamp'])
logs.put_log_events(logGroupName='/aws/lambda/earshot-gateway', logStreamName='stream', logEvents=events)
"#,
        lines_file.display()
    ));
    let env = [("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "secret")];
    let cloud = ab(&["--log-group", "/aws/lambda/earshot-gateway", "--region", "us-east-1", "--endpoint-url", &moto.url, "--since", "1h", "--no-lambda"], &env);
    assert_eq!(figures(&cloud), figures(&local), "the same answers, read through the SDK");
    // After make deploy, `earshot ab` alone finds the log group and its Region in the outputs cdk wrote.
    let checkout = std::env::temp_dir().join(format!("earshot-e2e-ab-deployed-{}", std::process::id()));
    std::fs::create_dir_all(checkout.join("infra/cdk/cdk.out")).unwrap();
    let outputs = json!({"EarshotGateway": {"FunctionUrl": "https://abcdefgh.lambda-url.us-east-1.on.aws/", "AuthType": "AWS_IAM", "LogGroup": "/aws/lambda/earshot-gateway"}});
    std::fs::write(checkout.join("infra/cdk/cdk.out/outputs.json"), outputs.to_string()).unwrap();
    let out = Command::new(earshot_bin())
        .args(["ab", "--endpoint-url", &moto.url, "--since", "1h", "--no-lambda", "--json"])
        .current_dir(&checkout)
        .env_remove("AWS_REGION")
        .env_remove("AWS_DEFAULT_REGION")
        .envs(env)
        .output()
        .unwrap();
    assert!(out.status.success(), "earshot ab after a deploy: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the log group /aws/lambda/earshot-gateway (us-east-1) from infra/cdk/cdk.out/outputs.json"));
    let deployed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(figures(&deployed), figures(&local), "the deployment's answers, found from its outputs");
    let _ = std::fs::remove_dir_all(&checkout);
    // A log group that is not there is named, with where to look.
    let out = Command::new(earshot_bin())
        .args(["ab", "--log-group", "/aws/lambda/nothing", "--region", "us-east-1", "--endpoint-url", &moto.url])
        .envs(env)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/aws/lambda/nothing"), "{}", String::from_utf8_lossy(&out.stderr));
    for f in [plot, lines_file] {
        let _ = std::fs::remove_file(f);
    }
}

/// `earshot plan --observed` as a new user runs it on a gateway's log: the knee a deployment showed, read
/// from its answers. The voice is the synthetic one serving two sessions at once, so the knee is known;
/// the answers come as traffic comes, one, two and three at a time.
#[tokio::test]
async fn earshot_plan_reads_a_voice_s_known_capacity_from_the_gateway_s_log() {
    // It sends 300 ms ahead, as a real voice does: a late timer on a loaded machine is not a stall.
    let gateway = EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--synthetic-sessions",
        "2",
        "--synthetic-latency-ms",
        "400",
        "--synthetic-lead-ms",
        "300",
        "--cache",
        "off",
    ])
    .await;
    gateway.healthy().await;
    // About 1.2 s of audio: the third of three waits about that long for a session, far past twice the
    // 400 ms.
    let body = SpeakBody { text: Some("One moment please.".into()), ..Default::default() };
    let mut answers = 0;
    for (at_once, rounds) in [(1, 6), (2, 3), (3, 2)] {
        for _ in 0..rounds {
            let calls: Vec<_> = (0..at_once)
                .map(|_| {
                    let (url, body) = (gateway.url.clone(), body.clone());
                    tokio::spawn(async move { speak(&url, &body, &CallOptions::default()).await })
                })
                .collect();
            for call in calls {
                let r = call.await.unwrap().expect("the answer is spoken");
                assert!(r.error.is_none(), "{:?}", r.error);
                answers += 1;
            }
        }
    }
    gateway.metric_lines_at_least(answers).await;
    let log = gateway.stdout.to_str().unwrap().to_string();
    let plan = |extra: &[&str]| {
        Command::new(earshot_bin())
            .args(["plan", "--observed", "gpu", "--observed-backend", "synthetic", "--log", &log, "--volumes", "100", "--json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = plan(&[]);
    assert!(out.status.success(), "earshot plan --observed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let capacity = v["capacity"].as_str().unwrap();
    assert!(capacity.starts_with("2 conversations at once (observed in 18 answers of `synthetic`"), "{capacity}");
    assert!(capacity.contains("1 at once: 6 answers, holds; 2 at once: 6 answers, holds; 3 at once: 6 answers, does not hold"), "{capacity}");
    assert_eq!(v["voices"][0]["conversations_per_instance"], 2);
    // Said to be two instances, the same answers are shared over them: two at once is one each, three at
    // once two on one of them, and that is where the waits were seen.
    let spread = plan(&["--instances", "2"]);
    assert!(spread.status.success(), "{}", String::from_utf8_lossy(&spread.stderr));
    let spread: Value = serde_json::from_slice(&spread.stdout).unwrap();
    let spread = spread["capacity"].as_str().unwrap();
    assert!(spread.starts_with("1 conversation at once"), "{spread}");
    assert!(spread.contains("1 at once: 12 answers, holds; 2 at once: 6 answers, does not hold"), "{spread}");
    // A backend the lines never name shows nothing, and says so.
    let out = Command::new(earshot_bin()).args(["plan", "--observed", "gpu", "--observed-backend", "kokoro", "--log", &log]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no capacity for `kokoro`: 0 answers"), "{}", String::from_utf8_lossy(&out.stderr));
}
