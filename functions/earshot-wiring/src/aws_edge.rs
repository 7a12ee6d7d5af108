//! The AWS parts a gateway may be built with (Kokoro on SageMaker, Polly, Bedrock, AgentCore, Secrets
//! Manager, the DynamoDB interrupt table), behind the cargo feature `aws`, on by default.
//!
//! `make run` builds without it: the local stack (Kokoro's container, the scripted agent) calls no AWS
//! service, and the AWS SDK's crates are most of a release build's time on a small machine. Without
//! the feature, [`connect`] refuses the settings that need AWS with a message that says how to get a
//! build that has it; everything else is wired the same way. `Aws` is then a type with no values,
//! so the compiler proves that no AWS part is built in such a binary.

use std::sync::Arc;

use earshot_core::agent::AgentSource;
use earshot_core::speech::SpeechBackend;
use earshot_core::store::ConversationStore;

use crate::settings::Settings;
use crate::settings_error::SettingsError;

#[cfg(feature = "aws")]
pub use with_aws::{connect, Aws};
#[cfg(not(feature = "aws"))]
pub use without_aws::{connect, Aws};

/// Where AWS is named in a setting: the flag a refusal names, and what in it asks for AWS.
pub(crate) fn needs_aws(settings: &Settings) -> Option<(&'static str, &'static str)> {
    use crate::settings::{AgentKind, BackendKind};
    if settings.sagemaker_endpoint.is_some() {
        Some(("sagemaker-endpoint", "a SageMaker endpoint"))
    } else if settings.backends.contains(&BackendKind::Polly) {
        Some(("backends", "polly"))
    } else if settings.agent == AgentKind::Bedrock {
        Some(("agent", "bedrock"))
    } else if settings.agent == AgentKind::Agentcore {
        Some(("agent", "agentcore"))
    } else if settings.agent_key_secret.is_some() {
        Some(("agent-key-secret", "a secret in Secrets Manager"))
    } else if settings.token_keys_secret.is_some() {
        Some(("token-keys-secret", "a secret in Secrets Manager"))
    } else if settings.conversation_secret_id.is_some() {
        Some(("conversation-secret-id", "a secret in Secrets Manager"))
    } else if settings.interrupt_table.is_some() {
        Some(("interrupt-table", "a DynamoDB table"))
    } else if settings.cache_bucket.is_some() {
        Some(("cache-bucket", "an S3 bucket"))
    } else if settings.lexicon_object().is_some() {
        Some(("lexicon", "an S3 object"))
    } else if !settings.owner_lexicon_objects().is_empty() {
        Some(("owner-lexicons", "S3 objects"))
    } else {
        None
    }
}

/// The parts themselves, built from the AWS SDK's configuration (credentials, Region, an endpoint of
/// the stand-ins' where set).
#[cfg(feature = "aws")]
mod with_aws {
    use super::*;
    use earshot_core::language::Language;
    use std::time::Duration;

    /// The AWS SDK's configuration and the client for the JSON calls made without an SDK crate.
    #[derive(Clone)]
    pub struct Aws {
        sdk: earshot_aws::SdkConfig,
        control: reqwest::Client,
    }

    /// Loads the AWS configuration (credentials, Region, endpoint) once for every part that needs it.
    pub async fn connect(settings: &Settings) -> Result<Aws, SettingsError> {
        let trust_pem = match &settings.aws_trust_pem {
            Some(path) => Some(std::fs::read(path).map_err(|e| SettingsError::of("aws-trust-pem", format!("cannot read {}: {e}", path.display())))?),
            None => None,
        };
        let aws = earshot_aws::AwsSettings { endpoint_url: settings.aws_endpoint.clone(), trust_pem, ..Default::default() };
        // The one client fails with the certificate it was given, or (no certificate) on its own.
        let control = aws.control_client().map_err(|e| match settings.aws_trust_pem {
            Some(_) => SettingsError::of("aws-trust-pem", e),
            None => SettingsError::named("the AWS client", e),
        })?;
        Ok(Aws { sdk: aws.sdk_config().await, control })
    }

