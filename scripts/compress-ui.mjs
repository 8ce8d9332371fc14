// Precompresses the built web UI so the bridge serves it compressed without compressing
// per request (scripts/build-ui runs it on crates/askuser-bridge/ui): beside each compressible
// file over 1 KiB, NAME.br (brotli, quality 11) and NAME.gz (gzip, level 9), each kept
// only when smaller. The output depends only on the input and Node's zlib, so the
// committed UI stays what its sources build. index.html is left out: the binary serves
// it changed (its loader moved into askuser-init.js by build.rs), and it is small.
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const dir = process.argv[2];
const compressible = /\.(js|wasm|css|svg|json|webmanifest)$/;
for (const name of readdirSync(dir)) {
  if (name.endsWith(".br") || name.endsWith(".gz")) rmSync(join(dir, name));
}
for (const name of readdirSync(dir).sort()) {
  if (!compressible.test(name)) continue;
  const bytes = readFileSync(join(dir, name));
  if (bytes.length < 1024) continue;
  const br = brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
  const gz = gzipSync(bytes, { level: 9 });
  const sizes = [];
  for (const [ext, packed] of [["br", br], ["gz", gz]]) {
    if (packed.length < bytes.length) {
      writeFileSync(join(dir, `${name}.${ext}`), packed);
      sizes.push(`${ext} ${packed.length}`);
    }
  }
  console.error(`compress-ui: ${name} ${bytes.length} bytes -> ${sizes.join(", ") || "kept as is"}`);
}
