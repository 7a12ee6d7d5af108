//! What a gateway serves with: its backends, its agent, its limits and its scheduling defaults.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use earshot_core::agent::AgentSource;
use earshot_core::scheduler::SchedulerConfig;
use earshot_core::speech::SpeechBackend;
use tokio_util::sync::CancellationToken;

use crate::interrupts::{Interrupts, Registry};
use crate::routing::Routing;

/// Input limits, checked before a stream starts.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_prompt_chars: usize,
    pub max_text_chars: usize,
    /// Earlier turns a request may carry in `messages`.
    pub max_messages: usize,
    /// Characters in all those turns together.
    pub max_history_chars: usize,
    /// The longest a client may take to send a request's body once its headers are in.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            max_prompt_chars: 4_000,
            max_text_chars: 20_000,
            max_messages: 40,
            max_history_chars: 16_000,
            body_timeout: Duration::from_secs(10),
        }
    }
}

/// A configured gateway.
pub struct Gateway {
    /// The backends, the first being the default.
    pub backends: Vec<Arc<dyn SpeechBackend>>,
    pub agent: Arc<dyn AgentSource>,
    pub scheduler: SchedulerConfig,
    pub limits: Limits,
    /// Idle time after which a keep-alive is sent on a quiet stream.
    pub keep_alive: Duration,
    /// Messages the client channel holds before the conversation waits for the client.
    pub client_buffer: usize,
    /// CloudWatch namespace of the metrics line logged after each conversation (`None`: no line).
    pub metrics_namespace: Option<String>,
    /// A folder whose files are served at `/` (the demo page and its modules, for local runs).
    pub web_dir: Option<PathBuf>,
    /// Which backend answers: per request, the A/B split, failover.
    pub routing: Routing,
    /// Fired when the server stops and its drain time is over: every live conversation ends with a
    /// retryable `shutting_down` error.
    pub shutdown: CancellationToken,
    /// How an interrupt reaches a conversation (in this process, or through a shared store).
    pub interrupts: Interrupts,
    /// The conversations live in this process.
    pub registry: Arc<Registry>,
    /// The longest a conversation may run before it is stopped (`conversation_too_long`).
    pub max_conversation: Option<Duration>,
    /// Token mode: every `/v1/speak` and interrupt must carry a token these keys verify (`None`: open,
    /// as behind IAM or locally).
    pub auth: Option<Arc<crate::auth::TokenAuth>>,
}

impl Gateway {
    pub fn new(backends: Vec<Arc<dyn SpeechBackend>>, agent: Arc<dyn AgentSource>) -> Self {
        Gateway {
            backends,
            agent,
            scheduler: SchedulerConfig::default(),
            limits: Limits::default(),
            keep_alive: Duration::from_secs(15),
            client_buffer: 64,
            metrics_namespace: Some("earshot".into()),
            web_dir: None,
            routing: Routing::default(),
            shutdown: CancellationToken::new(),
            interrupts: Interrupts::Local,
            registry: Arc::default(),
            max_conversation: None,
            auth: None,
        }
    }

    pub fn backend(&self, name: &str) -> Option<&Arc<dyn SpeechBackend>> {
        self.backends.iter().find(|b| b.name() == name)
    }

    pub fn backend_names(&self) -> Vec<String> {
        self.backends.iter().map(|b| b.name().to_string()).collect()
    }
}
