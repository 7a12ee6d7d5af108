//! Which backend answers a conversation: the one the request names (when configuration allows a
//! per-request choice), else an arm of the weighted A/B split, else the default. With failover on, a
//! backend that cannot be opened, or fails before any audio, hands the conversation to the next backend.
//!
//! The split is an experiment: it assigns by a stable hash of the experiment's name and a unit, the
//! caller (the owner: a token's subject, an IAM principal) or, where callers are not told apart (a
//! local stack's one owner), the conversation. So a caller hears one voice through all their
//! conversations, the same caller lands in the same arm in every process and after every restart, and
//! renaming the experiment draws the assignment anew.

use earshot_core::protocol::BackendReason;

use crate::api_error::ApiError;

/// Routing configuration.
#[derive(Debug, Clone)]
pub struct Routing {
    /// Weights of the A/B split per backend name; empty: no split, the first backend is the default.
    pub weights: Vec<(String, u32)>,
    /// Whether a request may name its backend.
    pub allow_override: bool,
    /// Whether a failing backend hands the conversation to another before any audio.
    pub failover: bool,
    /// The experiment's name: part of the assignment's hash, and of every metric line and `session`.
    pub experiment: String,
}

/// The experiment a gateway runs when its settings name none.
pub const DEFAULT_EXPERIMENT: &str = "default";

impl Default for Routing {
    fn default() -> Self {
        Routing { weights: Vec::new(), allow_override: true, failover: false, experiment: DEFAULT_EXPERIMENT.into() }
    }
}

/// The choice for one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The backend's name.
    pub backend: String,
    /// Why it was chosen (`request`, `default`, `ab`, …).
    pub reason: BackendReason,
    /// The A/B arm, when the split chose.
    pub arm: Option<String>,
}

impl Routing {
    /// Parses `kokoro=50,polly=50`.
    pub fn parse_weights(spec: &str) -> Result<Vec<(String, u32)>, String> {
        let mut weights = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part.split_once('=').ok_or_else(|| format!("`{part}` is not NAME=WEIGHT"))?;
            let weight: u32 = weight.trim().parse().map_err(|_| format!("the weight of `{name}` is not a whole number"))?;
            weights.push((name.trim().to_string(), weight));
        }
        if !weights.is_empty() && weights.iter().all(|(_, w)| *w == 0) {
            return Err("every weight is 0".into());
        }
        Ok(weights)
    }

    /// Chooses for one conversation; `unit` is what the split assigns by (see the module docs:
    /// [`crate::Owner::assignment_unit`]).
    pub fn choose(&self, requested: Option<&str>, unit: &str, available: &[String]) -> Result<Choice, ApiError> {
        self.choose_for(requested, unit, available, false)
    }

    /// As [`Routing::choose`], for a caller trusted to name its backend even where requests may not
    /// (`trusted`: see `route.rs`).
    pub fn choose_for(&self, requested: Option<&str>, unit: &str, available: &[String], trusted: bool) -> Result<Choice, ApiError> {
        if let Some(name) = requested {
            if !self.allow_override && !trusted {
                return Err(ApiError::bad_request("backend_choice_forbidden", "this gateway chooses the backend itself (EARSHOT_AB_ALLOW_OVERRIDE off): leave `backend` out or use auto; IAM callers, and tokens whose `backends` claim lists it, may name one"));
            }
            if !available.iter().any(|b| b == name) {
                return Err(ApiError::bad_request(
                    "unknown_backend",
                    format!("backend `{name}` is not available here (available: {}, or auto)", available.join(", ")),
                ));
            }
            return Ok(Choice { backend: name.to_string(), reason: BackendReason::Request, arm: None });
        }
        let arms: Vec<&(String, u32)> = self.weights.iter().filter(|(name, w)| *w > 0 && available.contains(name)).collect();
        if !arms.is_empty() {
            let total: u64 = arms.iter().map(|(_, w)| *w as u64).sum();
            let mut point = self.assignment_point(unit) % total;
            for (name, weight) in arms {
                if point < *weight as u64 {
                    return Ok(Choice { backend: name.clone(), reason: BackendReason::Ab, arm: Some(name.clone()) });
                }
                point -= *weight as u64;
            }
        }
        let first = available.first().ok_or_else(|| ApiError::upstream("no_backend", "no backend is configured", false))?;
        Ok(Choice { backend: first.clone(), reason: BackendReason::Default, arm: None })
    }

    /// Where `unit` falls in this experiment: a hash of both, the same in every process.
    fn assignment_point(&self, unit: &str) -> u64 {
        fnv1a(&format!("{}\n{unit}", self.experiment))
    }

    /// The backends to try, in order, if `chosen` fails before any audio.
    pub fn fallbacks(&self, chosen: &Choice, available: &[String]) -> Vec<String> {
        if !self.failover || chosen.reason == BackendReason::Request {
            return Vec::new();
        }
        available.iter().filter(|b| **b != chosen.backend).cloned().collect()
    }
}

