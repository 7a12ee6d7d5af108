//! Who a conversation belongs to, and the one key everything kept or sent upstream under it uses.
//!
//! A conversation id is a name the client chooses: not a secret, and not unique across callers. So
//! whatever earshot keeps or sends upstream under a conversation is keyed by its owner and its id
//! together ([`Owner::key`]): the interrupt registry, the DynamoDB item of the shared interrupt store,
//! and the agent's session (AgentCore's runtime session id, the HTTP agent's `conversation_id`).
//! Another owner's conversation under the same id is a different conversation: an interrupt finds
//! nothing there (404, as for an id never used), and the agent's session is not shared.
//!
//! The owner is:
//! - in token mode, the token's `sub`; a token without `sub` is an owner of its own (a digest of the
//!   token), so that two bearers without one never share conversations (a refreshed token then does not
//!   reach the old one's: give tokens a `sub`);
//! - behind IAM (the Lambda function URL with `AWS_IAM` auth), the caller's IAM principal, which the
//!   Lambda binary puts on the request ([`IamCaller`]) from the function URL's request context. An
//!   assumed role's principal names the session too (`arn:aws:sts::…:assumed-role/Role/Session`), and the
//!   session name is whatever the caller chose when it assumed the role: so the owner is the role
//!   ([`Owner::iam_principal`]), and two sessions of one role share its limits, its interrupts and its
//!   agent sessions, unless the deployment makes each session an owner (`EARSHOT_IAM_SESSION_OWNERS`);
//! - where anyone may call on purpose (auth `public`: a function URL with auth NONE, `earshot serve
//!   --allow-unauthenticated`), the caller's network address ([`CallerAddress`]: an IPv6 one by its /64),
//!   kept as a digest, so that a stranger has its own places, budgets and conversation ids, and cannot
//!   interrupt another's answer or continue its agent session by guessing its id;
//! - otherwise (`earshot serve` without tokens, a local stack), `local`: one owner, as one machine's
//!   user.
//!
//! The key is keyed in its turn: an HMAC-SHA-256 under the deployment's own secret
//! ([`ConversationSecret`]), so two deployments that share an upstream (one AgentCore runtime, one
//! HTTP agent) never derive the same session for the same owner and id, and no one who knows an
//! owner and an id can compute the session id sent upstream.

use std::sync::Arc;

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The owner of a conversation; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

/// The caller's IAM principal (an ARN), from the function URL's request context: the Lambda binary
/// inserts it as a request extension, since only it sees the Lambda event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IamCaller(pub String);

/// The caller's network address, as its caller (an IPv6 address cut to its prefix:
/// [`crate::address_slots::caller_of`]): the socket's peer under `earshot serve`, the function URL's
/// `sourceIp` on Lambda. Inserted as a request extension by whichever sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerAddress(pub std::net::IpAddr);

impl Owner {
    /// Everything in one process with no caller identity.
    pub fn local() -> Self {
        Owner("local".into())
    }

    /// The whole deployment: what all callers together spend is counted under it
    /// ([`crate::spend_ceiling`]). No caller is ever this owner (a token's subject is `sub:…`, an address
    /// a digest).
    pub fn deployment() -> Self {
        Owner("deployment".into())
    }

    /// A token's subject.
    pub fn subject(sub: &str) -> Self {
        Owner(format!("sub:{sub}"))
    }

    /// A token without a subject: the token itself, as a digest (the token is never kept).
    pub fn bearer(token: &str) -> Self {
        Owner(format!("bearer:{}", &hex(&Sha256::digest(token.as_bytes()))[..32]))
    }

    /// A caller known only by its network address (auth `public`): a digest of it, so that neither the
    /// logs nor the shared store hold the address.
    pub fn address(address: std::net::IpAddr) -> Self {
        let mut digest = Sha256::new();
        digest.update(b"earshot caller address\0");
        digest.update(address.to_string().as_bytes());
        Owner(format!("address:{}", &hex(&digest.finalize())[..32]))
    }

    /// An IAM principal.
    pub fn iam(principal: &str) -> Self {
        Owner(format!("iam:{principal}"))
    }

    /// Whether the owner is an IAM principal (a caller that signed with the deployment's AWS credentials).
    pub fn is_iam(&self) -> bool {
        self.0.starts_with("iam:")
    }

    /// An IAM principal as the owner of what it starts: an assumed role's session is its role (the ARN
    /// `arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION`, or the unique id `AROA…:SESSION` a request context
    /// gives where it has no ARN, less the session), unless `sessions` (the deployment's choice) makes each
    /// session an owner. Any other principal (a user, a root) is itself.
    pub fn iam_principal(principal: &str, sessions: bool) -> Self {
        if sessions {
            return Owner::iam(principal);
        }
        if let Some((head, rest)) = principal.split_once(":assumed-role/") {
            if head.starts_with("arn:") {
                let role = rest.split('/').next().unwrap_or(rest);
                return Owner::iam(&format!("{head}:assumed-role/{role}"));
            }
        }
        // A role's unique id starts `AROA`; the session follows its colon.
        match principal.split_once(':') {
            Some((id, _session)) if id.starts_with("AROA") => Owner::iam(id),
            _ => Owner::iam(principal),
        }
    }

