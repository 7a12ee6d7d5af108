//! moto's server, an implementation of AWS APIs this project did not write, as the judge of the real
//! SDK clients' requests (DynamoDB for interrupts, Polly and SageMaker for health). `make test-e2e`
//! installs it (`tests/moto/.venv`) and names its server in `EARSHOT_MOTO_SERVER`; fixtures that the
//! Rust build has no SDK for are made with boto3 from the same environment.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// moto's server: `EARSHOT_MOTO_SERVER`, or the one `make moto-venv` installs.
pub fn server_path() -> PathBuf {
    std::env::var_os("EARSHOT_MOTO_SERVER").map_or_else(|| crate::package_dir().join("moto/.venv/bin/moto_server"), PathBuf::from)
}

/// The Python of moto's environment, which also holds the outside judges (boto3, botocore, openai) that
/// `tests/judges/` scripts use.
pub fn judges_python() -> PathBuf {
    server_path().with_file_name("python")
}

/// moto's server on a free port, stopped when dropped.
pub struct Moto {
    child: Child,
    pub url: String,
}

impl Moto {
    pub async fn start() -> Moto {
        let server = server_path();
        assert!(server.exists(), "{} is missing: `make test-e2e` (or `make moto-venv`) installs it", server.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("setpriv")
            .arg("--pdeathsig")
            .arg("KILL")
            .arg(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto's server starts");
        // Owned at once, so that it is stopped however this ends.
        let moto = Moto { child, url: format!("http://127.0.0.1:{port}") };
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return moto;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("moto's server did not listen on {port}");
    }

    /// The SDK configuration of a client pointed at this server (region us-east-1, test credentials).
    pub async fn sdk(&self) -> earshot_aws::SdkConfig {
        earshot_aws::AwsSettings {
            region: Some("us-east-1".into()),
            endpoint_url: Some(self.url.clone()),
            trust_pem: None,
            static_credentials: Some(("AKIDTEST".into(), "secret".into())),
        }
        .sdk_config()
        .await
    }

    /// Runs a Python snippet with boto3 clients pointed at this server: `client(name)` makes one.
    pub fn boto3(&self, script: &str) {
        let python = judges_python();
        let prelude = format!(
            "import boto3\ndef client(name):\n    return boto3.client(name, endpoint_url='{}', region_name='us-east-1', aws_access_key_id='AKIDTEST', aws_secret_access_key='secret')\n",
            self.url
        );
        let out = Command::new(&python).arg("-c").arg(format!("{prelude}{script}")).output().expect("python from moto's environment");
        assert!(out.status.success(), "boto3 fixture failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
