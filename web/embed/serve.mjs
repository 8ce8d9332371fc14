// A tiny static server for this example: web/embed/ at /, the built package
// (target/embed-pkg, from scripts/build-embed) at /pkg/. Run it with
//   node web/embed/serve.mjs [port]
// then start a bridge that allows this origin:
//   askuser serve --allow-origin http://127.0.0.1:PORT
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript",
  ".wasm": "application/wasm", ".css": "text/css", ".json": "application/json", ".ts": "text/plain", ".md": "text/plain" };

/** Serves `root` at / and `pkg` at /pkg/ on 127.0.0.1:`port`; resolves to the server and its origin. */
export function serve({ root = here, pkg = join(here, "../../target/embed-pkg"), port = 0 } = {}) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const [dir, rest] = path.startsWith("/pkg/") ? [pkg, path.slice(5)] : [root, path === "/" ? "index.html" : path.slice(1)];
    const base = resolve(dir);
    const file = resolve(base, rest);
    if (!file.startsWith(base + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
      res.end(body);
    } catch {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    }
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => {
    resolve({ server, origin: `http://127.0.0.1:${server.address().port}` });
  }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { origin } = await serve({ port: Number(process.argv[2] ?? 8080) });
  console.log(`askuser embed example: ${origin}/ (start the bridge with --allow-origin ${origin})`);
}
