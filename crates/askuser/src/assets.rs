//! The web UI, embedded in the binary at build time (see `build.rs`), served with
//! strict headers. Without a built UI, a page says how to build one.

use axum::http::{header, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};

include!(concat!(env!("OUT_DIR"), "/ui_files.rs"));

/// Only the app's own script and wasm run; the page has no frames (agent previews are
/// text) and no page may frame the bridge.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-src 'none'; media-src 'self' data:; \
manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PLACEHOLDER: &str = "<!doctype html><meta charset=utf-8><title>askuser</title>\
<h1>askuser</h1><p>The bridge is running, but this binary was built without the web UI. \
Build it with <code>scripts/run</code> (which runs Trunk first), or answer from a terminal with \
<code>askuser pending</code> and <code>askuser answer</code>.</p>";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        "webmanifest" => "application/manifest+json",
        "wav" => "audio/wav",
        _ => "application/octet-stream",
    }
}

/// Whether the binary carries a built UI.
pub fn has_ui() -> bool {
    !FILES.is_empty()
}

pub async fn serve(uri: Uri) -> Response {
    let path = match uri.path() {
        "/" => "/index.html",
        p => p,
    };
    if let Some((_, bytes)) = FILES.iter().find(|(p, _)| *p == path) {
        // Unhashed names are checked each time; hashed ones never change.
        let fixed = ["/index.html", "/askuser-init.js", "/sw.js", "/pwa.js", "/manifest.webmanifest"];
        let cache = if fixed.contains(&path) { "no-cache" } else { "public, max-age=31536000, immutable" };
        return ([(header::CONTENT_TYPE, content_type(path)), (header::CACHE_CONTROL, cache)], *bytes).into_response();
    }
    if path == "/index.html" {
        return Html(PLACEHOLDER).into_response();
    }
    (StatusCode::NOT_FOUND, "not found").into_response()
}
