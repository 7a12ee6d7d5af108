//! One module a subcommand.

pub mod ab;
pub mod doctor;
pub mod key;
pub mod metric_lines;
pub mod plan;
pub mod say;
pub mod serve;
pub mod sigv4;
pub mod split;
pub mod token;
