//! earshot's AWS edges. The core knows nothing of AWS; this crate adapts it to three AWS APIs:
//!
//! - [`sagemaker`]: Kokoro on a SageMaker real-time endpoint, over `InvokeEndpointWithBidirectionalStream`
//!   (the same container protocol as the local WebSocket, carried in `PayloadPart` events, which
//!   [`sagemaker_parts`] joins back into messages);
//! - [`polly`]: Amazon Polly's `StartSpeechSynthesisStream` (generative engine, PCM at 16 kHz);
//! - [`bedrock`]: an agent on Bedrock's `ConverseStream`;
//! - [`agentcore`]: an agent hosted on Bedrock AgentCore Runtime (`InvokeAgentRuntime`);
//! - [`interrupts`]: the interrupt store on DynamoDB, through which an interrupt reaches the Lambda
//!   invocation that speaks; [`key_book`]: the deployment's API keys, in the same table;
//! - [`s3_cache`]: the sentence cache's shared tier, an S3 prefix (two signed calls, no SDK crate).
//!
//! [`health`] keeps each backend's `/healthz` probe cheap; [`aws_json`] is the one signed control-plane
//! call (SageMaker's `DescribeEndpoint`) that no SDK crate of this build carries.
//!
//! [`sdk`] builds the SDK configuration, including the endpoint override and static credentials with
//! which tests point the real SDK clients at local stand-ins.

#![warn(missing_docs)]
// Unit tests spawn their own helpers; clippy.toml keeps the crate's own code on the tracker.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod agentcore;
pub mod aws_json;
pub mod bedrock;
pub mod health;
pub mod interrupts;
pub mod key_book;
pub mod logs;
pub mod polly;
pub mod polly_voices;
pub mod s3_bucket;
pub mod s3_cache;
pub mod sagemaker;
pub mod sagemaker_parts;
pub mod sdk;
pub mod signing;

pub use agentcore::{AgentCoreAgent, AgentCoreSettings};
pub use aws_config::SdkConfig;
pub use bedrock::{BedrockAgent, BedrockSettings};
pub use interrupts::DynamoStore;
pub use key_book::DynamoKeyBook;
pub use polly::{PollyBackend, PollySettings};
pub use sagemaker::{SageMakerBackend, SageMakerSettings};
pub use sdk::AwsSettings;
