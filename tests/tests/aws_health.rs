//! `/healthz` on AWS asks AWS: Polly's `DescribeVoices` and SageMaker's `DescribeEndpoint`, through the
//! real SDK client and the SigV4 signer, answered by moto's server (an implementation of both APIs this
//! project did not write). Healthy when AWS says so; 503 naming the backend and why when it does not.

use std::sync::Arc;
use std::time::Duration;

use earshot_aws::{PollyBackend, PollySettings, SageMakerBackend, SageMakerSettings};
use earshot_core::speech::SpeechBackend;
use earshot_e2e::moto::Moto;
use earshot_e2e::{agent, serve};
use earshot_gateway::{Gateway, GatewaySettings};

fn sagemaker(config: &earshot_aws::SdkConfig, endpoint: &str) -> Arc<dyn SpeechBackend> {
    let settings = SageMakerSettings {
        endpoint_name: endpoint.into(),
        target_variant: None,
        voices: vec!["af_heart".into()],
        default_voice: "af_heart".into(),
        language_voices: vec![],
        speed: 1.0,
    };
    Arc::new(SageMakerBackend::new(config, settings))
}

/// An endpoint as the CDK app makes one: model, endpoint configuration, endpoint (on a g4dn: moto's
/// instance list predates g5).
fn create_endpoint(moto: &Moto, name: &str) {
    moto.boto3(&format!(
        "sm = client('sagemaker')\n\
         sm.create_model(ModelName='{name}-model', ExecutionRoleArn='arn:aws:iam::123456789012:role/x', PrimaryContainer={{'Image': '123456789012.dkr.ecr.us-east-1.amazonaws.com/kokoro:1'}})\n\
         sm.create_endpoint_config(EndpointConfigName='{name}-config', ProductionVariants=[{{'VariantName': 'AllTraffic', 'ModelName': '{name}-model', 'InitialInstanceCount': 1, 'InstanceType': 'ml.g4dn.xlarge'}}])\n\
         sm.create_endpoint(EndpointName='{name}', EndpointConfigName='{name}-config')\n"
    ));
}

async fn healthz(url: &str) -> (u16, serde_json::Value) {
    let r = reqwest::get(format!("{url}/healthz")).await.expect("healthz answers");
    (r.status().as_u16(), r.json().await.expect("a JSON report"))
}

#[tokio::test]
async fn healthz_is_ok_when_aws_says_the_endpoint_is_in_service_and_polly_answers() {
    let moto = Moto::start().await;
    let config = moto.sdk().await;
    create_endpoint(&moto, "earshot-kokoro");
    let polly = Arc::new(PollyBackend::new(&config, PollySettings::default()).unwrap());
    let gw = Gateway::new(
        vec![sagemaker(&config, "earshot-kokoro"), polly],
        Arc::new(agent(100.0)),
        GatewaySettings { metrics_namespace: None, ..Default::default() },
    );
    let served = serve(gw).await;
    let (status, report) = healthz(&served.url).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["backends"]["kokoro"]["ok"], true);
    assert_eq!(report["backends"]["polly"]["ok"], true);
}

#[tokio::test]
async fn healthz_fails_for_an_endpoint_sagemaker_does_not_know_and_says_so() {
    let moto = Moto::start().await;
    let config = moto.sdk().await;
    let gw =
        Gateway::new(vec![sagemaker(&config, "no-such-endpoint")], Arc::new(agent(100.0)), GatewaySettings { metrics_namespace: None, ..Default::default() });
    let served = serve(gw).await;
    let (status, report) = healthz(&served.url).await;
    assert_eq!(status, 503, "{report}");
    let kokoro = &report["backends"]["kokoro"];
    assert_eq!(kokoro["ok"], false);
    assert_eq!(kokoro["code"], "backend_unhealthy");
    let message = kokoro["error"].as_str().unwrap();
    assert!(message.contains("no-such-endpoint") && message.contains("ValidationException"), "{message}");
}

#[tokio::test]
async fn a_deleted_endpoint_is_seen_once_the_cached_answer_expires() {
    let moto = Moto::start().await;
    let config = moto.sdk().await;
    create_endpoint(&moto, "earshot-kokoro");
    let backend = sagemaker(&config, "earshot-kokoro");
    backend.health().await.expect("in service");
    // The endpoint goes away; within the cache's lifetime the gateway keeps its last answer rather than
    // asking AWS on every poll.
    moto.boto3("client('sagemaker').delete_endpoint(EndpointName='earshot-kokoro')");
    backend.health().await.expect("the cached answer");
    let fresh = sagemaker(&config, "earshot-kokoro");
    let err = fresh.health().await.expect_err("a fresh probe sees it gone");
    assert_eq!(err.code, "backend_unhealthy");
}

#[tokio::test]
async fn an_unreachable_aws_makes_both_backends_unhealthy_within_the_probe_timeout() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port(); // closed again: nothing listens
    let config = earshot_aws::AwsSettings {
        region: Some("us-east-1".into()),
        endpoint_url: Some(format!("http://127.0.0.1:{port}")),
        trust_pem: None,
        static_credentials: Some(("AKIDTEST".into(), "secret".into())),
    }
    .sdk_config()
    .await;
    let polly: Arc<dyn SpeechBackend> = Arc::new(PollyBackend::new(&config, PollySettings::default()).unwrap());
    for backend in [sagemaker(&config, "earshot-kokoro"), polly] {
        let started = std::time::Instant::now();
        let err = backend.health().await.expect_err("nothing answers");
        assert_eq!(err.code, "backend_unhealthy", "{}: {}", backend.name(), err.message);
        // The probe's own limit, and a second for a loaded machine to get back to it.
        let within = earshot_aws::health::PROBE_TIMEOUT + Duration::from_secs(1);
        assert!(started.elapsed() < within, "{}: {:?}", backend.name(), started.elapsed());
    }
}

#[tokio::test]
async fn polly_s_voices_are_read_from_moto_s_describe_voices_through_the_real_sdk() {
    // moto's answer is its own list of Polly's voices, in the shape of the API: the catalogue must read it
    // (ids, languages), not only the stand-in's.
    let moto = Moto::start().await;
    let config = moto.sdk().await;
    let polly = earshot_aws::PollyBackend::new(&config, earshot_aws::PollySettings::default()).unwrap();
    assert_eq!(polly.catalogue().source(), earshot_aws::polly_voices::Source::BuiltIn);
    polly.describe_voices().await.expect("moto answers DescribeVoices");
    assert_eq!(polly.catalogue().source(), earshot_aws::polly_voices::Source::Described);
    let voices = polly.catalogue().voices();
    assert!(voices.len() > 9, "moto lists more voices than the built-in nine: {}", voices.len());
    let joanna = voices.iter().find(|v| v.id == "joanna").expect("moto lists Joanna");
    assert_eq!((joanna.polly_id.as_str(), joanna.language.as_str()), ("Joanna", "en-US"));
    assert!(voices.iter().all(|v| !v.language.is_empty() && v.id == v.polly_id.to_lowercase()));
}
