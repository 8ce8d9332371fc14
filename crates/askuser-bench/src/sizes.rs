//! What a browser downloads: the web app Trunk built into `crates/askuser-bridge/ui/` (what the binary
//! embeds) and the embed package (`scripts/build-embed` → `target/embed-pkg`), each as
//! wasm and JS, raw and gzip (`gzip -9`).

use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Raw and gzip bytes of the files in `dir` whose names end with `ext`.
fn measure(dir: &Path, ext: &str) -> anyhow::Result<(u64, u64)> {
    let (mut raw, mut gz) = (0, 0);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.to_string_lossy().ends_with(ext) {
            continue;
        }
        raw += std::fs::metadata(&path)?.len();
        let out = std::process::Command::new("gzip").args(["-9", "-c"]).arg(&path).output().context("running gzip")?;
        if !out.status.success() {
            bail!("gzip {} failed", path.display());
        }
        gz += out.stdout.len() as u64;
    }
    Ok((raw, gz))
}

fn kb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1000.0)
}

/// The sizes table; a part that is not built is listed with the command that builds it.
pub fn table() -> anyhow::Result<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let parts = [
        ("web app (`crates/askuser-bridge/ui/`, embedded in the binary)", root.join("crates/askuser-bridge/ui"), "scripts/build-ui"),
        ("embed package (`target/embed-pkg`)", root.join("target/embed-pkg"), "scripts/build-embed"),
    ];
    let mut t = String::from(
        "## Sizes (what a browser downloads; KB = 1,000 bytes, gzip -9)\n\n\
         | artifact | wasm raw KB | wasm gzip KB | JS raw KB | JS gzip KB | wasm + JS gzip KB |\n|---|--:|--:|--:|--:|--:|\n",
    );
    for (what, dir, build) in parts {
        if !dir.is_dir() {
            let _ = writeln!(t, "| {what} | not built: run `{build}` | | | | |");
            continue;
        }
        let (wasm, wasm_gz) = measure(&dir, ".wasm")?;
        let (js, js_gz) = measure(&dir, ".js")?;
        let _ = writeln!(t, "| {what} | {} | {} | {} | {} | {} |", kb(wasm), kb(wasm_gz), kb(js), kb(js_gz), kb(wasm_gz + js_gz));
    }
    Ok(t)
}
