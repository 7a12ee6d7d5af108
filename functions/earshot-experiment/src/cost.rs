//! What an answer cost, from what its metric line says it used and the prices of `docs/prices.json`
//! (dated list prices with their sources; each overridable, since a Region or a discount changes them):
//!
//! - Polly: the characters the stream billed, times the price per character (an answer that Polly spoke
//!   after overflow or failover bills its arm too);
//! - the Lambda: the conversation's time in the gateway times the function's memory (GB-seconds), and
//!   the request itself;
//! - the Kokoro endpoint: it bills by the instance-hour whether it speaks or not, so its cost over the
//!   window (instances × hours × price) is shared by the answers Kokoro spoke in that window.

use serde::{Deserialize, Serialize};

use crate::lines::Answer;

/// The published prices, as the project last read them.
const PUBLISHED: &str = include_str!("../../../docs/prices.json");

/// The backend that bills by the instance-hour.
pub const ENDPOINT_BACKEND: &str = "kokoro";

/// Prices in US dollars.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prices {
    /// When and where the defaults were read (a price passed in says `overridden`).
    pub as_of: String,
    /// The AWS Region the prices are for (`us-east-1`).
    pub region: String,
    /// Polly's price per million characters (generative voices).
    pub polly_per_million_characters: f64,
    /// Lambda's price per GB-second of compute.
    pub lambda_per_gb_second: f64,
    /// Lambda's price per million requests.
    pub lambda_per_million_requests: f64,
    /// The Kokoro endpoint's price per instance-hour.
    pub instance_per_hour: f64,
    /// The endpoint instance type that price is for (`ml.g5.xlarge`).
    pub instance_type: String,
}

#[derive(Deserialize)]
struct Published {
    as_of: String,
    region: String,
    polly_generative_usd_per_million_characters: Price,
    lambda_usd_per_gb_second: Price,
    lambda_usd_per_million_requests: Price,
    sagemaker_usd_per_instance_hour: InstancePrice,
}

#[derive(Deserialize)]
struct Price {
    value: f64,
}

#[derive(Deserialize)]
struct InstancePrice {
    value: f64,
    instance_type: String,
}

impl Prices {
    /// The defaults of `docs/prices.json`.
    pub fn published() -> Prices {
        let p: Published = serde_json::from_str(PUBLISHED).expect("docs/prices.json is valid (a test reads it)");
        Prices {
            as_of: p.as_of,
            region: p.region,
            polly_per_million_characters: p.polly_generative_usd_per_million_characters.value,
            lambda_per_gb_second: p.lambda_usd_per_gb_second.value,
            lambda_per_million_requests: p.lambda_usd_per_million_requests.value,
            instance_per_hour: p.sagemaker_usd_per_instance_hour.value,
            instance_type: p.sagemaker_usd_per_instance_hour.instance_type,
        }
    }
}

/// What the metric lines do not say of the deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deployment {
    /// Kokoro endpoint instances running through the window (the CDK app's `minInstances`, or the
    /// average from CloudWatch where autoscaling moved it).
    pub instances: f64,
    /// The function's memory where a line does not say it (lines say it on Lambda only).
    pub memory_mb: u32,
    /// Whether the gateway runs on Lambda (its time and requests bill); `earshot serve` on a machine of
    /// your own bills neither.
    pub lambda: bool,
}

impl Default for Deployment {
    fn default() -> Self {
        Deployment { instances: 1.0, memory_mb: 1024, lambda: true }
    }
}

/// One answer's cost, in parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Cost {
    /// What Polly billed for the characters it spoke, in US dollars.
    pub polly: f64,
    /// The Lambda's share: the conversation's GB-seconds and the request.
    pub lambda: f64,
    /// The answer's share of the Kokoro endpoint's instance-hours (zero when another backend spoke).
    pub endpoint: f64,
}

impl Cost {
    /// The whole cost, in US dollars.
    pub fn total(&self) -> f64 {
        self.polly + self.lambda + self.endpoint
    }
}

/// The cost of each of `answers` (all of the window's answers, every arm), in order: `window_hours`
/// is how long the endpoint ran for them.
pub fn per_answer(answers: &[&Answer], prices: &Prices, deployment: &Deployment, window_hours: f64) -> Vec<Cost> {
    let spoken_by_endpoint = answers.iter().filter(|a| a.backend == ENDPOINT_BACKEND).count();
    let endpoint_cost = deployment.instances * window_hours * prices.instance_per_hour;
    let endpoint_share = if spoken_by_endpoint > 0 { endpoint_cost / spoken_by_endpoint as f64 } else { 0.0 };
    answers
        .iter()
        .map(|a| {
            let polly = a.billed_characters as f64 * prices.polly_per_million_characters / 1e6;
            let lambda = if deployment.lambda {
                let gb = f64::from(a.memory_mb.unwrap_or(deployment.memory_mb)) / 1024.0;
                let seconds = a.compute_ms.unwrap_or(0.0) / 1000.0;
                gb * seconds * prices.lambda_per_gb_second + prices.lambda_per_million_requests / 1e6
            } else {
                0.0
            };
            let endpoint = if a.backend == ENDPOINT_BACKEND { endpoint_share } else { 0.0 };
            Cost { polly, lambda, endpoint }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(backend: &str, chars: u64, compute_ms: f64) -> Answer {
        Answer { billed_characters: chars, compute_ms: Some(compute_ms), ..Answer::plain(backend, 300.0) }
    }

    #[test]
    fn the_published_prices_are_dated_and_name_their_region() {
        let p = Prices::published();
        assert!(p.as_of.len() == 10 && p.as_of.starts_with("20"), "{}", p.as_of);
        assert_eq!(p.region, "us-east-1");
        assert!(p.polly_per_million_characters > 0.0 && p.lambda_per_gb_second > 0.0 && p.instance_per_hour > 0.0);
        assert!(p.instance_type.starts_with("ml."));
    }

    #[test]
    fn each_part_is_priced_by_hand_computation() {
        let prices = Prices {
            as_of: "test".into(),
            region: "test".into(),
            polly_per_million_characters: 30.0,
            lambda_per_gb_second: 0.00002,
            lambda_per_million_requests: 0.2,
            instance_per_hour: 1.5,
            instance_type: "ml.test".into(),
        };
        let (polly, k1, k2) = (answer("polly", 200, 2000.0), answer("kokoro", 0, 1000.0), answer("kokoro", 0, 3000.0));
        let deployment = Deployment { instances: 2.0, memory_mb: 2048, lambda: true };
        let costs = per_answer(&[&polly, &k1, &k2], &prices, &deployment, 0.5);
        // Polly: 200 × 30 / 1e6 = 0.006; Lambda: 2 GB × 2 s × 0.00002 + 0.2 / 1e6.
        assert!((costs[0].polly - 0.006).abs() < 1e-12 && costs[0].endpoint == 0.0);
        assert!((costs[0].lambda - (0.00008 + 0.0000002)).abs() < 1e-12);
        // The endpoint: 2 instances × 0.5 h × 1.5 = 1.5, shared by the two answers Kokoro spoke.
        assert!((costs[1].endpoint - 0.75).abs() < 1e-12 && (costs[2].endpoint - 0.75).abs() < 1e-12);
        assert!((costs[2].lambda - (2.0 * 3.0 * 0.00002 + 0.0000002)).abs() < 1e-12);
        // Off Lambda, the gateway's time bills nothing.
        let serve = per_answer(&[&polly], &prices, &Deployment { lambda: false, ..deployment }, 0.5);
        assert_eq!(serve[0].lambda, 0.0);
    }
}
