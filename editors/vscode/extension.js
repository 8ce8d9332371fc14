// @ts-check
// askuser in VS Code and its family (Cursor, Windsurf, VSCodium, code-server).
//
// The extension host talks to the bridge (HTTP, from where the bridge runs: in code-server
// and Remote-SSH that is the remote machine) and relays to the panel by messages; the panel
// runs the embed package's wasm dialog and never talks to the bridge itself, so no browser
// Origin is involved. Waiting question sets are read every second (`GET
// /v1/questions?status=pending`): Node 20, on which code-server and the editors' hosts run,
// has no WebSocket client, and a second on loopback costs the bridge nothing.
"use strict";

const vscode = require("vscode");
const fs = require("fs");
const path = require("path");
const cp = require("child_process");
const { dataDir, fromBridgeFile, request, HttpError } = require("./bridge");
const { plain, commandFits, isEdit, proposedText, HIDDEN } = require("./logic");

const POLL_MS = 1000;
const SCHEME = "askuser-proposed";
const ALLOW = "Allow";
const ALWAYS = "Always allow";
const DENY = "Deny";
/** @type {vscode.ExtensionContext} */
let ctx;
/** @type {vscode.OutputChannel} */
let log;
/** @type {vscode.StatusBarItem} */
let status;
/** @type {{url: string, token: string, fingerprint?: string} | undefined} */
let endpoint;
/** Waiting sets by id, as last read. */
let waiting = new Map();
/** Ids a notification was raised for (or that were waiting at the first read). */
const notified = new Set();
let firstRead = true;
/** @type {vscode.WebviewPanel | undefined} */
let panel;
/** The id the panel should show first (Open on a notification). */
let panelFocus;
/** Proposed files by `askuser-proposed:` URI: the diff view's right side. */
const proposed = new Map();
const proposedChanged = new vscode.EventEmitter();
let timer;
let lastProblem = "";
let startedServe = false;
let toldInstall = false;
/** When this module was loaded: activation's own time is measured from here. */
const loadedAt = Date.now();

function say(line) {
  log.appendLine(`${new Date().toISOString()} ${line}`);
}

/** @param {vscode.ExtensionContext} context */
function activate(context) {
  ctx = context;
  log = vscode.window.createOutputChannel("askuser");
  status = vscode.window.createStatusBarItem("askuser.status", vscode.StatusBarAlignment.Left, 100);
  status.name = "askuser";
  status.command = "askuser.open";
  status.text = "$(comment-discussion) askuser";
  status.show();
  const command = (id, fn) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  command("askuser.open", (id) => openPanel(typeof id === "string" ? id : undefined));
  command("askuser.connect", connect);
  command("askuser.forget", forget);
  command("askuser.serve", () => serve(true));
  command("askuser.setupClaudeCode", () => setupHost("claude-code", "Claude Code"));
  command("askuser.setupCodex", () => setupHost("codex", "Codex"));
  command("askuser.setupGemini", () => setupHost("gemini-cli", "Gemini CLI"));
  command("askuser.allowEdit", (uri) => decideEdit(uri, ALLOW));
  command("askuser.alwaysAllowEdit", (uri) => decideEdit(uri, ALWAYS));
  command("askuser.denyEdit", (uri) => decideEdit(uri, DENY));
  context.subscriptions.push(
    log,
    status,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, {
      onDidChange: proposedChanged.event,
      provideTextDocumentContent: (uri) => proposed.get(uri.toString()) ?? "",
    }),
    vscode.window.onDidChangeActiveTextEditor(() => updateEditContext()),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("askuser") && restart()),
    { dispose: () => clearTimeout(timer) },
  );
  say(`activated in ${Date.now() - loadedAt} ms, ${Math.round(process.uptime() * 1000)} ms after the extension host started`);
  poll();
  return { waiting: () => [...waiting.keys()] };
}

function deactivate() {
  clearTimeout(timer);
}

function restart() {
  endpoint = undefined;
  clearTimeout(timer);
  poll();
}

// ----- finding the bridge -----

/** The bridge: the `askuser.url` setting with its token from the secret storage, else
 * $ASKUSER_URL and $ASKUSER_TOKEN, else `bridge.json` in the data directory. */
