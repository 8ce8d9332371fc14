//! The `askuser` command: parses arguments and hands off to the library. Nothing else.

use askuser::cli::{run, Cli};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    run(Cli::parse())
}
