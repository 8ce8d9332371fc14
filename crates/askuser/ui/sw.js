// askuser's service worker: keeps the page's own files (the app shell) so the page
// opens without the network, then reconnects by itself. The bridge's API (/v1/) and
// anything from another origin are never cached or touched.
const CACHE = "askuser-shell-1";

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const index = await fetch("/", { cache: "no-cache" });
    const html = await index.clone().text();
    // Every file the page names (style, icons, the init script, the app's JS and wasm).
    const named = [...html.matchAll(/(?:href|src)="(\/[^"#?]*)"/g)].map((m) => m[1]);
    await cache.put("/", index);
    await cache.addAll([...new Set(named.filter((p) => p !== "/"))]);
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// The network first (a new version shows at once), the cache when it is unreachable.
self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/v1/")) return;
  const key = request.mode === "navigate" ? "/" : url.pathname;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const fresh = await fetch(request);
      if (fresh.ok) await cache.put(key, fresh.clone());
      return fresh;
    } catch (offline) {
      const kept = await cache.match(key);
      if (kept) return kept;
      throw offline;
    }
  })());
});
