//! Embeds the web UI the crate ships in `ui/` (built from `crates/askuser-web` by
//! `scripts/build-ui`, checked against its sources by `scripts/test`), or the one in
//! `$ASKUSER_UI_DIST`, so one binary is all a user needs and building it needs only
//! cargo. Without a built UI the bridge serves a page that says how to build it.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let dist = env::var_os("ASKUSER_UI_DIST").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("ui"));
    println!("cargo:rerun-if-env-changed=ASKUSER_UI_DIST");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    if dist.join("index.html").is_file() {
        collect(&dist, &dist, &mut files);
        println!("cargo:rerun-if-changed={}", dist.join("index.html").display());
    }
    if let Some(init) = externalize_loader(&mut files) {
        files.push(init);
    }
    files.sort();
    // Each file with the forms scripts/build-ui compressed it to (NAME.br, NAME.gz).
    let (packed, files): (Vec<_>, Vec<_>) = files.into_iter().partition(|(rel, _)| rel.ends_with(".br") || rel.ends_with(".gz"));
    let form = |abs: &str, ext: &str| {
        let path = format!("{abs}.{ext}");
        match packed.iter().any(|(_, p)| *p == path) {
            true => format!("Some(include_bytes!({path:?}) as &[u8])"),
            false => "None".to_owned(),
        }
    };
    let mut out = String::from("/// Files of the built web UI.\npub static FILES: &[Asset] = &[\n");
    for (rel, abs) in &files {
        let (br, gz) = (form(abs, "br"), form(abs, "gz"));
        out.push_str(&format!("    Asset {{ path: {rel:?}, bytes: include_bytes!({abs:?}), br: {br}, gz: {gz} }},\n"));
    }
    out.push_str("];\n");
    let target = Path::new(&env::var("OUT_DIR").unwrap()).join("ui_files.rs");
    fs::write(target, out).unwrap();
}

/// Trunk's loader is an inline module script, which the bridge's CSP (`script-src 'self'`)
/// refuses. Move it into `/askuser-init.js` and load that instead.
fn externalize_loader(files: &mut [(String, String)]) -> Option<(String, String)> {
    const OPEN: &str = "<script type=\"module\">";
    let entry = files.iter_mut().find(|(rel, _)| rel == "/index.html")?;
    let html = fs::read_to_string(&entry.1).unwrap();
    let (Some(start), Some(len)) = (html.find(OPEN), html.find(OPEN).and_then(|s| html[s..].find("</script>"))) else { return None };
    let script = &html[start + OPEN.len()..start + len];
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let page =
        format!("{}<script type=\"module\" src=\"/askuser-init.js\"></script>{}", &html[..start], &html[start + len + "</script>".len()..]);
    fs::write(out_dir.join("index.html"), page).unwrap();
    fs::write(out_dir.join("askuser-init.js"), script).unwrap();
    entry.1 = out_dir.join("index.html").to_string_lossy().into_owned();
    Some(("/askuser-init.js".into(), out_dir.join("askuser-init.js").to_string_lossy().into_owned()))
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            println!("cargo:rerun-if-changed={}", path.display());
            let abs = fs::canonicalize(&path).unwrap();
            files.push((format!("/{}", rel.to_string_lossy().replace('\\', "/")), abs.to_string_lossy().into_owned()));
        }
    }
}