    /// The owner of a request that carries no token: its IAM caller (its role, unless `iam_sessions`), else
    /// its address where callers are known by it (`by_address`: auth `public`), else `local`.
    pub fn of_request(extensions: &axum::http::Extensions, iam_sessions: bool, by_address: bool) -> Self {
        match (extensions.get::<IamCaller>(), extensions.get::<CallerAddress>()) {
            (Some(IamCaller(principal)), _) => Owner::iam_principal(principal, iam_sessions),
            (None, Some(CallerAddress(address))) if by_address => Owner::address(*address),
            _ => Owner::local(),
        }
    }

    /// What the A/B split assigns by (see [`crate::routing`]): the owner, so that a caller hears one
    /// voice through all their conversations; the conversation where every caller is the one `local`
    /// owner (no tokens, no IAM), or the whole local stack would sit in one arm.
    pub fn assignment_unit<'a>(&'a self, conversation_id: &'a str) -> &'a str {
        if *self == Owner::local() {
            conversation_id
        } else {
            &self.0
        }
    }

    /// What the logs may say of the owner (a subject or principal as it is; the rest is a digest).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key of this owner's places (live conversations per owner, kept in the shared store beside
    /// the conversations): `owner-` and a SHA-256 digest of the owner, so the store never holds it.
    pub fn places_key(&self) -> String {
        let mut digest = Sha256::new();
        digest.update(b"earshot owner places\0");
        digest.update(self.0.as_bytes());
        format!("owner-{}", hex(&digest.finalize()))
    }

    /// The key of this owner's limit `what` (`input`, `requests`) in the shared store: `what`, `-` and a
    /// digest.
    pub fn limit_key(&self, what: &str) -> String {
        let mut digest = Sha256::new();
        digest.update(b"earshot owner limit\0");
        digest.update(what.as_bytes());
        digest.update(b"\0");
        digest.update(self.0.as_bytes());
        format!("{what}-{}", hex(&digest.finalize()))
    }

    /// The key of this owner's character budget in the shared store (`budget-` and a digest).
    pub fn budget_key(&self) -> String {
        let mut digest = Sha256::new();
        digest.update(b"earshot owner budget\0");
        digest.update(self.0.as_bytes());
        format!("budget-{}", hex(&digest.finalize()))
    }

    /// The key of this owner's conversation `id`, for everything kept or sent upstream under it: an
    /// HMAC-SHA-256 under the deployment's secret of the owner and the id, each preceded by its
    /// length (so that no two pairs give the same input), as 64 hex characters. The same every turn
    /// within a deployment, fixed in length (AgentCore asks for 33 to 256 characters), and it carries
    /// neither the owner nor the id to a third party.
    pub fn key(&self, secret: &ConversationSecret, id: &str) -> String {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&secret.0).expect("HMAC takes a key of any length");
        for part in [self.0.as_bytes(), id.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        hex(&mac.finalize().into_bytes())
    }
}

/// The deployment's secret that keys every conversation's key ([`Owner::key`]). Every process of one
/// deployment must hold the same one (an interrupt through another Lambda instance, the agent's
/// session across turns); a process given none draws its own at random, fine for one `earshot
/// serve` and wrong for several sharing a store. Never printed.
#[derive(Clone)]
pub struct ConversationSecret(Arc<[u8]>);

impl ConversationSecret {
    /// The fewest bytes a given secret may have (HMAC-SHA-256's own block of security).
    pub const MIN_BYTES: usize = 32;

    /// A given secret: its bytes as given (text from a file, an environment variable or Secrets
    /// Manager, its surrounding white space dropped), at least [`Self::MIN_BYTES`] of them.
    pub fn new(secret: &[u8]) -> Result<Self, String> {
        let trimmed = secret.trim_ascii();
        if trimmed.len() < Self::MIN_BYTES {
            return Err(format!("the conversation secret has {} bytes; it needs at least {}", trimmed.len(), Self::MIN_BYTES));
        }
        Ok(ConversationSecret(trimmed.into()))
    }

    /// A secret of this process alone: 32 bytes from the operating system's generator.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random generator");
        ConversationSecret(bytes.as_slice().into())
    }
}