async function findBridge() {
  const cfg = vscode.workspace.getConfiguration("askuser");
  const url = (cfg.get("url") || "").trim() || process.env.ASKUSER_URL;
  if (url) {
    const token = (await ctx.secrets.get(secretKey(url))) || process.env.ASKUSER_TOKEN;
    if (!token) return { missing: `no token for ${url}: run "askuser: Connect to a bridge"` };
    return { url: url.replace(/\/+$/, ""), token, fingerprint: process.env.ASKUSER_CERT_FINGERPRINT };
  }
  return fromBridgeFile(dataDir(cfg.get("dataDir")));
}

function secretKey(url) {
  return `askuser.token ${url.replace(/\/+$/, "")}`;
}

async function connect() {
  const url = await vscode.window.showInputBox({
    title: "askuser: the bridge's address",
    prompt: "As `askuser serve` printed it",
    placeHolder: "http://127.0.0.1:7823",
    value: vscode.workspace.getConfiguration("askuser").get("url") || "",
    validateInput: (v) => (/^https?:\/\/[^\s/]+\/?$/.test(v.trim()) ? undefined : "an http:// or https:// address, such as http://127.0.0.1:7823"),
  });
  if (!url) return;
  const token = await vscode.window.showInputBox({ title: "askuser: its token", prompt: "A device or admin token (`askuser token`)", password: true });
  if (!token) return;
  await ctx.secrets.store(secretKey(url.trim()), token.trim());
  await vscode.workspace.getConfiguration("askuser").update("url", url.trim(), vscode.ConfigurationTarget.Global);
  restart();
}

async function forget() {
  const url = vscode.workspace.getConfiguration("askuser").get("url") || "";
  if (url) await ctx.secrets.delete(secretKey(url));
  await vscode.workspace.getConfiguration("askuser").update("url", undefined, vscode.ConfigurationTarget.Global);
  restart();
}

/** The askuser program, when it runs (`askuser --version`). */
function program() {
  const exe = vscode.workspace.getConfiguration("askuser").get("path") || "askuser";
  try {
    cp.execFileSync(exe, ["--version"], { stdio: "ignore", timeout: 5000 });
    return exe;
  } catch {
    return undefined;
  }
}

const INSTALL = "cargo install askuser (or npx -y askuser, or uvx --from askuser-mcp askuser)";

/** Starts `askuser serve` (detached: agents keep their bridge when the editor closes). */
async function serve(asked) {
  const exe = program();
  if (!exe) {
    const pick = await vscode.window.showWarningMessage(`askuser is not installed here: ${INSTALL}.`, "Copy the command");
    if (pick) await vscode.env.clipboard.writeText("cargo install askuser");
    return;
  }
  const cfg = vscode.workspace.getConfiguration("askuser");
  const args = ["serve"];
  if (cfg.get("dataDir")) args.push("--data-dir", cfg.get("dataDir"));
  say(`starting ${exe} ${args.join(" ")}`);
  const child = cp.spawn(exe, args, { detached: true, stdio: "ignore" });
  child.on("error", (e) => say(`askuser serve: ${e.message}`));
  child.unref();
  startedServe = true;
  if (asked) vscode.window.showInformationMessage("askuser: the bridge is starting.");
  restart();
}

/** `askuser setup HOST` for this workspace: the host's project file in the first folder. */
async function setupHost(host, name) {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const exe = program();
  if (!exe) return vscode.window.showWarningMessage(`askuser is not installed here: ${INSTALL}.`);
  if (!folder) return vscode.window.showWarningMessage(`Open a folder first: askuser sets ${name} up for a workspace.`);
  const root = folder.uri.fsPath;
  const files = {
    "claude-code": ["--config", path.join(root, ".mcp.json"), "--settings", path.join(root, ".claude", "settings.json")],
    // Codex reads its servers from the user's ~/.codex/config.toml ($CODEX_HOME) alone.
    codex: [],
    "gemini-cli": ["--config", path.join(root, ".gemini", "settings.json")],
  }[host];
  const args = ["setup", host, ...files];
  say(`${exe} ${args.join(" ")}`);
  cp.execFile(exe, args, { cwd: root, timeout: 30000 }, (err, stdout, stderr) => {
    if (stdout) say(stdout.trim());
    if (stderr) say(stderr.trim());
    if (err) vscode.window.showErrorMessage(`askuser setup ${host} failed: ${(stderr || err.message).trim()}`);
    else if (!files.length) vscode.window.showInformationMessage(`askuser: ${name} asks you through askuser (${name} keeps its servers per user, so in every workspace).`);
    else vscode.window.showInformationMessage(`askuser: ${name} asks you through askuser in this workspace (${files.filter((_, i) => i % 2).map((f) => path.relative(root, f)).join(", ")}).`);
  });
}

