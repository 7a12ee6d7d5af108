//! Local stand-ins for the three AWS APIs earshot calls, for tests and local runs with no AWS
//! account. They speak the same wire protocols as the services (HTTP/2 over TLS with ALPN, the AWS
//! event-stream framing, SigV4-signed requests with signed event envelopes), so that the production
//! code, with the real SDK clients, is what runs against them. What each one does is described in its
//! module: [`sagemaker`] bridges to the Kokoro container's WebSocket exactly as SageMaker does,
//! [`polly`] is voiced by the local Kokoro with a voice pack of its own, [`bedrock`] streams scripted
//! answers, [`agentcore`] stands in for an agent on AgentCore Runtime; [`agents`] stands in for the agents a team brings (an OpenAI-compatible endpoint, an HTTP
//! agent that streams SSE, NDJSON or text). This is test infrastructure: it checks what a test needs to rely on and no more.

pub mod agentcore;
pub mod agents;
pub mod bedrock;
pub mod eventstream;
pub mod polly;
pub mod resample;
pub mod sagemaker;
pub mod server;
pub mod tls;

pub use agents::{start_agents, start_agents_on, AgentStandIns};
pub use server::{start, PollyDelivery, Spoken, StandIns, StandInsConfig};
