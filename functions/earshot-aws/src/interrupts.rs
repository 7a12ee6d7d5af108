//! The interrupt store on DynamoDB: one item per live conversation, so that an interrupt received by one
//! Lambda invocation reaches the invocation that speaks (see `earshot_gateway::interrupts`; the trait is `earshot_core::store`).
//!
//! The table (created by the CDK app, on-demand capacity) has the partition key `conversation_id` (a
//! string) and time to live on `expires_at` (epoch seconds), so a record whose conversation never ended
//! cleanly goes away by itself. An item holds `state` (`live` or `interrupted`) and `token` (the request
//! id of the conversation that began it, so that its end does not delete a later conversation's record
//! under the same id). The speaking invocation reads its item with a strongly consistent `GetItem` at each
//! poll: an interrupt written just before is seen.
//!
//! The same table keeps each owner's places (live conversations per owner, `earshot_gateway::owner_places`):
//! one item per owner under `owner-` and a digest of the owner, holding `places_ms`, a string set of
//! `expires:token` entries (one per live conversation, lapsing at `expires`, epoch milliseconds: a place of one
//! second lasts one second, not anything up to it as whole seconds would make it), and `version`. A place is
//! taken or given back by reading the item and writing it back on condition that `version` is unchanged,
//! retried on a conflict (optimistic concurrency, as DynamoDB's documentation describes with a version
//! attribute): lapsed entries are dropped on the way, and `expires_at` (the item's TTL, epoch seconds) is the
//! latest entry's expiry rounded up. Earlier releases kept the entries in seconds under `places`: they are
//! still read (a deployment does not forget the places taken just before it), and each write moves them to
//! `places_ms`. A new attribute rather than new units under the old one, so that a release rolled back reads
//! none of the new entries (its count is low until they lapse) instead of misreading milliseconds as seconds
//! (places that never lapse, an owner refused for good).
//!
//! Each owner's character budget (`earshot_gateway::character_budget`) is one more item per owner under
//! `budget-` and the same digest: `spent`, a string set of `minute:characters` entries (what was reserved in
//! each minute of the last hour, `earshot_core::budget::SpendWindow`), and `version`, changed the same way;
//! `expires_at` is when its latest minute stops counting.
//!
//! Cost, on-demand: a strongly consistent read of an item under 4 KB is one read request unit; at one read
//! every 250 ms that is 240 a minute, about $0.00006 per conversation-minute at $0.25 per million (us-east-1
//! pricing; check yours); the writes (begin, end, interrupt) are three per conversation.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use earshot_core::budget::{Reservation, SpendWindow};
use earshot_core::error::Error;
use earshot_core::store::{ConversationStore, Interrupt};
use std::collections::HashMap;

/// The conversation store on one DynamoDB table: live conversations and their interrupts, each owner's
/// places and each owner's character budget.
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl DynamoStore {
    /// A store on `table`, through DynamoDB where `config` points.
    pub fn new(config: &aws_config::SdkConfig, table: impl Into<String>) -> Self {
        DynamoStore { client: Client::new(config), table: table.into() }
    }

    /// With DynamoDB at `endpoint` rather than where `config` points (local runs: moto's server beside
    /// the stand-ins of the other services).
    pub fn at(config: &aws_config::SdkConfig, table: impl Into<String>, endpoint: &str) -> Self {
        let config = aws_sdk_dynamodb::config::Builder::from(config).endpoint_url(endpoint).build();
        DynamoStore { client: Client::from_conf(config), table: table.into() }
    }
}

fn now_s() -> u64 {
    now_ms() / 1_000
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn unreachable<E: std::error::Error + 'static, R: std::fmt::Debug>(what: &str, e: SdkError<E, R>) -> Error {
    Error::new("interrupt_store_unreachable", format!("DynamoDB {what}: {}", DisplayErrorContext(&e)), true)
}

fn key(id: &str) -> AttributeValue {
    AttributeValue::S(id.to_string())
}