// ----- reading what waits -----

async function poll() {
  clearTimeout(timer);
  try {
    if (!endpoint) {
      const found = await findBridge();
      if ("missing" in found) throw Object.assign(new Error(found.missing), { noBridge: true });
      endpoint = found;
      say(`bridge at ${endpoint.url}`);
    }
    const records = await request(endpoint, "GET", "/v1/questions?status=pending&limit=1000");
    lastProblem = "";
    update(records);
    timer = setTimeout(poll, POLL_MS);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (message !== lastProblem) say(message);
    lastProblem = message;
    if (!(e instanceof HttpError)) endpoint = undefined; // look for it again: it may have moved
    status.text = "$(comment-discussion) askuser: offline";
    status.tooltip = `askuser: ${message}`;
    if (e.noBridge && !startedServe && !toldInstall && vscode.workspace.getConfiguration("askuser").get("startBridge")) {
      if (program()) {
        serve(false);
        return;
      }
      // Once a session: how to get it (the count says offline meanwhile).
      toldInstall = true;
      say(`askuser is not on this PATH (${process.env.PATH}): ${INSTALL}, or set askuser.path`);
      vscode.window.showInformationMessage(`askuser: no bridge runs, and askuser is not installed here: ${INSTALL}.`, "Copy the command").then((b) => b && vscode.env.clipboard.writeText("cargo install askuser"));
    }
    timer = setTimeout(poll, POLL_MS * 3);
  }
}

/** The waiting sets whose agent works in this workspace (an approval's folder inside it). */
function inWorkspace(record) {
  const cwd = record.request.approval?.cwd;
  if (!cwd) return false;
  return (vscode.workspace.workspaceFolders || []).some((f) => {
    const rel = path.relative(f.uri.fsPath, cwd);
    return !rel.startsWith("..") && !path.isAbsolute(rel);
  });
}

function update(records) {
  const now = new Map(records.map((r) => [r.id, r]));
  const gone = [...waiting.keys()].filter((id) => !now.has(id));
  const fresh = records.filter((r) => !notified.has(r.id));
  waiting = now;
  const here = records.filter(inWorkspace).length;
  status.text = `$(comment-discussion) ${records.length}`;
  status.tooltip = records.length
    ? `askuser: ${plural(records.length, "question set")} waiting${here ? ` (${here} from this workspace)` : ""}: open the inbox`
    : "askuser: nothing waits";
  status.accessibilityInformation = { label: `askuser: ${plural(records.length, "question set")} waiting` };
  for (const r of fresh) notified.add(r.id);
  if (firstRead) {
    firstRead = false;
    if (fresh.length > 1) {
      vscode.window.showInformationMessage(`askuser: ${plural(fresh.length, "question set")} waiting.`, "Open").then((b) => b && openPanel());
      fresh.length = 0;
    }
  }
  if (vscode.workspace.getConfiguration("askuser").get("notify")) fresh.forEach(notify);
  for (const id of gone) closeDiffs(id);
  postRecords();
}

