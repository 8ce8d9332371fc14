// Makes the page an installable app that opens offline (web/sw.js).
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").catch((e) => console.warn("askuser: no offline shell:", e));
}
