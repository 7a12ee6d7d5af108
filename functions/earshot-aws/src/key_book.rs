//! The deployment's API keys on DynamoDB: the records `earshot key create --table` writes and the gateway
//! reads on Lambda, one per key, in the same table as the live conversations
//! ([`crate::interrupts::DynamoStore`]), so a deployment has one table to keep, grant and delete.
//!
//! An item's partition key (`conversation_id`, the table's one key) is `apikey-` and the key's id (8 hex
//! characters). Conversation items are keyed by a 64-character hex digest and owners' items by `owner-` or
//! `budget-` and a digest, so no caller's input can reach a key's item. The item holds `record`, the
//! gateway's [`KeyRecord`] as JSON (the key's SHA-256, never the key), with `owner` and `revoked` beside
//! it for a reader of the table in the console; only `record` is read back. Items have no `expires_at`:
//! a key lives until revoked or past its own expiry, which the gateway checks.
//!
//! The gateway reads a key's item with one strongly consistent `GetItem` a request (a revocation holds at
//! the next request); the function's role needs nothing more than the store already has. Writing and
//! listing (`PutItem`, `Scan`) are the operator's, with their own credentials.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use earshot_core::error::Error;
use earshot_core::key_book::{KeyBook, KeyRecord, Keys};

/// What every key's partition key starts with.
const KEY_ITEM: &str = "apikey-";
/// The attribute that holds the record.
const RECORD: &str = "record";

/// The API keys kept in a deployment's table.
pub struct DynamoKeyBook {
    client: Client,
    table: String,
}

impl DynamoKeyBook {
    /// The keys in `table`, through DynamoDB where `config` points, or at `endpoint` (local runs: moto's
    /// server).
    pub fn new(config: &aws_config::SdkConfig, table: impl Into<String>, endpoint: Option<&str>) -> Self {
        let client = match endpoint {
            Some(endpoint) => Client::from_conf(aws_sdk_dynamodb::config::Builder::from(config).endpoint_url(endpoint).build()),
            None => Client::new(config),
        };
        DynamoKeyBook { client, table: table.into() }
    }
}

fn unreachable<E: std::error::Error + 'static, R: std::fmt::Debug>(what: &str, e: SdkError<E, R>) -> Error {
    Error::new("keys_unavailable", format!("DynamoDB {what}: {}", DisplayErrorContext(&e)), true)
}

fn record_of(item: &HashMap<String, AttributeValue>) -> Result<KeyRecord, Error> {
    let text = item.get(RECORD).and_then(|v| v.as_s().ok()).ok_or_else(|| Error::new("keys_unavailable", "a key's item holds no `record`", false))?;
    serde_json::from_str(text).map_err(|e| Error::new("keys_unavailable", format!("a key's record is not one this gateway reads: {e}"), false))
}

#[async_trait]
impl KeyBook for DynamoKeyBook {
    async fn find(&self, id: &str) -> Result<Option<KeyRecord>, Error> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("conversation_id", AttributeValue::S(format!("{KEY_ITEM}{id}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unreachable("GetItem", e))?;
        read.item.as_ref().map(record_of).transpose()
    }

    async fn keep(&self, id: &str, record: &KeyRecord) -> Result<(), Error> {
        let json = serde_json::to_string(record).expect("a key's record is JSON");
        self.client
            .put_item()
            .table_name(&self.table)
            .item("conversation_id", AttributeValue::S(format!("{KEY_ITEM}{id}")))
            .item(RECORD, AttributeValue::S(json))
            .item("owner", AttributeValue::S(record.owner.clone()))
            .item("revoked", AttributeValue::Bool(record.revoked))
            .send()
            .await
            .map_err(|e| unreachable("PutItem", e))?;
        Ok(())
    }

    async fn all(&self) -> Result<Keys, Error> {
        let mut keys = Keys::new();
        let mut from = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("begins_with(conversation_id, :keys)")
                .expression_attribute_values(":keys", AttributeValue::S(KEY_ITEM.into()))
                .set_exclusive_start_key(from)
                .send()
                .await
                .map_err(|e| unreachable("Scan", e))?;
            for item in page.items() {
                let id = item.get("conversation_id").and_then(|v| v.as_s().ok()).and_then(|k| k.strip_prefix(KEY_ITEM));
                if let Some(id) = id {
                    keys.insert(id.to_string(), record_of(item)?);
                }
            }
            match page.last_evaluated_key {
                Some(next) if !next.is_empty() => from = Some(next),
                _ => return Ok(keys),
            }
        }
    }

    fn place(&self) -> String {
        format!("the DynamoDB table {}", self.table)
    }
}
