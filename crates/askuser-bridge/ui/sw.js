// askuser's service worker: keeps the page's own files (the app shell) so the page
// opens without the network, then reconnects by itself. The bridge's API (/v1/) and
// anything from another origin are never cached or touched.
const CACHE = "askuser-shell-2";

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    // The shell: the page as built (/index.html; "/" may have a question written in,
    // or a loader for a device the bridge does not know yet), kept as "/".
    const index = await fetch("/index.html", { cache: "no-cache", credentials: "omit" });
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
    // The page is asked for while this worker starts, not after (a slow phone's worker
    // takes a while to start, and the page may carry the waiting question).
    if (self.registration.navigationPreload) await self.registration.navigationPreload.enable();
    await self.clients.claim();
  })());
});

// The network first (a new version shows at once), the cache when it is unreachable;
// the app's hashed files from the cache first.
self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/v1/")) return;
  // The app's page is kept as "/" (a navigation to another file, an icon, is not the shell).
  const page = request.mode === "navigate" && (url.pathname === "/" || url.pathname === "/index.html");
  const key = page ? "/" : url.pathname;
  // A file named by its content's hash never changes: kept, it is served from here.
  const hashed = /-[0-9a-f]{16}(_bg)?\.[a-z]+$/.test(url.pathname);
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    if (hashed) {
      const kept = await cache.match(key);
      if (kept) return kept;
    }
    try {
      const fresh = (request.mode === "navigate" && (await event.preloadResponse)) || (await fetch(request));
      // A page with a question written in (no-store) is never kept: offline, the shell
      // shows the inbox the app kept instead.
      const keep = fresh.ok && !/no-store/.test(fresh.headers.get("cache-control") || "");
      if (keep) await cache.put(key, fresh.clone());
      return fresh;
    } catch (offline) {
      const kept = await cache.match(key);
      if (kept) return kept;
      throw offline;
    }
  })());
});

// Web Push (docs/notify.md). A question comes with up to two of its options as
// actions: tapping one answers through its single-use link (a POST to this bridge;
// the link is the credential, so no token lives here); tapping the notification opens
// the page on the question. A "close" message (answered or withdrawn anywhere) closes
// the question's notification. Agent text is only ever notification text.
self.addEventListener("push", (event) => {
  let message = null;
  try {
    message = event.data ? event.data.json() : null;
  } catch (notJson) {
    return;
  }
  if (message) event.waitUntil(onPush(message));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(act(event.notification, event.action));
});

async function onPush(m) {
  if (m.type === "close") {
    for (const n of await self.registration.getNotifications({ tag: m.tag })) n.close();
    return;
  }
  if (m.type !== "ask") return;
  const options = (m.actions || []).map((a, i) => ({ action: "o" + i, title: a.title, link: a.link }));
  const answer = { action: "open", title: "Answer…" };
  const max = Notification.maxActions || 2;
  // Every option if they fit; else as many as fit beside "Answer…".
  let shown = m.more ? [...options, answer] : options;
  if (shown.length > max) shown = [...options.slice(0, Math.max(0, max - 1)), answer];
  await self.registration.showNotification(m.title, {
    body: m.body,
    tag: m.tag,
    renotify: true,
    requireInteraction: true,
    icon: "/icon-192.png",
    actions: shown.map(({ action, title }) => ({ action, title })),
    data: { open: m.open, options: Object.fromEntries(options.map((o) => [o.action, { title: o.title, link: o.link }])) },
  });
}

// What a tap does: an option answers, anything else opens the page. Only this bridge's
// own paths are used, on this worker's origin.
async function act(notification, action) {
  const data = notification.data || {};
  const option = data.options && data.options[action];
  if (!option) return openPage(data.open);
  let outcome;
  try {
    const r = await fetch(ownPath(option.link), { method: "POST", credentials: "omit" });
    if (r.ok) return;
    outcome = r.status === 409 ? "It was answered or closed already." : "That answer link was used, has expired, or its device was revoked.";
  } catch (offline) {
    outcome = "The bridge cannot be reached; open askuser to answer.";
  }
  await self.registration.showNotification("Not sent: " + option.title, {
    body: outcome,
    tag: notification.tag + ":not-sent",
    icon: "/icon-192.png",
    data: { open: data.open },
  });
}

function ownPath(url) {
  const u = new URL(url || "/", self.location.origin);
  return new URL(u.pathname + u.hash, self.location.origin).href;
}

async function openPage(url) {
  const target = ownPath(url);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const w of windows) {
    if ("focus" in w) {
      if ("navigate" in w) await w.navigate(target);
      return w.focus();
    }
  }
  return self.clients.openWindow(target);
}
