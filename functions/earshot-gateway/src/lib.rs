//! The earshot HTTP API, as one router that both the local server (`earshot serve`) and the Lambda
//! function URL serve.
//!
//! - `POST /v1/speak`: validate, choose a backend, open its session, then stream the conversation.
//! - `GET /v1/voices`, `GET /healthz`, and locally `GET /` (the demo page) with its script.
//!
//! Everything a request can get wrong is answered with a 4xx JSON error before any stream starts; a
//! backend that cannot be reached is a 502 before the stream, an `error` message after it has started.

#![warn(missing_docs)]
// Unit tests spawn their own helpers; clippy.toml keeps the crate's own code on the tracker.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod address_slots;
pub mod api_error;
pub mod api_keys;
pub mod auth;
pub mod backend_cap;
pub mod cache_settings;
pub mod character_budget;
pub mod client_error;
pub mod config;
pub mod conversation;
pub mod conversation_scope;
pub mod host_check;
pub mod idle;
pub mod input_budget;
pub mod interrupts;
pub mod lexicon_refresh;
pub mod metrics;
pub mod openai_captions;
pub mod openai_listing;
pub mod openai_speech;
pub mod owner;
pub mod owner_places;
pub mod request;
pub mod route;
pub mod router;
pub mod routing;
pub mod server;
pub mod spend_ceiling;
pub mod strict_json;
pub mod trusted_proxies;
pub mod voice_ask;
pub mod warmup;

pub use config::{Gateway, GatewaySettings, Limits};
pub use interrupts::{ConversationStore, Interrupts};
pub use owner::{CallerAddress, ConversationSecret, IamCaller, Owner};
pub use router::router;
pub use routing::Routing;
pub use server::{serve, stop_signal, ServerLimits};
