// @ts-check
// Finding the bridge the way the askuser command line does, and talking HTTP to it.
// No editor API here: extension.js gives it the settings and the secret storage, and the
// tests of this file need only Node.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const http = require("http");
const https = require("https");
const tls = require("tls");

/** askuser's data directory: the setting, else $ASKUSER_DATA_DIR, else the platform's
 * (the `dirs` crate's data_dir joined with "askuser", as the bridge has it). */
function dataDir(setting) {
  if (setting) return setting;
  if (process.env.ASKUSER_DATA_DIR) return process.env.ASKUSER_DATA_DIR;
  const home = os.homedir();
  switch (process.platform) {
    case "win32":
      return path.join(process.env.APPDATA || path.join(home, "AppData", "Roaming"), "askuser");
    case "darwin":
      return path.join(home, "Library", "Application Support", "askuser");
    default:
      return path.join(process.env.XDG_DATA_HOME || path.join(home, ".local", "share"), "askuser");
  }
}

/** Whether process `pid` runs (one of another user's answers EPERM: it runs). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {NodeJS.ErrnoException} */ (e).code === "EPERM";
  }
}

/**
 * The bridge `bridge.json` in `dir` names, while the bridge that wrote it runs: its
 * `bridge.lock` names the same pid and that process is alive. A bridge that stopped
 * uncleanly leaves the file behind, and its port may be anyone's now: the token goes
 * nowhere then (the CLI also checks the lock is held, which Node cannot ask).
 * @returns {{url: string, token: string, fingerprint?: string} | {missing: string}}
 */
function fromBridgeFile(dir) {
  const file = path.join(dir, "bridge.json");
  let written;
  try {
    written = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    return { missing: `no bridge runs (${file}: ${/** @type {Error} */ (e).message})` };
  }
  if (typeof written.url !== "string" || typeof written.token !== "string" || typeof written.pid !== "number") {
    return { missing: `${file} is not what a bridge writes (expected url, token and pid)` };
  }
  let holder = "";
  try {
    holder = fs.readFileSync(path.join(dir, "bridge.lock"), "utf8").trim();
  } catch {
    // no lock: not running
  }
  if (holder !== String(written.pid) || !alive(written.pid)) {
    return { missing: `the bridge that wrote ${file} (pid ${written.pid}) is not running` };
  }
  return { url: written.url.replace(/\/+$/, ""), token: written.token, fingerprint: written.fingerprint || undefined };
}

/** The same fingerprint however it is written: upper case, colons, no `sha256:`. */
function normalFingerprint(f) {
  const hex = String(f).replace(/^sha256:/i, "").replace(/:/g, "").toUpperCase();
  return hex.match(/.{2}/g)?.join(":") ?? "";
}

class HttpError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

/**
 * One request to the bridge; the parsed JSON body, or an HttpError. An https bridge with
 * a pinned fingerprint is trusted for that certificate alone, checked before the token
 * is sent.
 * @param {{url: string, token: string, fingerprint?: string}} ep
 */
function request(ep, method, route, body, timeoutMs = 10000) {
  const url = new URL(ep.url + route);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  /** @type {http.RequestOptions & https.RequestOptions} */
  const options = {
    method,
    headers: { authorization: `Bearer ${ep.token}`, accept: "application/json" },
    timeout: timeoutMs,
  };
  if (data) Object.assign(options.headers, { "content-type": "application/json", "content-length": data.length });
  if (url.protocol === "https:" && ep.fingerprint) {
    const want = normalFingerprint(ep.fingerprint);
    options.agent = false;
    // @ts-ignore: the callback form of createConnection, so nothing is written before the check
    options.createConnection = (_opts, done) => {
      const socket = tls.connect({ host: url.hostname, port: Number(url.port || 443), servername: url.hostname, rejectUnauthorized: false });
      socket.once("secureConnect", () => {
        const got = socket.getPeerCertificate().fingerprint256;
        if (got === want) done(null, socket);
        else {
          socket.destroy();
          done(new Error(`the bridge at ${ep.url} presented certificate ${got}, not the pinned ${want}`), undefined);
        }
      });
      socket.once("error", (e) => done(e, undefined));
    };
  }
  return new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request(url, options, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = { message: text };
        }
        if ((res.statusCode || 0) >= 400) reject(new HttpError(res.statusCode, parsed));
        else resolve(parsed);
      });
    });
    req.on("timeout", () => req.destroy(new Error(`the bridge at ${ep.url} did not answer within ${timeoutMs / 1000} s`)));
    req.on("error", reject);
    if (data) req.write(data);
    req.end();
  });
}

module.exports = { dataDir, fromBridgeFile, request, HttpError, normalFingerprint };
