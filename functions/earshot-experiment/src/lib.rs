//! The A/B experiment's report: which arm of the split answers faster, steadier and cheaper per
//! answer, and how sure the data lets one be.
//!
//! The gateway logs one metric line (CloudWatch EMF) per conversation, with the arm the split assigned
//! it, the backend that spoke, its timings and what it billed (`docs/metrics.json`). This crate reads
//! those lines wherever they come from (a local log, CloudWatch Logs: the caller fetches them),
//! summarises each arm, compares the arms with bootstrap confidence intervals and says in one line
//! what the data supports, including "not yet, and about how many more answers it would take".
//! It knows nothing of AWS but its prices (`docs/prices.json`, dated, overridable).
//!
//! - [`lines`]: the metric lines, parsed.
//! - [`stats`]: percentiles and the seeded bootstrap.
//! - [`cost`]: what an answer cost, from prices and what the line says it used.
//! - [`report`]: the per-arm figures, the comparisons and the verdict, as text or JSON.
//! - [`plot`]: the time-to-first-audio distributions per arm, as SVG.
//! - [`plan`]: when self-hosted Kokoro pays: dollars per 1,000 answers by volume, from measured capacity.
//! - [`observed`]: the capacity a deployment showed: a self-hosted voice's knee from its answers' lines.

#![warn(missing_docs)]

pub mod cost;
pub mod lines;
pub mod observed;
pub mod plan;
pub mod plot;
pub mod report;
pub mod stats;

pub use cost::{Deployment, Prices};
pub use lines::{Answer, Lines};
pub use report::{Options, Report};
