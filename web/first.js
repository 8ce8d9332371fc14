// The page with a waiting question set written in by the bridge (its first.rs) loads
// this instead of the app's loader, and so does the page a device the bridge does not
// know yet opens (the link `askuser serve` prints, `/#token=…`): that one has no form,
// so on a slow connection this sends the token once (POST /v1/session?form), which
// makes the device known and answers with the form, drawn at once. The app (askuser-init.js and its wasm,
// ~300 KB) starts at once and takes over the form, unless the connection is slow or
// saving data and this device has not kept the app: then the form is the page. "Open
// the inbox" starts the app, and the page follows its question set: answered
// elsewhere, it shows the next one. Nothing here reads agent text: the form is the
// bridge's markup, its agent text escaped there, as in a page it writes.
const start = () => import("/askuser-init.js");

// The token as the app finds it (its bridge.rs, take_token): `#token=` in the address
// (kept in sessionStorage and taken out of the address bar, as the app does; the rest
// of the fragment stays), else the tab's or a paired device's.
function token() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    try {
      sessionStorage.setItem("askuser:token", given);
      fragment.delete("token");
      const rest = fragment.toString();
      history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
    } catch (storageOff) {}
    return given;
  }
  try {
    return sessionStorage.getItem("askuser:token") || localStorage.getItem("askuser:device-token");
  } catch (storageOff) {
    return null;
  }
}

// The form of the first waiting set, from the bridge, for a page that has none; null
// when nothing waits or the bridge cannot be asked (the app then says why).
async function fetched() {
  const key = token();
  if (!key) return null;
  try {
    const response = await fetch("/v1/session?form", { method: "POST", headers: { authorization: `Bearer ${key}` } });
    if (response.status !== 200) return null;
    const part = await response.text();
    document.querySelector("body > noscript")?.remove();
    document.body.insertAdjacentHTML("afterbegin", part);
    return document.getElementById("askuser-first");
  } catch (offline) {
    return null;
  }
}

// While the person presses or types in the form, it carries data-busy: the app waits
// before it takes the form over (its first.rs), so a tap never lands on a form that is
// being replaced.
function watchBusy(first) {
  if (!first) return;
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

// Whether this page's form has been sent: its own answer then closes the set, which is
// no news to follow (the bridge's reply to the form says "Sent.").
let sending = false;

// Waits (GET /answer/ID holds up to 25 s) until the set is no longer waiting, then
// shows what waits next; stops once the app has taken the form over or the form is sent.
async function follow(id) {
  for (let pause = 1000; document.getElementById("askuser-first"); ) {
    let status = 0;
    try {
      status = (await fetch(`/answer/${encodeURIComponent(id)}`, { cache: "no-store" })).status;
    } catch (offline) {}
    if (sending || !document.getElementById("askuser-first") || status === 401) return;
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

// A page the bridge wrote nothing into (a device it does not know yet), on a slow
// connection with no app kept here, asks for the form; elsewhere the app loads as fast
// as the form would. A question named in the address (`#q=ID`) is the app's to show.
const named = new URLSearchParams(location.hash.slice(1)).has("q");
const fast = !slow() || (await kept());
const first = document.getElementById("askuser-first") || (fast || named ? null : await fetched());
const form = first && first.querySelector("form[data-id]");
const open = first && first.querySelector(".askuser-first-open");
watchBusy(first);

if (!form || !open || fast) {
  start();
} else {
  open.hidden = false;
  open.addEventListener("click", () => {
    open.disabled = true;
    open.textContent = "Opening…";
    start();
  }, { once: true });
  form.addEventListener("submit", () => (sending = true));
  follow(form.dataset.id);
}