function plural(n, what) {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

// ----- notifications -----

function agentName(record) {
  return record.request.agent?.name || "An agent";
}

async function notify(record) {
  const req = record.request;
  const ap = req.approval;
  const agent = plain(agentName(record));
  const shownAt = Date.now();
  let message;
  let buttons;
  if (ap && ap.tool !== "AskUserQuestion") {
    // Where it runs is part of what Allow allows: shown whole too, or no Allow.
    if (ap.tool === "Bash" && commandFits(ap.input?.command) && (!ap.cwd || commandFits(ap.cwd))) {
      message = `${agent} asks to run: ${ap.input.command}${ap.cwd ? ` (in ${ap.cwd})` : ""}`;
      buttons = [ALLOW, DENY, "Open"];
    } else if (ap.tool === "Bash") {
      message = `${agent} asks to run a command a notification cannot show whole (Open shows it)`;
      buttons = [DENY, "Open"];
    } else if (isEdit(ap)) {
      message = `${agent} asks to ${ap.tool === "Write" ? "write" : "edit"} ${plain(ap.input?.file_path || ap.input?.path || "a file")}`;
      buttons = ["Show diff", DENY, "Open"];
    } else {
      message = `${agent} asks to use ${plain(ap.tool)}`;
      buttons = [DENY, "Open"];
    }
  } else {
    const qs = req.questions || [];
    const q = qs[0] || { question: "", options: [] };
    message = qs.length > 1 ? `${agent} asks ${qs.length} questions: ${plain(q.question)} …` : `${agent} asks: ${plain(q.question)}`;
    const options = q.options || [];
    const fits =
      qs.length === 1 &&
      !q.multiSelect &&
      options.length >= 1 &&
      options.length <= 4 &&
      options.every((o) => !o.preview && o.label.length <= 32 && !HIDDEN.test(o.label));
    buttons = fits ? [...options.map((o) => o.label), "Open"] : ["Open"];
  }
  say(`notified ${record.id} ${Date.now() - record.createdAt} ms after it was asked`);
  const pick = await vscode.window.showInformationMessage(message, ...buttons);
  if (!pick) return;
  if (!waiting.has(record.id)) {
    vscode.window.showInformationMessage("askuser: that question set was answered elsewhere.");
    return;
  }
  if (pick === "Open") return openPanel(record.id);
  if (pick === "Show diff") return showDiff(record);
  say(`${record.id}: ${pick} from its notification ${Date.now() - shownAt} ms after it showed`);
  await answer(record.id, [{ selected: [pick] }]);
}

/** Answers set `id`; says so where it failed (another front end was first: 409). */
async function answer(id, answers) {
  try {
    await request(endpoint, "POST", `/v1/questions/${encodeURIComponent(id)}/answer`, { answers });
    waiting.delete(id);
    closeDiffs(id);
    postRecords();
    return { ok: true };
  } catch (e) {
    const message = e.status === 409 ? "it was answered elsewhere first" : e.message;
    vscode.window.showWarningMessage(`askuser: the answer was not taken: ${message}.`);
    return { ok: false, message };
  }
}

async function decline(id, chat) {
  try {
    await request(endpoint, "POST", `/v1/questions/${encodeURIComponent(id)}/cancel`, chat ? { chat: true } : {});
    waiting.delete(id);
    postRecords();
    return { ok: true };
  } catch (e) {
    return { ok: false, message: e.message };
  }
}

// ----- a proposed edit in the editor's own diff view -----

async function showDiff(record) {
  const ap = record.request.approval;
  const got = proposedText(ap);
  if (got instanceof Error) {
    vscode.window.showWarningMessage(`askuser: ${got.message}; the panel shows the agent's diff.`);
    return openPanel(record.id);
  }
  const right = vscode.Uri.from({ scheme: SCHEME, path: got.file, query: `id=${record.id}` });
  const left = fs.existsSync(got.file)
    ? vscode.Uri.file(got.file)
    : vscode.Uri.from({ scheme: SCHEME, path: got.file, query: `id=${record.id}&side=empty` });
  proposed.set(right.toString(), got.next);
  proposed.set(left.toString(), "");
  proposedChanged.fire(right);
  const title = `${path.basename(got.file)} ↔ ${plain(agentName(record))}'s edit (askuser)`;
  await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: false });
  updateEditContext();
}

/** The set id of the proposed edit `uri` (or the active editor) shows. */
function editId(uri) {
  const u = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!u || u.scheme !== SCHEME) return undefined;
  return new URLSearchParams(u.query).get("id") || undefined;
}

