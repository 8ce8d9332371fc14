// node --test editors/vscode/test: what the extension shows and offers, without an editor.
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { plain, commandFits, proposedText } = require("../logic");
const { fromBridgeFile, normalFingerprint } = require("../bridge");

test("agent text in a notification makes no link and keeps one line", () => {
  assert.strictEqual(plain("see [this](command:workbench.action.terminal.new)\nnow"), "see [this] (command:workbench.action.terminal.new) now");
});

test("Allow goes beside a command only when the notification shows it whole", () => {
  assert.ok(commandFits("cargo test --workspace"));
  assert.ok(!commandFits("rm -rf build\necho done"), "two lines");
  assert.ok(!commandFits("rm -rf \u202eemos"), "a bidi override");
  assert.ok(!commandFits("ls\u200b -la"), "a zero-width space");
  assert.ok(!commandFits("x".repeat(601)), "over 600 characters");
  assert.ok(!commandFits("echo [a](command:x)"), "a link");
});

function file(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "askuser-logic-"));
  const f = path.join(dir, "db.rs");
  if (text !== undefined) fs.writeFileSync(f, text);
  return { dir, f };
}

test("an edit's proposed file is the file with it made, as the agent's Edit makes it", () => {
  const { dir, f } = file("fn open() {\n    sqlite();\n}\n");
  const got = proposedText({ tool: "Edit", cwd: dir, input: { file_path: "db.rs", old_string: "sqlite()", new_string: "postgres($&)" } });
  assert.strictEqual(got.next, "fn open() {\n    postgres($&);\n}\n", "the new text is taken as it is ($& is no pattern)");
  assert.strictEqual(got.file, f);
  const multi = proposedText({ tool: "MultiEdit", input: { file_path: f, edits: [{ old_string: "open", new_string: "connect" }, { old_string: "sqlite", new_string: "pg" }] } });
  assert.strictEqual(multi.next, "fn connect() {\n    pg();\n}\n");
  const write = proposedText({ tool: "Write", input: { file_path: f, content: "new\n" } });
  assert.deepStrictEqual([write.current, write.next], ["fn open() {\n    sqlite();\n}\n", "new\n"]);
});

test("an edit that would not apply as shown is refused, not guessed", () => {
  const { f } = file("a\na\n");
  assert.match(proposedText({ tool: "Edit", input: { file_path: f, old_string: "b", new_string: "c" } }).message, /not in/);
  assert.match(proposedText({ tool: "Edit", input: { file_path: f, old_string: "a", new_string: "c" } }).message, /2 times/);
  assert.strictEqual(proposedText({ tool: "Edit", input: { file_path: f, old_string: "a", new_string: "c", replace_all: true } }).next, "c\nc\n");
  assert.match(proposedText({ tool: "Edit", input: { file_path: f, old_string: "", new_string: "c" } }).message, /exists/);
  assert.match(proposedText({ tool: "Edit", input: { file_path: "db.rs", old_string: "a", new_string: "c" } }).message, /relative/);
  const fresh = file();
  assert.strictEqual(proposedText({ tool: "Edit", input: { file_path: fresh.f, old_string: "", new_string: "new" } }).next, "new");
});

test("bridge.json is used only while the bridge that wrote it runs", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "askuser-bridge-"));
  assert.match(fromBridgeFile(dir).missing, /no bridge runs/);
  const write = (pid, lock) => {
    fs.writeFileSync(path.join(dir, "bridge.json"), JSON.stringify({ url: "http://127.0.0.1:7823/", token: "t", pid }));
    fs.writeFileSync(path.join(dir, "bridge.lock"), `${lock}\n`);
  };
  write(process.pid, process.pid);
  assert.deepStrictEqual(fromBridgeFile(dir), { url: "http://127.0.0.1:7823", token: "t", fingerprint: undefined });
  write(process.pid, process.pid + 1);
  assert.match(fromBridgeFile(dir).missing, /is not running/, "the lock names another bridge");
  write(2 ** 22 + 7, 2 ** 22 + 7);
  assert.match(fromBridgeFile(dir).missing, /is not running/, "no such process");
  fs.writeFileSync(path.join(dir, "bridge.json"), "{\"url\": 1}");
  assert.match(fromBridgeFile(dir).missing, /expected url, token and pid/);
});

test("a fingerprint is one however it is written", () => {
  const hex = "ab".repeat(32);
  const want = Array(32).fill("AB").join(":");
  assert.strictEqual(normalFingerprint(`sha256:${hex}`), want);
  assert.strictEqual(normalFingerprint(want.toLowerCase()), want);
});