    impl Aws {
        /// Kokoro behind a SageMaker endpoint, over its bidirectional stream.
        pub fn sagemaker(&self, endpoint: String, voice: String, configured: &[(Language, String)]) -> Arc<dyn SpeechBackend> {
            let sagemaker = earshot_aws::SageMakerSettings {
                endpoint_name: endpoint,
                target_variant: None,
                voices: vec![voice.clone()],
                default_voice: voice,
                language_voices: with_configured(earshot_aws::SageMakerSettings::production_language_voices(), configured),
                speed: 1.0,
            };
            Arc::new(earshot_aws::SageMakerBackend::new(&self.sdk, sagemaker).with_control_client(self.control.clone()))
        }

        /// Polly's bidirectional stream; its list of generative voices is asked for in the background
        /// (the built-in list answers until it comes, and where Polly cannot be reached, which the
        /// health probe reports). A sentence Polly leaves without audio for `silence` fails on Polly's
        /// side too (`polly_timeout`, which failover may retry), so one setting bounds both.
        pub fn polly(&self, default_voice: &str, language_voices: &[(Language, String)], silence: Option<Duration>) -> Result<Arc<dyn SpeechBackend>, String> {
            let polly = earshot_aws::PollySettings {
                default_voice: default_voice.to_lowercase(),
                language_voices: language_voices.iter().map(|(l, v)| (l.clone(), v.to_lowercase())).collect(),
                first_audio_timeout: silence,
                ..Default::default()
            };
            let backend = Arc::new(earshot_aws::PollyBackend::new(&self.sdk, polly).map_err(|e| e.to_string())?);
            let described = backend.clone();
            earshot_core::tasks::spawn(async move {
                if let Err(e) = described.describe_voices().await {
                    tracing::warn!("Polly's voices stay the built-in list: {}", earshot_core::redact::redact(&e.message));
                }
            });
            Ok(backend)
        }

        /// A Bedrock model through ConverseStream.
        pub fn bedrock(&self, model_id: &str, system_prompt: Option<&str>) -> Arc<dyn AgentSource> {
            let mut bedrock = earshot_aws::BedrockSettings { model_id: model_id.to_string(), ..Default::default() };
            if let Some(prompt) = system_prompt {
                bedrock.system_prompt = prompt.to_string();
            }
            Arc::new(earshot_aws::BedrockAgent::new(&self.sdk, bedrock))
        }

        /// An agent on a Bedrock AgentCore runtime.
        pub fn agentcore(&self, runtime_arn: String, qualifier: Option<String>, text_pointer: String) -> Result<Arc<dyn AgentSource>, String> {
            let agentcore = earshot_aws::AgentCoreSettings { runtime_arn, qualifier, text_pointer };
            tracing::info!("agent: the AgentCore runtime {}", agentcore.runtime_arn);
            Ok(Arc::new(earshot_aws::AgentCoreAgent::new(&self.sdk, agentcore).map_err(|e| e.to_string())?))
        }

        /// A Secrets Manager secret's string, or (`raw`) its whole value as stored.
        /// Reads the secret `id` as it is (raw), again each time it is called: the token keys' refresh.
        pub fn secret_reader(&self, id: &str) -> earshot_gateway::auth::ReadKeys {
            let (aws, id) = (self.clone(), id.to_string());
            std::sync::Arc::new(move || {
                let (aws, id) = (aws.clone(), id.clone());
                Box::pin(async move { aws.secret(&id, true).await })
            })
        }

        pub async fn secret(&self, id: &str, raw: bool) -> Result<String, String> {
            let read = if raw {
                earshot_aws::aws_json::secret_raw(&self.control, &self.sdk, id).await
            } else {
                earshot_aws::aws_json::secret_string(&self.control, &self.sdk, id).await
            };
            read.map_err(|e| format!("cannot read {id}: {}: {}", e.error_type, e.message))
        }

        /// The sentence cache's shared tier: `prefix` of `bucket` (at `endpoint` where given).
        pub fn sentence_tier(&self, bucket: &str, prefix: &str, endpoint: Option<&str>) -> Arc<dyn earshot_core::cache::SharedTier> {
            Arc::new(earshot_aws::s3_cache::S3SentenceTier::new(self.control.clone(), &self.sdk, bucket, prefix, endpoint))
        }

        /// The object `key` of `bucket` as text (a deployment's lexicon at start).
        pub async fn read_object(&self, bucket: &str, key: &str) -> Result<String, String> {
            (self.object_reader(bucket, key))().await
        }

