//! What a browser downloads: the web app Trunk built into `crates/askuser-bridge/ui/` (what the binary
//! embeds) and the embed package (`scripts/build-embed` → `target/embed-pkg`), each as
//! wasm and JS, raw, gzip (`gzip -9`) and brotli (quality 11, as `scripts/compress-ui.mjs`
//! makes the forms the bridge sends; computed by Node's zlib).

use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Brotli's best setting, as `scripts/compress-ui.mjs` uses it.
const BROTLI: &str = "const z = require('zlib'), b = require('fs').readFileSync(process.argv[1]); \
    process.stdout.write(String(z.brotliCompressSync(b, { params: { [z.constants.BROTLI_PARAM_QUALITY]: 11, \
    [z.constants.BROTLI_PARAM_LGWIN]: 24, [z.constants.BROTLI_PARAM_SIZE_HINT]: b.length } }).length))";

/// Raw, gzip and brotli bytes of the files in `dir` whose names end with `ext`.
fn measure(dir: &Path, ext: &str) -> anyhow::Result<(u64, u64, u64)> {
    let (mut raw, mut gz, mut br) = (0, 0, 0);
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
        let out = std::process::Command::new("node").args(["-e", BROTLI]).arg(&path).output().context("running node for brotli")?;
        if !out.status.success() {
            bail!("brotli of {} failed", path.display());
        }
        br += String::from_utf8_lossy(&out.stdout).parse::<u64>().context("node's brotli size")?;
    }
    Ok((raw, gz, br))
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
        "## Sizes (what a browser downloads; KB = 1,000 bytes, gzip -9, brotli 11)\n\n\
         | artifact | wasm raw KB | wasm gzip KB | wasm brotli KB | JS raw KB | JS gzip KB | wasm + JS gzip KB | wasm + JS brotli KB |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for (what, dir, build) in parts {
        if !dir.is_dir() {
            let _ = writeln!(t, "| {what} | not built: run `{build}` | | | | | | |");
            continue;
        }
        let (wasm, wasm_gz, wasm_br) = measure(&dir, ".wasm")?;
        let (js, js_gz, js_br) = measure(&dir, ".js")?;
        let _ = writeln!(
            t,
            "| {what} | {} | {} | {} | {} | {} | {} | {} |",
            kb(wasm),
            kb(wasm_gz),
            kb(wasm_br),
            kb(js),
            kb(js_gz),
            kb(wasm_gz + js_gz),
            kb(wasm_br + js_br)
        );
    }
    Ok(t)
}
