//! The `earshot` command line.
//!
//! - `earshot serve`: the gateway on this machine (local Kokoro, scripted agent, demo page).
//! - `earshot say`: speak a prompt or a text through a running gateway, write a WAV, print the
//!   timeline.
//! - `earshot token`: mint a gateway token for token mode.
//! - `earshot ab`: which arm of the A/B split answers faster, steadier and cheaper, with intervals.
//! - `earshot plan`: at what volume self-hosted Kokoro is cheaper than Polly, from a measured capacity.
//! - `earshot split`: cut text on standard input into sentences, as the gateway does while an agent
//!   streams, one JSON string a line.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod commands;

#[derive(Parser)]
#[command(name = "earshot", version, about = "A voice gateway that starts speaking as soon as the agent has a sentence.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the gateway: POST /v1/speak, GET /v1/voices, GET /healthz and the demo page.
    Serve(Box<commands::serve::ServeArgs>),
    /// Speak through a running gateway: write the audio to a WAV file and print the timeline.
    Say(commands::say::SayArgs),
    /// Split UTF-8 text from standard input into sentences, one JSON string a line.
    Split(commands::split::SplitArgs),
    /// Mint a gateway token (token mode) for local use and scripts.
    Token(commands::token::TokenArgs),
    /// API keys for OpenAI clients (token mode): create one (printed once), revoke one, list them.
    Key(commands::key::KeyArgs),
    /// Check a running gateway: one short conversation pinned to each arm, and what to fix where one cannot speak.
    Doctor(commands::doctor::DoctorArgs),
    /// Report on the A/B experiment from the gateway's metric lines: per arm, first audio, stalls, failures
    /// and cost per 1,000 answers; the differences with bootstrap intervals; a verdict.
    Ab(Box<commands::ab::AbArgs>),
    /// Dollars per 1,000 answers for Polly and self-hosted Kokoro by volume, from a measured capacity; where
    /// each is cheapest, and the minimum and maximum instances to configure.
    Plan(Box<commands::plan::PlanArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => commands::serve::run(*args),
        Command::Say(args) => commands::say::run(args),
        Command::Split(args) => commands::split::run(args),
        Command::Token(args) => commands::token::run(args),
        Command::Key(args) => commands::key::run(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Ab(args) => commands::ab::run(*args),
        Command::Plan(args) => commands::plan::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("earshot: {message}");
            ExitCode::FAILURE
        }
    }
}
