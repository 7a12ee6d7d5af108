//! What a caller sends, bounded per owner: the characters of its prompts, earlier turns and texts per
//! rolling hour (what the agent bills as input tokens, whatever the answer's length), and its requests
//! per minute. The character budget ([`crate::character_budget`]) counts what is spoken; a request whose
//! `messages` carry 16,000 characters and whose answer is "ok." would cost it 3 characters and the agent
//! thousands of input tokens. This is the other half.
//!
//! Both are asked before anything upstream (no agent call, no voice, no warm-up set aside), in the same
//! store round trip's wait as the owner's place and character budget, and kept where those are: in this
//! process under `earshot serve`, in the shared store on Lambda. A request past either is refused `429`
//! with its own code and `Retry-After`:
//!
//! | code | limit | window |
//! |---|---|---|
//! | `input_budget_spent` | `max_input_chars_per_owner_hour` | a rolling hour, by the minute |
//! | `request_rate_exceeded` | `max_requests_per_owner_minute` | the current clock minute |
//!
//! What a request sent is charged when it is admitted and never given back, a caller that leaves after
//! the headers included: the agent has it. Only a request refused by another of the checks asked beside
//! these (no place, no character budget) is given back its input: nothing went upstream. The one `local`
//! owner (no token, no IAM caller) has no budgets, as it has no places.

use earshot_core::tasks::Tasks;

use crate::api_error::ApiError;
use crate::character_budget::Ledger;
use crate::owner::Owner;
use crate::spend_ceiling::Limit;
use earshot_core::budget::WINDOW_MINUTES;

/// A caller's input characters were all sent within the rolling hour.
pub const INPUT_BUDGET_SPENT: &str = "input_budget_spent";
/// A caller made all the requests it may this minute.
pub const REQUEST_RATE_EXCEEDED: &str = "request_rate_exceeded";

/// The limits on what one owner sends (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Characters of prompts, earlier turns and texts one owner may send in a rolling hour.
    pub chars_per_hour: Option<u64>,
    /// Requests one owner may make in a minute.
    pub requests_per_minute: Option<u64>,
}

/// Input characters an owner may send an hour, by default (the settings' flags read it too).
pub const DEFAULT_CHARS_PER_HOUR: u64 = 300_000;
/// Requests an owner may make a minute, by default.
pub const DEFAULT_REQUESTS_PER_MINUTE: u64 = 30;

impl Default for InputLimits {
    /// 300,000 characters an hour (about 75,000 input tokens: $0.23 an hour at $3 per million), 30
    /// requests a minute.
    fn default() -> Self {
        InputLimits { chars_per_hour: Some(DEFAULT_CHARS_PER_HOUR), requests_per_minute: Some(DEFAULT_REQUESTS_PER_MINUTE) }
    }
}

/// The input characters a request was charged (its owner's, and the deployment's ceiling's where there is
/// one): given back when dropped unless [`InputCharge::sent`] says the request went on.
pub struct InputCharge {
    ledger: Ledger,
    /// Each charge: its key, characters and the minute it is dated.
    parts: Vec<(String, u64, u64)>,
    tasks: Tasks,
}

impl InputCharge {
    /// The request went upstream: its input stays charged.
    pub fn sent(mut self) {
        self.parts.clear();
    }
}

impl Drop for InputCharge {
    fn drop(&mut self) {
        for (key, chars, minute) in std::mem::take(&mut self.parts) {
            let ledger = self.ledger.clone();
            self.tasks.spawn(async move {
                if let Err(e) = ledger.refund(&key, &[(minute, chars)]).await {
                    tracing::warn!(
                        "cannot give back {chars} input characters of a refused request (they lapse within the hour): {}",
                        earshot_core::redact::redact(&e.to_string())
                    );
                }
            });
        }
    }
}

/// Charges `owner`'s `input_chars`, and the deployment's ceiling's where `ceiling` is set; `429` past the
/// owner's hour, `503 spend_ceiling` past the ceiling. `Ok(None)`: nothing to charge (no limit, or the
/// `local` owner). The request itself was counted before its body was read ([`count_request`]).
pub async fn admit(
    ledger: &Ledger,
    owner: &Owner,
    limits: InputLimits,
    ceiling: Option<u64>,
    input_chars: u64,
    tasks: &Tasks,
) -> Result<Option<InputCharge>, ApiError> {
    if *owner == Owner::local() || input_chars == 0 {
        return Ok(None);
    }
    let mut charge = InputCharge { ledger: ledger.clone(), parts: Vec::new(), tasks: tasks.clone() };
    if let Some(limit) = limits.chars_per_hour {
        if input_chars > limit {
            let message = format!("this request sends {input_chars} characters and a caller may send {limit} in an hour");
            let mut never = ApiError::too_many(INPUT_BUDGET_SPENT, message, 3_600);
            never.error.retryable = false;
            return Err(never);
        }
        let key = owner.limit_key("input");
        let charged = ledger.reserve_within(&key, WINDOW_MINUTES, input_chars, input_chars, limit).await.map_err(ApiError::from_upstream)?;
        if charged.granted == 0 {
            let message = format!("this caller has sent the {limit} characters of prompts and text it may in an hour; the budget frees as the hour rolls on");
            return Err(ApiError::too_many(INPUT_BUDGET_SPENT, message, retry_after(charged.retry_after_s)));
        }
        charge.parts.push((key, charged.granted, charged.minute));
    }
    if let Some(limit) = ceiling {
        // Dropped on refusal, the owner's charge is given back.
        let key = crate::spend_ceiling::deployment().limit_key("input");
        let charged = ledger.reserve_within(&key, WINDOW_MINUTES, input_chars, input_chars, limit).await.map_err(ApiError::from_upstream)?;
        if charged.granted == 0 {
            return Err(crate::spend_ceiling::refused(Limit::Input, limit, charged.retry_after_s));
        }
        charge.parts.push((key, charged.granted, charged.minute));
    }
    Ok((!charge.parts.is_empty()).then_some(charge))
}

