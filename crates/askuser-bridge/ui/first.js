// The page with a waiting question set written in by the bridge (its first.rs) loads
// this instead of the app's loader. The app (askuser-init.js and its wasm, ~300 KB)
// starts at once and takes over the form, unless the connection is slow or saving data
// and this device has not kept the app: then the form is the page. "Open the inbox"
// starts the app, and the page follows its question set: answered elsewhere, it shows
// the next one. Nothing here reads agent text.
const first = document.getElementById("askuser-first");
const form = first && first.querySelector("form[data-id]");
const open = first && first.querySelector(".askuser-first-open");
const start = () => import("/askuser-init.js");

// While the person presses or types in the form, it carries data-busy: the app waits
// before it takes the form over (its first.rs), so a tap never lands on a form that is
// being replaced.
if (first) {
  let idle;
  const busy = (ms) => {
    first.setAttribute("data-busy", "");
    clearTimeout(idle);
    if (ms) idle = setTimeout(() => first.removeAttribute("data-busy"), ms);
  };
  first.addEventListener("pointerdown", () => busy(0));
  for (const end of ["pointerup", "pointercancel"]) first.addEventListener(end, () => busy(400));
  for (const typing of ["keydown", "input"]) first.addEventListener(typing, () => busy(700));
}

// A round trip at least this long is a slow connection (Chromium's "3g" starts at 270 ms;
// the page's own request also holds the bridge's time, a few ms).
const SLOW_MS = 500;

// Whether the connection is slow or saving data: what the browser says of it (the
// Network Information API, Chromium only, whose estimate can lag and ignores DevTools'
// emulation), or what this page's own request took (Navigation Timing, every browser).
function slow() {
  const net = navigator.connection;
  if (net && (net.saveData || ["slow-2g", "2g", "3g"].includes(net.effectiveType))) return true;
  const [page] = performance.getEntriesByType("navigation");
  return !!page && page.responseStart - page.requestStart >= SLOW_MS;
}

// Whether the app is on this device already (the service worker's cache or the HTTP
// cache): then starting it costs nothing on the network.
async function kept() {
  const wasm = document.querySelector('meta[name="askuser-app"]')?.content;
  if (!wasm) return false;
  try {
    const response = await fetch(wasm, { cache: "only-if-cached", mode: "same-origin" });
    await response.body?.cancel();
    return response.ok;
  } catch (notKept) {
    return false;
  }
}

// Waits (GET /answer/ID holds up to 25 s) until the set is no longer waiting, then
// shows what waits next; stops once the app has taken the form over.
async function follow(id) {
  for (let pause = 1000; document.getElementById("askuser-first"); ) {
    let status = 0;
    try {
      status = (await fetch(`/answer/${encodeURIComponent(id)}`, { cache: "no-store" })).status;
    } catch (offline) {}
    if (!document.getElementById("askuser-first") || status === 401) return;
    if (status === 200 || status === 404) {
      location.replace(`/?closed=${encodeURIComponent(id)}`);
      return;
    }
    if (status !== 204) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 30000);
    }
  }
}

if (!form || !open || !slow() || (await kept())) {
  start();
} else {
  open.hidden = false;
  open.addEventListener("click", () => {
    open.disabled = true;
    open.textContent = "Opening…";
    start();
  }, { once: true });
  follow(form.dataset.id);
}
