//! What all callers together may spend in an hour: the deployment's ceiling, above every caller's own.
//!
//! Each caller has budgets of its own ([`crate::character_budget`], [`crate::input_budget`]), and on a
//! public URL each address is a caller (an IPv6 one by its /64): a /48 is 65,536 callers' worth of
//! budgets. So a deployment may also set a ceiling on what every caller but the `local` one spends
//! together: characters spoken, characters sent to the agent, and requests, each per rolling hour.
//! They are counted under one owner of their own ([`deployment`]) in the same ledger as the callers'
//! budgets (this process under `earshot serve`, the table on Lambda), with the same arithmetic: a
//! conversation reserves the ceiling's characters in blocks, as it does its owner's, and gives back what
//! it did not speak.
//!
//! Past the ceiling a request is refused `503 spend_ceiling` with `Retry-After` (the seconds until some of
//! the hour's spending lapses): the service, not the caller, is out of budget. A sentence past it mid-answer
//! is not spoken, and the answer ends with an `error` event `spend_ceiling`. Each refusal logs a metric line
//! (`SpendCeilingReached`, by `Limit`), which the CDK stack alarms on.

use crate::api_error::ApiError;
use crate::owner::Owner;

/// The code of a refusal for the deployment's ceiling.
pub const SPEND_CEILING: &str = "spend_ceiling";

/// The deployment's ceiling: what all callers together may spend per rolling hour (`None`: no ceiling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ceiling {
    /// Characters spoken (what the voices bill), silence charged as [`earshot_core::budget::silence_chars`] says.
    pub chars_per_hour: Option<u64>,
    /// Characters sent: prompts, earlier turns and texts (what the agent bills as input).
    pub input_chars_per_hour: Option<u64>,
    /// Requests (speak, OpenAI speech and interrupts).
    pub requests_per_hour: Option<u64>,
}

pub use crate::api_error::CeilingLimit as Limit;

/// The owner the ceiling is counted under: one for the whole deployment.
pub fn deployment() -> Owner {
    Owner::deployment()
}

/// The message of a refusal for the ceiling's `limit` of `amount` an hour.
pub fn message(limit: Limit, amount: u64) -> String {
    let what = match limit {
        Limit::Characters => format!("{amount} characters spoken"),
        Limit::Input => format!("{amount} characters sent to the agent"),
        Limit::Requests => format!("{amount} requests"),
    };
    format!("this deployment has reached its ceiling for all callers together ({what} an hour); it frees as the hour rolls on")
}

/// The refusal of a request for the ceiling's `limit`.
pub fn refused(limit: Limit, amount: u64, retry_after_s: u64) -> ApiError {
    let mut refusal = ApiError::unavailable(SPEND_CEILING, message(limit, amount), retry_after_s.clamp(1, u32::MAX as u64) as u32);
    refusal.ceiling = Some(limit);
    refusal
}

/// Logs the metric line of `refusal` where it is one for the ceiling and metrics are logged.
pub fn note(refusal: &ApiError, namespace: Option<&str>) {
    if let (Some(limit), Some(namespace)) = (refusal.ceiling, namespace) {
        crate::metrics::log_spend_ceiling(limit.as_str(), namespace);
    }
}
