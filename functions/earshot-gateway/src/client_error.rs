//! What a client is told when something upstream fails: a code, a sentence earshot wrote, and the
//! request id; never the upstream's own text.
//!
//! An upstream's message can carry what a caller must not see: an agent's URL with its `?key=`, an
//! agent service's body ("Incorrect API key provided: sk-…"), the address of the Kokoro container, an
//! AWS SDK's debug dump. So every failure that reaches a client from an agent or a voice, before the
//! stream (the HTTP error) or in it (the `error` message), has its message replaced here by the
//! sentence its code stands for, with the request id to quote; the upstream's text goes to the log
//! under the same request id, its URLs' queries and anything shaped like a key redacted.
//!
//! The failures earshot itself describes (an interrupt, the maximum length, an empty or too long
//! answer, the agent ending early, a panic, shutdown) keep their message: it holds nothing from
//! outside.

use earshot_core::error::{codes, Error};
pub use earshot_core::redact::redact;

/// Codes whose messages earshot writes from its own values alone.
const OWN: &[&str] = &[
    codes::INTERRUPTED,
    codes::CONVERSATION_TOO_LONG,
    codes::INTERNAL,
    codes::SHUTTING_DOWN,
    codes::EMPTY_ANSWER,
    codes::NOTHING_SPEAKABLE,
    codes::ANSWER_TOO_LONG,
    codes::AGENT_ENDED,
    crate::owner_places::TOO_MANY_CONVERSATIONS,
    codes::CHARACTER_BUDGET_SPENT,
    // The ceiling's message names its limit and amount, the deployment's own figures.
    crate::spend_ceiling::SPEND_CEILING,
    // The SSML reader names the tag only, at most 24 characters of it, escaped (earshot_text::ssml).
    codes::INVALID_SSML,
    crate::input_budget::INPUT_BUDGET_SPENT,
    crate::input_budget::REQUEST_RATE_EXCEEDED,
];

/// `error` as a client may see it; logs what it replaces.
pub fn for_client(error: Error, request_id: &str) -> Error {
    if OWN.contains(&error.code.as_str()) {
        return error;
    }
    tracing::warn!(request_id = %request_id, code = %error.code, "upstream failure: {}", redact(&error.message));
    let message = format!("{} (request id {request_id}; the details are in the gateway's log)", sentence(&error.code));
    Error { message, ..error }
}

/// The sentence a code stands for.
fn sentence(code: &str) -> &'static str {
    match code {
        "agent_unreachable" => "the agent could not be reached",
        "agent_access_denied" => "the agent refused the gateway's credentials",
        "agent_throttled" => "the agent is limiting requests; try again shortly",
        "agent_timeout" => "the agent did not answer in time",
        "agent_validation" => "the agent refused the request as invalid",
        "agent_model_not_found" => "the agent's model was not found",
        "agent_unavailable" => "the agent is unavailable; try again shortly",
        "agent_content_filtered" => "the agent's answer was stopped by its content filter",
        "agent_stream_error" => "the agent's answer stream failed",
        "agent_no_response" => "the agent did not answer within its time limit",
        "agent_first_token_timeout" => "the agent began no answer within its time limit",
        "agent_stalled" => "the agent went silent mid-answer for longer than its time limit",
        "agent_event_too_large" => "the agent sent an event larger than the gateway accepts",
        "backend_busy" => "every voice is busy; try again shortly",
        "backend_not_ready" => "the voice is still starting; try again shortly",
        "backend_gone" => "the voice's session ended unexpectedly",
        "backend_closed" => "the voice closed before the answer was spoken",
        "backend_protocol" => "the voice sent something the gateway cannot read",
        "backend_unreachable" => "the voice could not be reached",
        "backend_config" => "the voice is not configured correctly",
        "backend_open_timeout" => "the voice did not open a session within its time limit",
        "backend_stalled" => "the voice went silent mid-answer for longer than its time limit",
        "interrupt_store_unreachable" => "the gateway's store of live conversations could not be reached; try again shortly",
        "interrupt_store_busy" => "the gateway's store of live conversations is busy; try again shortly",
        "polly_throttled" | "polly_quota_exceeded" => "Amazon Polly is limiting requests; try again shortly",
        "polly_validation" => "Amazon Polly refused the text",
        c if c.starts_with("polly_") => "Amazon Polly failed",
        c if c.starts_with("tts_") => "the voice's model failed on this text",
        c if c.starts_with("agent_") => "the agent failed",
        _ => "the voice's service failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_message_never_reaches_the_client() {
        let planted = Error::new("agent_access_denied", "POST https://agent.example.com/v1/chat?key=s3cret: Incorrect API key provided: sk-abcd1234", false);
        let told = for_client(planted, "req-9");
        assert_eq!(told.code, "agent_access_denied");
        assert!(!told.retryable);
        assert!(told.message.contains("req-9"), "{}", told.message);
        for secret in ["s3cret", "sk-abcd", "agent.example.com", "http"] {
            assert!(!told.message.contains(secret), "{secret} in {}", told.message);
        }
        for code in ["tts_unknown_voice", "polly_throttled", "model_stream_error", "validation_error", "backend_unreachable"] {
            let told = for_client(Error::new(code, "at http://10.0.0.7:8080/ws: refused", true), "r");
            assert!(!told.message.contains("10.0.0.7"), "{code}: {}", told.message);
        }
    }

    #[test]
    fn earshots_own_failures_keep_their_message() {
        let own = Error::new("answer_too_long", "the answer is longer than 100000 characters", false);
        assert_eq!(for_client(own.clone(), "r"), own);
    }
}