function updateEditContext() {
  const id = editId(undefined);
  vscode.commands.executeCommand("setContext", "askuser.proposedEdit", Boolean(id && waiting.has(id)));
}

async function decideEdit(uri, choice) {
  const id = editId(uri);
  const record = id && waiting.get(id);
  if (!record) return vscode.window.showWarningMessage("askuser: this edit no longer waits for an answer.");
  if (choice === ALWAYS) {
    // The rule is named whole before it is kept (the option's description says which).
    const option = record.request.questions[0].options.find((o) => o.label === ALWAYS);
    const sure = await vscode.window.showWarningMessage(
      "askuser: always allow?",
      { modal: true, detail: option?.description || "" },
      ALWAYS,
    );
    if (sure !== ALWAYS) return;
  }
  const done = await answer(id, [{ selected: [choice] }]);
  if (done.ok) vscode.window.setStatusBarMessage(`askuser: ${choice === DENY ? "denied" : "allowed"}.`, 4000);
}

/** Closes the diff views of set `id` (answered here or elsewhere). */
function closeDiffs(id) {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
  const ours = tabs.filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === SCHEME && new URLSearchParams(t.input.modified.query).get("id") === id);
  if (ours.length) vscode.window.tabGroups.close(ours);
  updateEditContext();
}

// ----- the panel -----

function openPanel(id) {
  panelFocus = id;
  if (panel) {
    panel.reveal();
    postRecords(true);
    return;
  }
  const media = vscode.Uri.joinPath(ctx.extensionUri, "media");
  panel = vscode.window.createWebviewPanel("askuser.inbox", "askuser", vscode.ViewColumn.Active, {
    enableScripts: true,
    retainContextWhenHidden: true,
    localResourceRoots: [media],
  });
  panel.iconPath = vscode.Uri.joinPath(media, "icon.png");
  const web = panel.webview;
  const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 16).toString(16)).join("");
  const src = (f) => web.asWebviewUri(vscode.Uri.joinPath(media, f)).toString();
  // 'wasm-unsafe-eval' lets the page instantiate the dialog's wasm, and nothing else;
  // connect-src lets init() fetch it from the extension's own files.
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' 'wasm-unsafe-eval' ${web.cspSource}`,
    `style-src ${web.cspSource}`,
    `img-src ${web.cspSource} data:`,
    `font-src ${web.cspSource}`,
    `connect-src ${web.cspSource}`,
  ].join("; ");
  web.html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${src("askuser.css")}">
<link rel="stylesheet" href="${src("panel.css")}">
<title>askuser</title></head>
<body>
<nav id="inbox" aria-label="Waiting question sets"><h2 id="inbox-title">Waiting</h2><ul id="sets" aria-labelledby="inbox-title"></ul></nav>
<main id="main"><p id="status" role="status" aria-live="polite"></p><div id="actions"></div><div id="dialog"></div></main>
<script type="module" nonce="${nonce}" src="${src("panel.js")}" data-wasm="${src("askuser_bg.wasm")}"></script>
</body></html>`;
  web.onDidReceiveMessage(async (m) => {
    if (m.type === "ready") postRecords(true);
    else if (m.type === "answer") web.postMessage({ type: "sent", id: m.id, ...(await answer(m.id, m.answers)) });
    else if (m.type === "cancel") web.postMessage({ type: "sent", id: m.id, ...(await decline(m.id, m.chat)) });
    else if (m.type === "diff" && waiting.has(m.id)) showDiff(waiting.get(m.id));
    else if (m.type === "shown") say(`panel shows ${m.id}`);
  });
  panel.onDidDispose(() => {
    panel = undefined;
    posted = "";
  });
}

/** What the panel was last sent: the same sets again (each second's read) are not resent. */
let posted = "";

function postRecords(again) {
  if (!panel) return;
  const ids = [...waiting.keys()].join(" ");
  if (ids === posted && !panelFocus && !again) return;
  posted = ids;
  const records = [...waiting.values()].map((r) => ({ ...r, edit: isEdit(r.request.approval) && !(proposedText(r.request.approval) instanceof Error) }));
  panel.webview.postMessage({ type: "records", records, focus: panelFocus });
  panelFocus = undefined;
}

module.exports = { activate, deactivate };
