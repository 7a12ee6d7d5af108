//! The gateway's metric lines back from CloudWatch Logs, for `earshot ab` against a deployment: the
//! Lambda's stdout is its log group, and each conversation's EMF line is one event's message.
//!
//! `FilterLogEvents` with the term `Answers` (every conversation line names that metric; CloudWatch
//! matches terms on word boundaries, and moto's server, which the tests use, matches single terms
//! alike), paged through with the SDK's paginator.
//! <https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html>

use aws_sdk_cloudwatchlogs::Client;

/// The filter pattern every conversation line matches.
pub const METRIC_LINE_TERM: &str = "Answers";

/// Every metric line of `log_group` between `start_ms` and `end_ms` (epoch milliseconds), oldest first.
/// Errors are one line that names what to fix.
pub async fn metric_lines(config: &aws_config::SdkConfig, log_group: &str, start_ms: i64, end_ms: i64) -> Result<Vec<String>, String> {
    let client = Client::new(config);
    let mut pages =
        client.filter_log_events().log_group_name(log_group).start_time(start_ms).end_time(end_ms).filter_pattern(METRIC_LINE_TERM).into_paginator().send();
    let mut lines = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| {
            let e = e.into_service_error();
            let code = aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata::code(&e).unwrap_or("error").to_string();
            if e.is_resource_not_found_exception() {
                format!("log group `{log_group}` does not exist here (the gateway's is /aws/lambda/<function name>; check the Region)")
            } else {
                format!("FilterLogEvents on `{log_group}`: {code}: {}", aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata::message(&e).unwrap_or_default())
            }
        })?;
        lines.extend(page.events.unwrap_or_default().into_iter().filter_map(|e| e.message));
    }
    Ok(lines)
}