        /// Reads the object `key` of `bucket` as text, each time it is called (a lexicon read again).
        pub fn object_reader(&self, bucket: &str, key: &str) -> earshot_gateway::lexicon_refresh::ReadLexicon {
            let s3 = Arc::new(earshot_aws::s3_bucket::S3Bucket::new(self.control.clone(), &self.sdk, bucket, None));
            let (bucket, key) = (bucket.to_string(), key.to_string());
            Arc::new(move || {
                let (s3, bucket, key) = (s3.clone(), bucket.clone(), key.clone());
                Box::pin(async move {
                    match s3.get_object(&key, Duration::from_secs(10)).await? {
                        Some(body) => String::from_utf8(body.to_vec()).map_err(|_| format!("s3://{bucket}/{key} is not UTF-8 text")),
                        None => Err(format!("s3://{bucket}/{key}: no such object")),
                    }
                })
            })
        }

        /// The DynamoDB table interrupts go through (at `endpoint` where given).
        pub fn interrupt_store(&self, table: &str, endpoint: Option<&str>) -> Arc<dyn ConversationStore> {
            match endpoint {
                Some(endpoint) => Arc::new(earshot_aws::DynamoStore::at(&self.sdk, table, endpoint)),
                None => Arc::new(earshot_aws::DynamoStore::new(&self.sdk, table)),
            }
        }

        /// The API keys kept in the deployment's table (at `endpoint` where given).
        pub fn key_book(&self, table: &str, endpoint: Option<&str>) -> Arc<dyn earshot_core::key_book::KeyBook> {
            Arc::new(earshot_aws::DynamoKeyBook::new(&self.sdk, table, endpoint))
        }
    }

    /// `defaults` with each language `configured` names given its configured voice instead.
    fn with_configured(defaults: Vec<(Language, String)>, configured: &[(Language, String)]) -> Vec<(Language, String)> {
        let mut voices: Vec<(Language, String)> = defaults.into_iter().filter(|(l, _)| !configured.iter().any(|(c, _)| c == l)).collect();
        voices.extend(configured.iter().cloned());
        voices
    }
}

/// A build without the AWS SDK: the settings that need it are refused, and no AWS part exists.
#[cfg(not(feature = "aws"))]
mod without_aws {
    use super::*;
    use earshot_core::language::Language;

    /// No value of this type exists in a build without the feature `aws`.
    #[derive(Clone)]
    pub enum Aws {}

    /// Refuses, naming the setting that asked for AWS and how to get a build that has it.
    pub async fn connect(settings: &Settings) -> Result<Aws, SettingsError> {
        let (flag, what) = needs_aws(settings).unwrap_or(("backends", "an AWS part"));
        Err(SettingsError::of(
            flag,
            format!(
                "{what} needs AWS, and this earshot was built without it (cargo feature `aws`, left out of `make run`'s \
                 build to make it quicker): use `make run-aws`, `make build` or `cargo build --release -p earshot`"
            ),
        ))
    }

    impl Aws {
        pub fn sagemaker(&self, _: String, _: String, _: &[(Language, String)]) -> Arc<dyn SpeechBackend> {
            match *self {}
        }
        pub fn polly(&self, _: &str, _: &[(Language, String)], _: Option<std::time::Duration>) -> Result<Arc<dyn SpeechBackend>, String> {
            match *self {}
        }
        pub fn bedrock(&self, _: &str, _: Option<&str>) -> Arc<dyn AgentSource> {
            match *self {}
        }
        pub fn agentcore(&self, _: String, _: Option<String>, _: String) -> Result<Arc<dyn AgentSource>, String> {
            match *self {}
        }
        pub async fn secret(&self, _: &str, _: bool) -> Result<String, String> {
            match *self {}
        }
        pub fn secret_reader(&self, _: &str) -> earshot_gateway::auth::ReadKeys {
            match *self {}
        }
        pub fn interrupt_store(&self, _: &str, _: Option<&str>) -> Arc<dyn ConversationStore> {
            match *self {}
        }
        pub fn key_book(&self, _: &str, _: Option<&str>) -> Arc<dyn earshot_core::key_book::KeyBook> {
            match *self {}
        }
        pub fn sentence_tier(&self, _: &str, _: &str, _: Option<&str>) -> Arc<dyn earshot_core::cache::SharedTier> {
            match *self {}
        }
        pub async fn read_object(&self, _: &str, _: &str) -> Result<String, String> {
            match *self {}
        }
        pub fn object_reader(&self, _: &str, _: &str) -> earshot_gateway::lexicon_refresh::ReadLexicon {
            match *self {}
        }
    }
}
