//! One module a subcommand.

pub mod bench;
pub mod say;
pub mod serve;
pub mod split;