impl std::fmt::Debug for ConversationSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConversationSecret(…)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_assigns_a_caller_by_owner_and_the_one_local_owner_by_conversation() {
        let alice = Owner::subject("alice");
        assert_eq!(alice.assignment_unit("call:1"), alice.assignment_unit("call:2"), "one voice through all of a caller's conversations");
        assert_ne!(alice.assignment_unit("call:1"), Owner::subject("bob").assignment_unit("call:1"));
        assert_eq!(Owner::local().assignment_unit("call:1"), "call:1");
        assert_ne!(Owner::local().assignment_unit("call:1"), Owner::local().assignment_unit("call:2"));
    }

    #[test]
    fn an_assumed_roles_sessions_are_its_role_unless_the_deployment_says_otherwise() {
        let arn = |session: &str| format!("arn:aws:sts::123456789012:assumed-role/voice-app/{session}");
        // Two session names the caller chose: one owner, the role; its key is the same for both.
        assert_eq!(Owner::iam_principal(&arn("alice-1"), false), Owner::iam_principal(&arn("new-name-every-time"), false));
        assert_eq!(Owner::iam_principal(&arn("alice-1"), false), Owner::iam("arn:aws:sts::123456789012:assumed-role/voice-app"));
        assert_ne!(Owner::iam_principal(&arn("x"), false), Owner::iam_principal("arn:aws:sts::123456789012:assumed-role/other-role/x", false));
        // The unique id form, where the context has no ARN.
        assert_eq!(Owner::iam_principal("AROAEXAMPLEID:alice", false), Owner::iam_principal("AROAEXAMPLEID:mallory", false));
        // A user is itself; in another partition the role is kept as it is written.
        assert_eq!(Owner::iam_principal("arn:aws:iam::123456789012:user/ops", false), Owner::iam("arn:aws:iam::123456789012:user/ops"));
        assert_eq!(Owner::iam_principal("arn:aws-cn:sts::123456789012:assumed-role/r/s", false), Owner::iam("arn:aws-cn:sts::123456789012:assumed-role/r"));
        // Opted in: each session its own owner.
        assert_ne!(Owner::iam_principal(&arn("alice-1"), true), Owner::iam_principal(&arn("bob-1"), true));
    }

    #[test]
    fn owners_of_different_kinds_never_meet() {
        assert_ne!(Owner::subject("alice"), Owner::iam("alice"));
        assert_ne!(Owner::subject("alice"), Owner::bearer("alice"));
        assert_eq!(Owner::bearer("a.b.c"), Owner::bearer("a.b.c"), "the same token, the same owner");
        assert_ne!(Owner::bearer("a.b.c"), Owner::bearer("a.b.d"));
    }

    fn secret() -> ConversationSecret {
        ConversationSecret::new(b"a deployment's conversation secret").unwrap()
    }

    #[test]
    fn a_key_is_fixed_in_length_and_the_same_every_turn() {
        let (alice, s) = (Owner::subject("alice"), secret());
        assert_eq!(alice.key(&s, "c-1"), alice.key(&s, "c-1"));
        assert_eq!(alice.key(&s, "c-1").len(), 64);
        assert_eq!(alice.key(&s, &"x".repeat(128)).len(), 64);
        assert_ne!(alice.key(&s, "c-1"), Owner::subject("bob").key(&s, "c-1"), "another owner, another conversation");
    }

    #[test]
    fn lengths_keep_owner_and_id_apart() {
        // Without the lengths, `sub:ab` + `c` and `sub:a` + `bc` would be the same input.
        let s = secret();
        assert_ne!(Owner::subject("ab").key(&s, "c"), Owner::subject("a").key(&s, "bc"));
        assert_ne!(Owner::subject("a/").key(&s, "b"), Owner::subject("a").key(&s, "/b"));
    }

    #[test]
    fn another_deployments_secret_gives_another_key() {
        let alice = Owner::subject("alice");
        let other = ConversationSecret::new(b"another deployment's conversation secret").unwrap();
        assert_ne!(alice.key(&secret(), "c-1"), alice.key(&other, "c-1"));
        assert_ne!(alice.key(&ConversationSecret::random(), "c-1"), alice.key(&ConversationSecret::random(), "c-1"), "a process's own");
        // The construction spelt out (docs/protocol.md), computed apart with Python's hmac module:
        // HMAC-SHA-256 under the secret of u64be(9) "sub:alice" u64be(3) "c-1".
        let expected = "8675614e0460db2eaa63f2ae0e31b15d57b050e6e18b1b00de6b61c5be6e4b9e";
        assert_eq!(alice.key(&secret(), "c-1"), expected);
    }

    #[test]
    fn a_short_secret_is_refused_and_none_is_ever_printed() {
        assert!(ConversationSecret::new(b"  too short  ").unwrap_err().contains("at least 32"));
        assert_eq!(ConversationSecret::new(b"  0123456789abcdef0123456789abcdef\n").unwrap().0.len(), 32, "white space around it is not part of it");
        assert_eq!(format!("{:?}", secret()), "ConversationSecret(…)");
    }

    proptest::proptest! {
        #[test]
        fn keys_of_different_owner_and_id_pairs_never_collide(
            a in ("[a-z0-9:_-]{0,12}", "[a-zA-Z0-9._:-]{1,20}"),
            b in ("[a-z0-9:_-]{0,12}", "[a-zA-Z0-9._:-]{1,20}"),
        ) {
            proptest::prop_assume!(a != b);
            let s = secret();
            proptest::prop_assert_ne!(Owner::subject(&a.0).key(&s, &a.1), Owner::subject(&b.0).key(&s, &b.1));
        }
    }
}
