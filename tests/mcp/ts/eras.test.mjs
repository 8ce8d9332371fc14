// `askuser mcp` in both eras of MCP, driven by the TypeScript SDK v2 client
// (`@modelcontextprotocol/client`), in its three modes: `auto` (it probes `server/discover`
// on a second, throwaway copy of the server command, then speaks 2026-07-28 to the real
// one: no `initialize`, a `_meta` envelope on every request), pinned to 2026-07-28 (the
// same probe; no fallback), and legacy (`initialize` with 2025-11-25, the default).
//
// In 2026-07-28 a host that declares the tasks extension (SEP-2663) gets a task. The v2
// client has no tasks runtime (`callTool` refuses `resultType: "task"`), so these tests keep
// the task the transport brought and drive `tasks/get`, `tasks/update` and `tasks/cancel`
// themselves, as the extension's requester does.
//
// Run: scripts/mcp-ts-test (installs the SDKs; ASKUSER_BIN picks the binary).

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import * as z from "zod/v4";

import { ASKUSER, bridge, sleep } from "./bridge.mjs";

const MODES = {
  auto: { negotiation: { versionNegotiation: { mode: "auto" } }, version: "2026-07-28" },
  "2026-07-28": { negotiation: { versionNegotiation: { mode: { pin: "2026-07-28" } } }, version: "2026-07-28" },
  legacy: { negotiation: { supportedProtocolVersions: ["2025-11-25"] }, version: "2025-11-25" },
};
const deploy = { question: "Deploy now?", choices: ["Yes", "No"] };
const wait = { timeout: 120000 };

/** An MCP host on the v2 client in `mode`; `dialog` answers its elicitation forms. */
async function host(t, dir, mode, dialog, extra = {}) {
  const transport = new StdioClientTransport({ command: ASKUSER, args: ["mcp", "--data-dir", dir], stderr: "ignore" });
  const capabilities = { ...(dialog ? { elicitation: { form: {} } } : {}), ...extra };
  const client = new Client({ name: "ts-v2-host", version: "1.0.0" }, { capabilities, ...MODES[mode].negotiation });
  if (dialog) client.setRequestHandler("elicitation/create", dialog);
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  assert.equal(client.getNegotiatedProtocolVersion(), MODES[mode].version);
  return { client, transport };
}

// The client checks `resultType: "complete"` itself and hands the rest to the schema.
const Task = z.looseObject({ taskId: z.string(), status: z.string() });
const Ack = z.object({});

/**
 * A 2026-07-28 host that declares the tasks extension (and a dialog, with `dialog`):
 * `call()` returns the task that `ask_user` created, `poll()` its next state.
 */
async function taskHost(t, dir, mode, dialog) {
  const { client, transport } = await host(t, dir, mode, dialog, { extensions: { "io.modelcontextprotocol/tasks": {} } });
  const created = [];
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.result?.resultType === "task") created.push(message.result);
    inner?.(message, extra);
  };
  const call = async (args) => {
    const refused = await client.callTool({ name: "ask_user", arguments: args }, wait).catch((e) => e);
    assert.equal(refused.code, "UNSUPPORTED_RESULT_TYPE", "the v2 client has no tasks runtime");
    assert.equal(created.length, 1);
    return created[0];
  };
  const request = (method, params, schema = Ack) => client.request({ method, params }, schema);
  /** Polls the task until its status is not `status`. */
  const poll = async (task, status) => {
    for (let i = 0; i < 400; i++) {
      const now = await request("tasks/get", { taskId: task.taskId }, Task);
      if (now.status !== status) return now;
      await sleep(now.pollIntervalMs / 10);
    }
    throw new Error(`task ${task.taskId} stayed ${status}`);
  };
  return { call, request, poll };
}

