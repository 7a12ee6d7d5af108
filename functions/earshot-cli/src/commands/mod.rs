//! One module a subcommand.

pub mod bench;
pub mod split;
