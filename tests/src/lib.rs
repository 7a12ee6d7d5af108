//! The harness of the cross-component tests: the real Kokoro container as a process, and the gateway
//! served over real HTTP on a free port, in the test's own runtime.
//!
//! The container runs from `infra/kokoro/.venv` (`make -C infra/kokoro venv` installs it; `make test`
//! does so first). It is started through a shell that kills it when its standard input closes, so
//! that it never outlives the test process, whichever way that process ends.
//!
//! The container the tests of a binary share ([`Kokoro::shared`]) may be one for every binary: where
//! `EARSHOT_E2E_KOKORO_URL` names a running container (`make test-e2e` starts one through
//! `scripts/with-kokoro.sh`), the binaries use it rather than each load the model anew. The tests read its
//! counters as differences and wait for it to be idle, so one binary's work does not show in the next.

pub mod moto;
pub mod run_aws;
pub mod speed;

pub use speed::Speed;

use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{KokoroBackend, KokoroConfig};
use earshot_client::{rms, Received, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_core::speech::SpeechBackend;
use earshot_gateway::Gateway;

/// A Kokoro container process.
pub struct Kokoro {
    pub url: String,
    child: Mutex<Option<(Child, ChildStdin)>>,
    /// Its speed on this machine, measured on first use ([`Kokoro::speed`]).
    speed: tokio::sync::OnceCell<Speed>,
}

/// The e2e package's folder (`tests/`) as cargo names it when it runs the test, else as it was when the
/// binary was compiled. The run's own comes first: every clone shares one target folder (the Makefile's
/// `CARGO_TARGET_DIR`), and a test binary another clone compiled from the same sources is not rebuilt, so
/// its compiled-in folder may be the other clone's, or one since deleted.
pub fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn kokoro_dir() -> PathBuf {
    package_dir().join("../infra/kokoro")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The container every test of one binary shares ([`Kokoro::shared`]), once one has asked for it.
static SHARED_KOKORO: OnceLock<Kokoro> = OnceLock::new();

impl Kokoro {
    /// Starts a container of its own (for tests that stop it).
    pub fn start() -> Kokoro {
        Self::start_with(None, &[])
    }

    /// Starts a container on `port` (a free one when `None`) with extra environment variables.
    pub fn start_with(port: Option<u16>, env: &[(&str, &str)]) -> Kokoro {
        let dir = kokoro_dir();
        let python = dir.join(".venv/bin/python");
        assert!(python.exists(), "the Kokoro venv is missing: run `make -C infra/kokoro venv` (make test does)");
        let port = port.unwrap_or_else(free_port);
        let log = std::env::temp_dir().join(format!("earshot-e2e-kokoro-{port}.log"));
        // The shell reads its standard input until it closes (this process ended), then stops the server.
        // A line on standard input names the signal to stop it with (`kill` sends KILL).
        let script = format!(
            "{} -m kokoro_server > {} 2>&1 & pid=$!; read -r sig || sig=TERM; kill -${{sig:-TERM}} $pid 2>/dev/null; wait $pid 2>/dev/null",
            python.display(),
            log.display()
        );
        let mut command = Command::new("sh");
        command.envs(env.iter().copied());
        let mut child = command
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
        Kokoro { url: format!("http://127.0.0.1:{port}"), child: Mutex::new(Some((child, stdin))), speed: tokio::sync::OnceCell::new() }
    }

    /// The container shared by the tests of one test binary: the one `EARSHOT_E2E_KOKORO_URL` names, for
    /// every binary, else one of this binary's own.
    pub fn shared() -> &'static Kokoro {
        SHARED_KOKORO.get_or_init(|| match std::env::var("EARSHOT_E2E_KOKORO_URL") {
            Ok(url) if !url.is_empty() => Kokoro::at(url.trim_end_matches('/')),
            _ => Kokoro::start(),
        })
    }

    /// A container already running at `url`, not this process's to stop.
    pub fn at(url: &str) -> Kokoro {
        Kokoro { url: url.to_string(), child: Mutex::new(None), speed: tokio::sync::OnceCell::new() }
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

    /// How fast this container renders on this machine: measured once (it must be idle for that), then
    /// kept. Tests derive their time limits from it ([`Speed::scaled`]).
    pub async fn speed(&self) -> Speed {
        *self
            .speed
            .get_or_init(|| async {
                self.ready().await;
                self.wait_idle(Duration::from_secs(60)).await;
                Speed::measure(&self.url).await
            })
            .await
    }

    /// Kills the container's server with SIGKILL, as a crash would, and waits for it to end.
    pub fn kill(&self) {
        use std::io::Write;
        if let Some((mut child, mut stdin)) = self.child.lock().expect("lock").take() {
            let _ = stdin.write_all(b"KILL\n");
            drop(stdin);
            let _ = child.wait();
        }
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

    /// Waits until the container has no live request and no open session (whatever ended them),
    /// for up to `within`; returns its counters then, or fails naming what is still live.
    pub async fn wait_idle(&self, within: Duration) -> serde_json::Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let stats = self.stats().await;
            if stats["active_requests"] == 0 && stats["connections"] == 0 {
                return stats;
            }
            assert!(tokio::time::Instant::now() < deadline, "the container is still busy after {within:?}: {stats}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The port the container listens on.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in the URL")
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

/// The backend silence limit of a test that is not about it (and Polly's wait for a sentence's first
/// audio): the gateway's default, stretched for this machine and the shared container's queue.
pub async fn untested_silence() -> Duration {
    Kokoro::shared().speed().await.queued(speed::BACKEND_SILENCE)
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
    ScriptedAgent::new(ScriptedConfig { tokens_per_second, first_token_delay: Duration::ZERO, ..Default::default() })
}

/// Speech from Kokoro has an RMS level of a few percent of full scale; silence has none.
const SPEECH_RMS: f64 = 0.01;

pub fn text(t: &str) -> SpeakBody {
    SpeakBody { text: Some(t.into()), ..Default::default() }
}

pub fn prompt(p: &str) -> SpeakBody {
    SpeakBody { prompt: Some(p.into()), ..Default::default() }
}

/// Checks the shape every completed conversation has: `session` first, sentences in order, each
/// with its audio (sequence numbers from 0) and one `sentence_end` before the next sentence's audio,
/// `done` last; and returns the sentences' texts.
pub fn check_conversation(r: &Received) -> Vec<String> {
    assert!(r.error.is_none(), "error: {:?}", r.error);
    if let Err(broken) = earshot_core::protocol::check_order(&r.events) {
        panic!("the stream breaks the protocol's ordering: {broken}");
    }
    assert!(matches!(r.events.last(), Some(ServerEvent::Done(_))), "done last");
    // Beyond the protocol: the real model voices every sentence before it ends, but one it passed over
    // (`skipped`), which has neither audio nor words.
    let mut sentences = Vec::new();
    let mut skipped = std::collections::HashSet::new();
    let mut voiced = None;
    for event in &r.events {
        match event {
            ServerEvent::Sentence(s) => sentences.push(s.text.clone()),
            ServerEvent::Audio(a) => voiced = Some(a.index),
            ServerEvent::SentenceEnd(e) if e.skipped.is_some() => {
                assert_ne!(voiced, Some(e.index), "a skipped sentence {} has no audio", e.index);
                assert_eq!(e.audio_ms, 0.0, "a skipped sentence {} has no audio", e.index);
                skipped.insert(e.index);
            }
            ServerEvent::SentenceEnd(e) => assert_eq!(voiced, Some(e.index), "sentence {} is voiced before it ends", e.index),
            _ => {}
        }
    }
    let level = rms(&r.samples().expect("the audio decodes in its announced format"));
    assert!(level > SPEECH_RMS, "the audio has speech energy (rms {level})");
    let timeline = r.timeline.as_ref().expect("timeline");
    // Every sentence is timed word by word: its written words, in order, within its audio.
    for (index, sentence) in sentences.iter().enumerate() {
        let (timing, words) = r.words(index as u32);
        if skipped.contains(&(index as u32)) {
            assert!(words.is_empty(), "a skipped sentence {index} has no words: {words:?}");
            continue;
        }
        let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        assert_eq!(texts, earshot_core::words::written_words(sentence), "sentence {index}'s words ({timing:?})");
        let audio_ms = timeline.sentences.iter().find(|s| s.index == index as u32).map_or(0.0, |s| s.audio_ms);
        let last_end = words.last().map_or(0.0, |w| w.end_ms);
        assert!(last_end <= audio_ms + 1.0, "sentence {index}'s words end at {last_end} ms, after its {audio_ms} ms of audio");
    }
    let audio_ms: f64 = timeline.sentences.iter().map(|s| s.audio_ms).sum();
    let received_ms: f64 = r.marks.audio_chunk_ms.iter().sum();
    // A compressed format ends each sentence through the codec's delay, with some silence a sentence.
    let padding = earshot_audio::coded::most_silence_added_ms(&r.format().expect("format").encoding) * sentences.len() as f64;
    assert!(received_ms > audio_ms - 1.0 && received_ms < audio_ms + padding + 1.0, "the timeline accounts for every sample");
    sentences
}

/// The `earshot` binary the tests run: `EARSHOT_BIN`, or the one built beside this test binary
/// (`make test-e2e` builds it first).
pub fn earshot_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("EARSHOT_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe.parent().and_then(|deps| deps.parent()).map(|dir| dir.join("earshot")).expect("the target folder");
    assert!(bin.exists(), "{} is missing: build it with `cargo build -p earshot` (make test-e2e does)", bin.display());
    bin
}

/// `earshot serve` as a process of its own, on a free port: the real socket server, signals and all.
/// Killed when dropped, and by the kernel if the test process dies first.
pub struct EarshotProcess {
    pub url: String,
    pub port: u16,
    /// Where its standard output goes: the metric lines (EMF) it logs.
    pub stdout: PathBuf,
    child: Child,
}

impl EarshotProcess {
    /// Starts `earshot serve` with `args` (no demo page) and waits until it listens.
    pub async fn start(args: &[&str]) -> EarshotProcess {
        Self::start_with_env(args, &[]).await
    }

    /// As [`EarshotProcess::start`], with environment variables of its own (AWS credentials for stand-ins).
    /// The sentence cache's warm-up is off unless `args` name `--cache-warmup`.
    ///
    /// Where the test uses the shared container and names no backend silence limit, the gateway is
    /// given [`untested_silence`]: the default stretched for this machine and the container's queue.
    pub async fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> EarshotProcess {
        let silence;
        let mut args = args.to_vec();
        if SHARED_KOKORO.get().is_some() && !args.contains(&"--backend-silence-timeout-ms") {
            silence = untested_silence().await.as_millis().to_string();
            args.extend_from_slice(&["--backend-silence-timeout-ms", &silence]);
        }
        // No warm-up unless the test is about it: each process would render the openers through the shared
        // container, loading the machine under the tests that follow.
        if !args.contains(&"--cache-warmup") {
            args.extend_from_slice(&["--cache-warmup", "none"]);
        }
        let port = free_port();
        let log = std::env::temp_dir().join(format!("earshot-e2e-serve-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("a log file");
        let stdout = std::env::temp_dir().join(format!("earshot-e2e-serve-{port}.out"));
        let stdout_file = std::fs::File::create(&stdout).expect("a file for standard output");
        let child = Command::new("setpriv")
            .arg("--pdeathsig")
            .arg("KILL")
            .arg(earshot_bin())
            .args(["serve", "--port", &port.to_string()])
            // No demo page unless the test names one.
            .args(if args.contains(&"--web-dir") { &[][..] } else { &["--web-dir", ""][..] })
            .args(args)
            .env("EARSHOT_LOG", "info")
            .envs(env.iter().copied())
            .stdout(stdout_file)
            .stderr(log_file)
            .spawn()
            .expect("earshot serve starts");
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..500 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return EarshotProcess { url, port, stdout, child };
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        panic!("earshot serve did not listen on {port}; see {}", log.display());
    }

    /// The process id of `earshot serve` (its memory is read in /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `/healthz` answers 200.
    pub async fn healthy(&self) {
        for _ in 0..600 {
            if let Ok(r) = reqwest::get(format!("{}/healthz", self.url)).await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("earshot at {} did not become healthy", self.url);
    }

    /// Where its log (standard error) goes.
    pub fn log_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("earshot-e2e-serve-{}.log", self.port))
    }

    /// The metric lines (CloudWatch EMF, one JSON object a line) it has written so far.
    pub fn metric_lines(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.stdout).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).filter(|v| v.get("_aws").is_some()).collect()
    }

    /// Its metric lines once there are at least `n` (a line is written as its conversation ends, which may be
    /// just after the last event reached the client), or what there is after 5 s.
    pub async fn metric_lines_at_least(&self, n: usize) -> Vec<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let lines = self.metric_lines();
            if lines.len() >= n || tokio::time::Instant::now() >= deadline {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Sends a signal (`TERM`, `INT`, …) to the process.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").arg(format!("-{name}")).arg(self.child.id().to_string()).status().expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits up to `within` for the process to exit; its exit status.
    pub async fn exited(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl Drop for EarshotProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