for (const mode of Object.keys(MODES)) {
  describe(`the TypeScript SDK v2 client, ${mode}`, { concurrency: true }, () => {
    test("an answer in the inbox reaches the model", async (t) => {
      const b = await bridge(t);
      const { client } = await host(t, b.dir, mode);
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((x) => x.name), ["ask_user"]);
      const call = client.callTool({ name: "ask_user", arguments: deploy }, wait);
      const [q] = await b.pending();
      await b.answer(q.id, ["Yes"]);
      const r = await call;
      assert.equal(r.structuredContent.answers[0].answer, "Yes");
      assert.equal(r.structuredContent.message, r.content[0].text);
    });

    test("a decline in the inbox tells the model not to assume", async (t) => {
      const b = await bridge(t);
      const { client } = await host(t, b.dir, mode);
      const call = client.callTool({ name: "ask_user", arguments: deploy }, wait);
      const [q] = await b.pending();
      assert.equal((await b.http("POST", `/v1/questions/${q.id}/cancel`)).status, 200);
      const r = await call;
      assert.equal(r.structuredContent.status, "cancelled");
      assert.match(r.content[0].text, /Do not assume an answer/);
    });

    test("the host's own dialog answers, and the inbox hears where", async (t) => {
      const b = await bridge(t);
      const forms = [];
      const { client } = await host(t, b.dir, mode, async (request) => {
        forms.push(request.params);
        return { action: "accept", content: { q1: "No" } };
      });
      const r = await client.callTool({ name: "ask_user", arguments: deploy }, wait);
      assert.equal(forms.length, 1);
      assert.deepEqual(forms[0].requestedSchema.properties.q1.oneOf.map((o) => o.const), ["Yes", "No"]);
      assert.equal(r.structuredContent.answers[0].answer, "No");
      const [record] = (await b.http("GET", "/v1/questions?status=all")).body;
      assert.equal(record.status, "answered");
      assert.match(JSON.stringify(record), /own dialog/);
    });

    test("a host that declines its dialog at once waits for the inbox", async (t) => {
      const b = await bridge(t);
      const { client } = await host(t, b.dir, mode, async () => ({ action: "decline" }));
      const call = client.callTool({ name: "ask_user", arguments: deploy }, wait);
      const [q] = await b.pending();
      await sleep(500);
      assert.equal(await b.status(q.id), "pending", "the host's own decline is not the person's");
      await b.answer(q.id, ["Yes"]);
      assert.equal((await call).structuredContent.answers[0].answer, "Yes");
    });

    if (MODES[mode].version !== "2026-07-28") return;

    test("a task waits for the inbox and brings its answer", async (t) => {
      const b = await bridge(t);
      const h = await taskHost(t, b.dir, mode);
      const task = await h.call(deploy);
      const [q] = await b.pending();
      assert.equal(task.status, "working");
      assert.ok(task.taskId.startsWith(`${q.id}:`) && task.taskId.length > q.id.length + 16, task.taskId);
      assert.equal((await h.request("tasks/get", { taskId: task.taskId }, Task)).status, "working");
      await b.answer(q.id, ["Yes"]);
      const done = await h.poll(task, "working");
      assert.equal(done.status, "completed");
      assert.equal(done.result.structuredContent.answers[0].answer, "Yes");
    });

    test("a task's dialog is answered with tasks/update", async (t) => {
      const b = await bridge(t);
      const h = await taskHost(t, b.dir, mode, async () => assert.fail("a task's dialog is its input request"));
      const task = await h.call(deploy);
      const asking = await h.poll(task, "working");
      assert.equal(asking.status, "input_required");
      const form = asking.inputRequests.askuser;
      assert.equal(form.method, "elicitation/create");
      assert.deepEqual(form.params.requestedSchema.properties.q1.oneOf.map((o) => o.const), ["Yes", "No"]);
      await sleep(1100); // a person reads the question
      await h.request("tasks/update", { taskId: task.taskId, inputResponses: { askuser: { action: "accept", content: { q1: "No" } } } });
      const done = await h.poll(task, "input_required").then((s) => (s.status === "working" ? h.poll(task, "working") : s));
      assert.equal(done.status, "completed");
      assert.equal(done.result.structuredContent.answers[0].answer, "No");
      const [record] = (await b.http("GET", "/v1/questions?status=all")).body;
      assert.match(JSON.stringify(record), /own dialog/);
    });

    test("cancelling a task withdraws its question", async (t) => {
      const b = await bridge(t);
      const h = await taskHost(t, b.dir, mode);
      const task = await h.call(deploy);
      const [q] = await b.pending();
      await h.request("tasks/cancel", { taskId: task.taskId });
      assert.equal((await h.request("tasks/get", { taskId: task.taskId }, Task)).status, "cancelled");
      assert.equal(await b.status(q.id), "withdrawn");
    });
  });
}

test("connecting and listing start no bridge, though auto probes a copy of the server", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "askuser-ts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const mode of Object.keys(MODES)) {
    const { client } = await host(t, dir, mode);
    await client.listTools();
    await client.close();
  }
  assert.ok(!existsSync(join(dir, "bridge.json")), "no bridge was started");
});