/// FNV-1a, 64 bits: a stable hash (not the standard library's, which may change between releases), so
/// that a unit keeps its arm across requests, processes and releases. Five lines, so written here.
fn fnv1a(s: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["kokoro".into(), "polly".into()]
    }

    #[test]
    fn the_split_follows_the_weights_and_sticks() {
        for (kokoro, polly) in [(50, 50), (80, 20), (10, 90)] {
            let routing = Routing { weights: vec![("kokoro".into(), kokoro), ("polly".into(), polly)], ..Default::default() };
            let mut to_kokoro = 0;
            for i in 0..1000 {
                let id = format!("conversation-{i}");
                let choice = routing.choose(None, &id, &names()).unwrap();
                assert_eq!(choice.reason, BackendReason::Ab);
                assert_eq!(choice.arm.as_deref(), Some(choice.backend.as_str()));
                assert_eq!(routing.choose(None, &id, &names()).unwrap(), choice, "the same id gets the same arm");
                if choice.backend == "kokoro" {
                    to_kokoro += 1;
                }
            }
            let share = to_kokoro as f64 / 10.0;
            assert!((share - kokoro as f64).abs() <= 5.0, "{kokoro}/{polly}: kokoro got {share}%");
        }
    }

    #[test]
    fn another_experiment_draws_the_assignment_anew_and_each_is_reproducible() {
        let split =
            |experiment: &str| Routing { weights: vec![("kokoro".into(), 50), ("polly".into(), 50)], experiment: experiment.into(), ..Default::default() };
        let arms = |routing: &Routing| -> Vec<String> { (0..200).map(|i| routing.choose(None, &format!("sub:user-{i}"), &names()).unwrap().backend).collect() };
        let first = arms(&split("voices-2026-12"));
        assert_eq!(arms(&split("voices-2026-12")), first, "the same experiment assigns alike");
        let moved = first.iter().zip(arms(&split("voices-2027-01"))).filter(|(a, b)| **a != *b).count();
        assert!((60..=140).contains(&moved), "a new experiment moves about half the units, not {moved} of 200");
        // Pinned: the hash is part of the contract (an experiment re-run later must assign alike).
        assert_eq!(split("default").assignment_point("sub:alice"), fnv1a("default\nsub:alice"));
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn overrides_follow_the_policy() {
        let open = Routing::default();
        assert_eq!(open.choose(Some("polly"), "x", &names()).unwrap().reason, BackendReason::Request);
        assert_eq!(open.choose(Some("espeak"), "x", &names()).unwrap_err().error.code, "unknown_backend");
        let closed = Routing { allow_override: false, ..Default::default() };
        assert_eq!(closed.choose(Some("polly"), "x", &names()).unwrap_err().error.code, "backend_choice_forbidden");
        assert_eq!(closed.choose(None, "x", &names()).unwrap(), Choice { backend: "kokoro".into(), reason: BackendReason::Default, arm: None });
    }

    #[test]
    fn failover_goes_to_the_others_unless_the_request_chose() {
        let routing = Routing { failover: true, ..Default::default() };
        let default = routing.choose(None, "x", &names()).unwrap();
        assert_eq!(routing.fallbacks(&default, &names()), vec!["polly".to_string()]);
        let requested = routing.choose(Some("kokoro"), "x", &names()).unwrap();
        assert!(routing.fallbacks(&requested, &names()).is_empty());
        let off = Routing::default();
        assert!(off.fallbacks(&default, &names()).is_empty());
    }

    #[test]
    fn weights_parse_and_reject_nonsense() {
        assert_eq!(Routing::parse_weights("kokoro=70, polly=30").unwrap(), vec![("kokoro".into(), 70), ("polly".into(), 30)]);
        assert!(Routing::parse_weights("kokoro").is_err());
        assert!(Routing::parse_weights("kokoro=x").is_err());
        assert!(Routing::parse_weights("kokoro=0").is_err());
    }
}