/// The attribute of an owner's places, `expires_ms:token` entries.
const PLACES: &str = "places_ms";
/// Where earlier releases kept them, `expires_s:token` entries: read, never written.
const PLACES_IN_SECONDS: &str = "places";

/// Conflicting writers of one owner's places retried before the store is called busy.
const PLACE_ATTEMPTS: usize = 8;

/// An owner's places as read: the entries that have not lapsed, and the item's version (0: no item).
struct Places {
    live: Vec<(u64, String)>,
    version: u64,
}

fn places_of(item: Option<&HashMap<String, AttributeValue>>, now_ms: u64) -> Places {
    let Some(item) = item else { return Places { live: Vec::new(), version: 0 } };
    let version = item.get("version").and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok()).unwrap_or(0);
    let entries = |attribute: &str, to_ms: u64| {
        item.get(attribute)
            .and_then(|p| p.as_ss().ok())
            .into_iter()
            .flatten()
            .filter_map(move |entry| entry.split_once(':').and_then(|(at, token)| Some((at.parse::<u64>().ok()?.saturating_mul(to_ms), token.to_string()))))
    };
    // Entries from before the milliseconds (seconds, under `places`) count until they lapse.
    let live = entries(PLACES, 1).chain(entries(PLACES_IN_SECONDS, 1_000)).filter(|(at, _)| *at > now_ms).collect();
    Places { live, version }
}

impl DynamoStore {
    /// The item under `key_`, read strongly consistent (an owner's places or budget, as last written).
    async fn read_item(&self, key_: &str) -> Result<Option<HashMap<String, AttributeValue>>, Error> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("conversation_id", key(key_))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unreachable("GetItem", e))?;
        Ok(item.item)
    }

    async fn read_places(&self, key_: &str) -> Result<Places, Error> {
        Ok(places_of(self.read_item(key_).await?.as_ref(), now_ms()))
    }

    /// Reads the places under `key_` and lets `change` alter them: `Some(answer)` answers without a write,
    /// `None` writes them back on condition that nobody wrote since the read (then `true`), read again
    /// and retried on a conflict.
    async fn change_places(&self, key_: &str, change: impl Fn(&mut Vec<(u64, String)>) -> Option<bool>) -> Result<bool, Error> {
        for _ in 0..PLACE_ATTEMPTS {
            let Places { mut live, version } = self.read_places(key_).await?;
            if let Some(answer) = change(&mut live) {
                return Ok(answer);
            }
            if self.write_places(key_, &live, version).await? {
                return Ok(true);
            }
        }
        Err(Error::new("interrupt_store_busy", format!("DynamoDB: {PLACE_ATTEMPTS} conflicting writes in a row on one owner's places"), true))
    }

    /// Writes `live` as the places under `key_` if nobody wrote since `version`: `Ok(false)` on a conflict.
    async fn write_places(&self, key_: &str, live: &[(u64, String)], version: u64) -> Result<bool, Error> {
        let entries: Vec<String> = live.iter().map(|(at, token)| format!("{at}:{token}")).collect();
        let expires = live.iter().map(|(at, _)| at.div_ceil(1_000)).max().unwrap_or_else(now_s);
        self.write_versioned(key_, (!live.is_empty()).then_some((PLACES, entries, expires)), version).await
    }

    /// Writes the item under `key_` with `(set attribute, its entries, expires_at)`, or with no entries
    /// (`None`: a DynamoDB set cannot be empty) if nobody wrote since `version` (0: no item): `Ok(false)` on a
    /// conflict. An emptied item is kept, its version counting on, rather than deleted: a writer holding a read
    /// from before a delete would otherwise find the recreated item at the version it read and overwrite it.
    /// Its time to live removes it an hour after it emptied.
    async fn write_versioned(&self, key_: &str, item: Option<(&str, Vec<String>, u64)>, version: u64) -> Result<bool, Error> {
        let unchanged = "attribute_not_exists(conversation_id) OR version = :version";
        let version_was = AttributeValue::N(version.to_string());
        let put =
            self.client.put_item().table_name(&self.table).item("conversation_id", key(key_)).item("version", AttributeValue::N((version + 1).to_string()));
        let put = match item {
            Some((attribute, entries, expires)) => put.item(attribute, AttributeValue::Ss(entries)).item("expires_at", AttributeValue::N(expires.to_string())),
            None => put.item("expires_at", AttributeValue::N((now_s() + 3_600).to_string())),
        };
        let put = put.condition_expression(unchanged).expression_attribute_values(":version", version_was).send().await;
        unless_conflict("PutItem", put.map(|_| ()))
    }

    /// Reads `key_`'s spending, lets `change` alter it and writes it back unless another writer came
    /// first, then reads again and retries; gives back what `change` said.
    async fn change_window<R>(&self, key_: &str, span_minutes: u64, change: impl Fn(&mut SpendWindow) -> R) -> Result<R, Error> {
        for _ in 0..PLACE_ATTEMPTS {
            let item = self.read_item(key_).await?;
            let item = item.as_ref();
            let version = item.and_then(|i| i.get("version")).and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok()).unwrap_or(0);
            let entries = item.and_then(|i| i.get("spent")).and_then(|p| p.as_ss().ok()).into_iter().flatten();
            let stored = entries.filter_map(|e| e.split_once(':').and_then(|(m, c)| Some((m.parse().ok()?, c.parse().ok()?))));
            let mut window = SpendWindow::spanning(span_minutes).with_entries(stored);
            let before = window.clone();
            let answer = change(&mut window);
            if window == before {
                // Nothing to write (a refused reservation): no version for the owner's other conversations to lose.
                return Ok(answer);
            }
            let entries: Vec<String> = window.entries().iter().map(|(m, c)| format!("{m}:{c}")).collect();
            let expires = window.expires_at_s();
            if self.write_versioned(key_, (!entries.is_empty()).then_some(("spent", entries, expires)), version).await? {
                return Ok(answer);
            }
        }
        Err(Error::new("interrupt_store_busy", format!("DynamoDB: {PLACE_ATTEMPTS} conflicting writes in a row on one owner's budget"), true))
    }
}

