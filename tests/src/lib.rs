//! The harness of the cross-component tests: the real Kokoro container as a process, and the gateway
//! served over real HTTP on a free port, in the test's own runtime.
//!
//! The container runs from `infra/kokoro/.venv` (`make -C infra/kokoro venv` installs it; `make test`
//! does so first). It is started through a shell that kills it when its standard input closes, so
//! that it never outlives the test process, whichever way that process ends.

use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{KokoroBackend, KokoroConfig};
use earshot_core::speech::SpeechBackend;
use earshot_gateway::Gateway;

/// A Kokoro container process.
pub struct Kokoro {
    pub url: String,
    child: Mutex<Option<(Child, ChildStdin)>>,
}

fn kokoro_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/kokoro")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

impl Kokoro {
    /// Starts a container of its own (for tests that stop it).
    pub fn start() -> Kokoro {
        let dir = kokoro_dir();
        let python = dir.join(".venv/bin/python");
        assert!(python.exists(), "the Kokoro venv is missing: run `make -C infra/kokoro venv` (make test does)");
        let port = free_port();
        let log = std::env::temp_dir().join(format!("earshot-e2e-kokoro-{port}.log"));
        // The shell reads its standard input until it closes (this process ended), then stops the server.
        let script = format!("{} -m kokoro_server > {} 2>&1 & pid=$!; cat > /dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null", python.display(), log.display());
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&dir)
            .env("KOKORO_ENGINE", "onnx")
            .env("KOKORO_PORT", port.to_string())
            .env("KOKORO_LOG_LEVEL", "warning")
            .stdin(Stdio::piped())
            .spawn()
            .expect("the Kokoro container starts");
        let stdin = child.stdin.take().expect("stdin");
        Kokoro { url: format!("http://127.0.0.1:{port}"), child: Mutex::new(Some((child, stdin))) }
    }

    /// The container shared by the tests of one test binary.
    pub fn shared() -> &'static Kokoro {
        static SHARED: OnceLock<Kokoro> = OnceLock::new();
        SHARED.get_or_init(Kokoro::start)
    }

    /// Waits until `/ping` answers 200.
    pub async fn ready(&self) {
        let client = reqwest::Client::new();
        for _ in 0..600 {
            if let Ok(r) = client.get(format!("{}/ping", self.url)).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("the Kokoro container at {} did not become ready", self.url);
    }

    /// Stops the container and waits for it to end.
    pub fn stop(&self) {
        if let Some((mut child, stdin)) = self.child.lock().expect("lock").take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// The container's counters of its requests (`GET /stats`).
    pub async fn stats(&self) -> serde_json::Value {
        reqwest::get(format!("{}/stats", self.url)).await.expect("stats").json().await.expect("stats JSON")
    }
}

impl Drop for Kokoro {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A gateway served on a free port.
pub struct Served {
    pub url: String,
}

/// Serves a gateway built from `gateway` on a free port, in the current runtime.
pub async fn serve(gateway: Gateway) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let router = earshot_gateway::router(Arc::new(gateway));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Served { url }
}

/// A Kokoro backend on a container.
pub async fn kokoro_backend(kokoro: &Kokoro) -> Arc<dyn SpeechBackend> {
    kokoro.ready().await;
    let backend = KokoroBackend::connect(KokoroConfig { url: kokoro.url.clone(), ..Default::default() }, Duration::from_secs(60))
        .await
        .expect("the Kokoro backend connects");
    Arc::new(backend)
}

/// A scripted agent at a given pace, with no delay before its first token.
pub fn agent(tokens_per_second: f64) -> ScriptedAgent {
    ScriptedAgent::new(ScriptedConfig { tokens_per_second, first_token_delay: Duration::ZERO })
}
