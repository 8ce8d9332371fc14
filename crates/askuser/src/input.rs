//! Reads JSON input from a file or standard input (`-` or no path).

use anyhow::Context;
use std::io::Read;
use std::path::Path;

/// The text of `path`, or of standard input when `path` is `None` or `-`.
pub fn read_text(path: Option<&Path>) -> anyhow::Result<String> {
    match path {
        Some(p) if p.as_os_str() != "-" => std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display())),
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("cannot read standard input")?;
            Ok(text)
        }
    }
}