/// `Ok(true)` when a conditional write was made, `Ok(false)` when its condition failed (another writer
/// came first).
fn unless_conflict<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    what: &str,
    written: Result<(), SdkError<E, R>>,
) -> Result<bool, Error> {
    match written {
        Ok(()) => Ok(true),
        Err(SdkError::ServiceError(e)) if e.err().code() == Some("ConditionalCheckFailedException") => Ok(false),
        Err(e) => Err(unreachable(what, e)),
    }
}

#[async_trait]
impl ConversationStore for DynamoStore {
    async fn begin(&self, id: &str, token: &str, ttl: Duration) -> Result<(), Error> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("conversation_id", key(id))
            .item("state", AttributeValue::S("live".into()))
            .item("token", AttributeValue::S(token.into()))
            .item("expires_at", AttributeValue::N((now_s() + ttl.as_secs()).to_string()))
            .send()
            .await
            .map_err(|e| unreachable("PutItem", e))?;
        Ok(())
    }

    async fn interrupt(&self, id: &str, heard_ms: Option<u64>) -> Result<bool, Error> {
        // Only a record that exists and has not expired (TTL deletes lazily) is a live conversation.
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("conversation_id", key(id))
            .condition_expression("attribute_exists(conversation_id) AND expires_at > :now")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":interrupted", AttributeValue::S("interrupted".into()))
            .expression_attribute_values(":now", AttributeValue::N(now_s().to_string()));
        let update = match heard_ms {
            Some(ms) => update
                .update_expression("SET #state = :interrupted, heard_ms = :heard")
                .expression_attribute_values(":heard", AttributeValue::N(ms.to_string())),
            None => update.update_expression("SET #state = :interrupted"),
        };
        let result = update.send().await;
        match result {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(e)) if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
            Err(e) => Err(unreachable("UpdateItem", e)),
        }
    }

    async fn interrupted(&self, id: &str) -> Result<Option<Interrupt>, Error> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("conversation_id", key(id))
            .consistent_read(true)
            .projection_expression("#state, heard_ms")
            .expression_attribute_names("#state", "state")
            .send()
            .await
            .map_err(|e| unreachable("GetItem", e))?;
        let Some(item) = item.item() else { return Ok(None) };
        if item.get("state").and_then(|s| s.as_s().ok()).is_none_or(|s| s != "interrupted") {
            return Ok(None);
        }
        let heard_ms = item.get("heard_ms").and_then(|n| n.as_n().ok()).and_then(|n| n.parse().ok());
        Ok(Some(Interrupt { heard_ms }))
    }

    async fn end(&self, id: &str, token: &str) -> Result<(), Error> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("conversation_id", key(id))
            .condition_expression("#token = :token")
            .expression_attribute_names("#token", "token")
            .expression_attribute_values(":token", AttributeValue::S(token.into()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // A later conversation under the same id owns the record now (or it is gone already).
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => Ok(()),
            Err(e) => Err(unreachable("DeleteItem", e)),
        }
    }

    async fn claim(&self, key_: &str, token: &str, max: usize, ttl: Duration) -> Result<bool, Error> {
        let expires = now_ms() + (ttl.as_millis() as u64).max(1_000);
        self.change_places(key_, |live| {
            if live.iter().any(|(_, t)| t == token) {
                return Some(true);
            }
            if live.len() >= max {
                return Some(false);
            }
            live.push((expires, token.to_string()));
            None
        })
        .await
    }

    async fn release(&self, key_: &str, token: &str) -> Result<(), Error> {
        self.change_places(key_, |live| {
            let before = live.len();
            live.retain(|(_, t)| t != token);
            (live.len() == before).then_some(true)
        })
        .await
        .map(|_| ())
    }
    async fn reserve_chars(&self, key_: &str, span_minutes: u64, want: u64, at_least: u64, limit: u64) -> Result<Reservation, Error> {
        let now = now_s();
        self.change_window(key_, span_minutes, |window| window.reserve(now, want, at_least, limit)).await
    }

    async fn refund_chars(&self, key_: &str, grants: &earshot_core::budget::Grants) -> Result<(), Error> {
        let now = now_s();
        self.change_window(key_, earshot_core::budget::WINDOW_MINUTES, |window| window.refund(now, grants)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(attribute: &str, entries: &[&str]) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("version".to_string(), AttributeValue::N("3".into())),
            (attribute.to_string(), AttributeValue::Ss(entries.iter().map(|e| e.to_string()).collect())),
        ])
    }

    #[test]
    fn a_place_lapses_at_its_millisecond() {
        let now = 1_800_000_000_500;
        let places = places_of(Some(&item(PLACES, &["1800000000501:a", "1800000000500:b"])), now);
        assert_eq!(places.live, vec![(1_800_000_000_501, "a".to_string())], "one millisecond left is live, none is lapsed");
        assert_eq!(places.version, 3);
    }

    #[test]
    fn a_place_an_earlier_release_wrote_in_seconds_still_counts_until_it_lapses() {
        let now = 1_800_000_000_500;
        let places = places_of(Some(&item(PLACES_IN_SECONDS, &["1800000001:old", "1800000000:gone"])), now);
        assert_eq!(places.live, vec![(1_800_000_001_000, "old".to_string())]);
        // Both at once (an item an earlier release wrote, then this one): both counted.
        let mut both = item(PLACES, &["1800000002000:new"]);
        both.insert(PLACES_IN_SECONDS.to_string(), AttributeValue::Ss(vec!["1800000001:old".to_string()]));
        let mut live = places_of(Some(&both), now).live;
        live.sort();
        assert_eq!(live, vec![(1_800_000_001_000, "old".to_string()), (1_800_000_002_000, "new".to_string())]);
    }
}
