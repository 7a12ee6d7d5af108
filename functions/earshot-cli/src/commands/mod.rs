//! One module a subcommand.

pub mod say;
pub mod serve;
pub mod split;
pub mod token;