/// Counts one request of `owner`'s against its rate, before anything of the request is read past its
/// headers: a caller past its rate costs no parse (a body of thousands of array elements costs tens of
/// milliseconds to read), nor anything after it. `429 request_rate_exceeded` past the limit; the `local`
/// owner is not counted.
/// The deployment's ceiling on requests an hour (`ceiling`), where set, counts the request too: `503
/// spend_ceiling` past it.
pub async fn count_request(ledger: &Ledger, owner: &Owner, limit: Option<u64>, ceiling: Option<u64>) -> Result<(), ApiError> {
    if *owner == Owner::local() {
        return Ok(());
    }
    if let Some(limit) = limit {
        let counted = ledger.reserve_within(&owner.limit_key("requests"), 1, 1, 1, limit).await.map_err(ApiError::from_upstream)?;
        if counted.granted == 0 {
            let message = format!("this caller has made the {limit} requests it may in a minute; retry when the minute ends");
            return Err(ApiError::too_many(REQUEST_RATE_EXCEEDED, message, retry_after(counted.retry_after_s)));
        }
    }
    if let Some(limit) = ceiling {
        let key = crate::spend_ceiling::deployment().limit_key("requests");
        let counted = ledger.reserve_within(&key, WINDOW_MINUTES, 1, 1, limit).await.map_err(ApiError::from_upstream)?;
        if counted.granted == 0 {
            return Err(crate::spend_ceiling::refused(Limit::Requests, limit, counted.retry_after_s));
        }
    }
    Ok(())
}

fn retry_after(seconds: u64) -> u32 {
    seconds.clamp(1, u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn input_is_charged_whole_and_refused_past_the_hour_s_budget() {
        let (ledger, tasks) = (Ledger::Local(Arc::default()), Tasks::new());
        let limits = InputLimits { chars_per_hour: Some(1_000), requests_per_minute: None };
        let a = Owner::subject("a");
        admit(&ledger, &a, limits, None, 600, &tasks).await.unwrap().expect("charged").sent();
        let refused = admit(&ledger, &a, limits, None, 600, &tasks).await.err().expect("400 left, 600 asked");
        assert_eq!((refused.status.as_u16(), refused.error.code.as_str()), (429, INPUT_BUDGET_SPENT));
        assert!(refused.retry_after.unwrap() > 3_000, "the first minute lapses in an hour");
        admit(&ledger, &a, limits, None, 400, &tasks).await.unwrap().expect("what is left").sent();
        assert!(admit(&ledger, &Owner::subject("b"), limits, None, 600, &tasks).await.is_ok(), "another owner's budget is its own");
        let never = admit(&ledger, &Owner::subject("c"), limits, None, 1_001, &tasks).await.err().expect("more than an hour's budget");
        assert!(never.error.message.contains("sends 1001 characters") && !never.error.retryable, "{}", never.error.message);
        assert!(admit(&ledger, &Owner::local(), limits, None, 1_000_000, &tasks).await.unwrap().is_none(), "the local owner has no budget");
    }

    #[tokio::test]
    async fn a_request_refused_elsewhere_gets_its_input_back() {
        let (ledger, tasks) = (Ledger::Local(Arc::default()), Tasks::new());
        let limits = InputLimits { chars_per_hour: Some(1_000), requests_per_minute: None };
        let a = Owner::subject("a");
        drop(admit(&ledger, &a, limits, None, 900, &tasks).await.unwrap());
        tasks.close();
        tasks.wait().await;
        admit(&ledger, &a, limits, None, 900, &tasks).await.unwrap().expect("given back, so charged again").sent();
    }

    #[tokio::test]
    async fn requests_past_the_minute_s_limit_are_refused_until_it_ends() {
        let (ledger, tasks) = (Ledger::Local(Arc::default()), Tasks::new());
        let limits = InputLimits { chars_per_hour: None, requests_per_minute: Some(2) };
        let a = Owner::subject("a");
        for _ in 0..2 {
            assert!(count_request(&ledger, &a, limits.requests_per_minute, None).await.is_ok());
        }
        assert!(admit(&ledger, &a, limits, None, 10, &tasks).await.is_ok(), "input is charged apart from the rate");
        let refused = count_request(&ledger, &a, limits.requests_per_minute, None).await.expect_err("a third request in the minute");
        assert_eq!(refused.error.code, REQUEST_RATE_EXCEEDED);
        assert!((1..=60).contains(&refused.retry_after.unwrap()));
    }
}
