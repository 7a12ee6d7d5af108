//! `make run-aws`'s gateway in a test: the AWS stand-ins voiced by the shared Kokoro container, and
//! `earshot serve` with the flags `scripts/run-local.sh` gives it (Kokoro through the SageMaker stand-in
//! and Polly's, 50/50 with failover, the real SDK clients), plus the test's own. Its backend silence
//! limit (Polly's too) is [`crate::untested_silence`] unless the test names one.

use earshot_standins::{StandIns, StandInsConfig};

use crate::{EarshotProcess, Kokoro};

/// The stand-ins and the gateway in front of them.
pub struct RunAws {
    pub standins: StandIns,
    pub earshot: EarshotProcess,
    /// The stand-ins' certificate, for the gateway to trust; removed with the stack.
    pem: std::path::PathBuf,
}

impl Drop for RunAws {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pem);
    }
}

impl RunAws {
    /// Starts both and waits until the gateway is healthy; `extra` flags follow `make run-aws`'s.
    pub async fn start(name: &str, extra: &[&str]) -> RunAws {
        let kokoro = Kokoro::shared();
        kokoro.ready().await;
        let standins = earshot_standins::start(StandInsConfig { kokoro_url: kokoro.url.clone(), ..Default::default() }, 0).await.expect("the stand-ins start");
        let pem = std::env::temp_dir().join(format!("earshot-e2e-{name}-{}.pem", std::process::id()));
        std::fs::write(&pem, &standins.cert_pem).expect("the stand-ins' certificate is written");
        let credentials = [("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_REGION", "us-east-1")];
        let pem_arg = pem.to_str().expect("a UTF-8 path").to_string();
        let mut args = vec![
            "--backends",
            "kokoro,polly",
            "--sagemaker-endpoint",
            "earshot-kokoro",
            "--kokoro-voice",
            "jf_alpha",
            "--kokoro-language-voices",
            "fr=jf_nezumi,zh=jf_tebukuro",
            "--agent",
            "bedrock",
            "--aws-endpoint",
            &standins.url,
            "--aws-trust-pem",
            &pem_arg,
            "--ab-weights",
            "kokoro=50,polly=50",
            "--failover",
        ];
        args.extend_from_slice(extra);
        let earshot = EarshotProcess::start_with_env(&args, &credentials).await;
        earshot.healthy().await;
        RunAws { standins, earshot, pem }
    }
}

/// An SDK configuration that reaches `standins` (their endpoint, their certificate, test credentials).
pub async fn sdk_for(standins: &StandIns) -> earshot_aws::SdkConfig {
    earshot_aws::AwsSettings {
        region: Some("us-east-1".into()),
        endpoint_url: Some(standins.url.clone()),
        trust_pem: Some(standins.cert_pem.clone().into_bytes()),
        static_credentials: Some(("AKIDTEST".into(), "secret".into())),
    }
    .sdk_config()
    .await
}
