// `askuser mcp` driven by the official MCP TypeScript SDK, the one Claude Code, Cursor
// and most Codex-style hosts build on. Each test starts a real `askuser serve` on
// 127.0.0.1:0 with its own data directory, launches `askuser mcp` through the SDK's stdio
// transport, and answers through the bridge's HTTP API as a browser would.
//
// Run: scripts/mcp-ts-test (installs the SDK; ASKUSER_BIN picks the binary).

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ErrorCode } from "@modelcontextprotocol/sdk/types.js";

import { ASKUSER, bridge, sleep } from "./bridge.mjs";

/** An MCP host: the SDK's Client over stdio, running `askuser mcp`. */
async function host(t, b, { args = [], capabilities = {} } = {}) {
  const transport = new StdioClientTransport({ command: ASKUSER, args: ["mcp", "--data-dir", b.dir, ...args], stderr: "ignore" });
  const client = new Client({ name: "ts-sdk-host", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return { client, transport };
}

const deploy = { question: "Deploy now?", choices: ["Yes", "No"] };

describe("askuser mcp with the official TypeScript SDK", { concurrency: true }, () => {
  test("lists ask_user with its schemas", async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b);
    const { tools } = await client.listTools();
    assert.equal(tools.length, 1);
    assert.equal(tools[0].name, "ask_user");
    assert.equal(tools[0].inputSchema.minProperties, 1);
    assert.ok(tools[0].outputSchema.properties.status.enum.includes("pending"));
  });

  test("a call answered in the inbox returns the answer, validated against the outputSchema", async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b);
    const call = client.callTool({ name: "ask_user", arguments: { questions: [{ question: "Which database?", options: [{ label: "PostgreSQL" }, { label: "SQLite" }] }], metadata: { source: "ts" } } });
    const [q] = await b.pending();
    await b.answer(q.id, ["SQLite"]);
    const r = await call;
    assert.equal(r.structuredContent.status, "answered");
    assert.equal(r.structuredContent.answers[0].answer, "SQLite");
    assert.deepEqual(r.structuredContent.metadata, { source: "ts" });
    assert.match(r.content[0].text, /"Which database\?"="SQLite"/);
  });

  test("a 70 s person with the SDK's default 60 s timeout still gets the answer to the model", { timeout: 120000 }, async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b);
    const started = Date.now();
    const call = client.callTool({ name: "ask_user", arguments: deploy }).then(
      () => assert.fail("the SDK's default timeout should end this call"),
      (e) => e,
    );
    const [q] = await b.pending();
    const error = await call;
    assert.equal(error.code, ErrorCode.RequestTimeout, String(error));
    assert.ok(Date.now() - started >= 59000);
    assert.equal(await b.status(q.id), "pending", "a host's timeout is not the person's no");
    await sleep(Math.max(0, 70000 - (Date.now() - started)));
    await b.answer(q.id, ["Yes"]);
    const again = await client.callTool({ name: "ask_user", arguments: deploy });
    assert.equal(again.structuredContent.id, q.id, "the same question, resumed");
    assert.equal(again.structuredContent.answers[0].answer, "Yes");
  });

  test("an abort withdraws the question", async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b);
    const abort = new AbortController();
    const call = client.callTool({ name: "ask_user", arguments: deploy }, undefined, { signal: abort.signal }).catch((e) => e);
    const [q] = await b.pending();
    abort.abort();
    await call;
    for (let i = 0; i < 100 && (await b.status(q.id)) === "pending"; i++) await sleep(50);
    assert.equal(await b.status(q.id), "withdrawn");
  });

  test("--max-wait returns 'not answered yet' with the id, and {id} picks the answer up", async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b, { args: ["--max-wait", "2"] });
    const started = Date.now();
    const r = await client.callTool({ name: "ask_user", arguments: { question: "Name the service?" } });
    assert.ok(Date.now() - started >= 1900);
    assert.equal(r.structuredContent.status, "pending");
    const id = r.structuredContent.id;
    assert.ok(r.content[0].text.includes(`{"id": "${id}"}`), r.content[0].text);
    await b.answer(id, ["billing"]);
    const again = await client.callTool({ name: "ask_user", arguments: { id } });
    assert.equal(again.structuredContent.answers[0].answer, "billing");
  });

  test("elicitation: the host's own form races the inbox; the first answer wins", async (t) => {
    const b = await bridge(t);
    const { client } = await host(t, b, { capabilities: { elicitation: { form: {} } } });
    const forms = [];
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      forms.push(request.params);
      if (forms.length === 1) return { action: "accept", content: { q1: "No" } };
      // The second form waits for the person until the inbox answers and askuser withdraws it.
      await new Promise((resolve) => extra.signal.addEventListener("abort", resolve));
      return { action: "cancel" };
    });
    const first = await client.callTool({ name: "ask_user", arguments: deploy });
    assert.equal(first.structuredContent.answers[0].answer, "No", "answered in the host's form");
    assert.equal(forms[0].mode, "form");
    assert.deepEqual(forms[0].requestedSchema.properties.q1.oneOf.map((o) => o.const), ["Yes", "No"]);
    const second = client.callTool({ name: "ask_user", arguments: { question: "Really?", choices: ["Yes", "No"] } });
    const waiting = (await b.pending()).find((q) => q.request.questions[0].question === "Really?");
    await b.answer(waiting.id, ["Yes"]);
    assert.equal((await second).structuredContent.answers[0].answer, "Yes", "answered in the inbox");
    assert.equal(forms.length, 2);
  });

  test("the host closing (stdin, then SIGTERM) leaves the question answerable; {id} picks it up", async (t) => {
    const b = await bridge(t);
    const first = await host(t, b);
    first.client.callTool({ name: "ask_user", arguments: deploy }).catch(() => {});
    const [q] = await b.pending();
    await first.client.close();
    assert.equal(await b.status(q.id), "pending", "leaving is not withdrawing");
    await b.answer(q.id, ["Yes"]);
    const second = await host(t, b);
    const r = await second.client.callTool({ name: "ask_user", arguments: { id: q.id } });
    assert.equal(r.structuredContent.answers[0].answer, "Yes");
  });
});

describe("protocol hygiene, raw JSON-RPC", () => {
  test("bad lines and bad calls get the right JSON-RPC errors, duplicates a tool error", async (t) => {
    const b = await bridge(t);
    const proc = spawn(ASKUSER, ["mcp", "--data-dir", b.dir], { stdio: ["pipe", "pipe", "ignore"] });
    t.after(() => proc.kill("SIGKILL"));
    const replies = new Map();
    createInterface({ input: proc.stdout }).on("line", (line) => {
      const m = JSON.parse(line);
      replies.set(m.id ?? "null", m);
    });
    const send = (m) => proc.stdin.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
    const reply = async (id) => {
      for (let i = 0; i < 200 && !replies.has(id); i++) await sleep(25);
      assert.ok(replies.has(id), `a reply to ${id}`);
      return replies.get(id);
    };
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    await reply(1);
    send("{this is not json");
    assert.equal((await reply("null")).error.code, -32700);
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ask_user", arguments: [1, 2] } });
    assert.equal((await reply(2)).error.code, -32602);
    for (const [id, method] of [[3, "prompts/list"], [4, "resources/list"], [5, "no/such"]]) {
      send({ jsonrpc: "2.0", id, method });
      const r = await reply(id);
      assert.equal(r.error.code, -32601);
      assert.ok(r.error.message.includes(method), r.error.message);
    }
    send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "ask_user", arguments: { questions: [{ question: "Same?" }, { question: "Same?" }] } } });
    const dup = (await reply(6)).result;
    assert.equal(dup.isError, true);
    assert.match(dup.content[0].text, /repeats the text of question 1/);
    send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "ask_user", arguments: { question: "Pick", choices: ["A", "a"] } } });
    assert.match((await reply(7)).result.content[0].text, /repeats the label/);
    send({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "ask_user", arguments: { bogus: 1 } } });
    const keys = (await reply(8)).result.content[0].text;
    assert.ok(keys.includes('"bogus"') && !keys.includes('"agent"') && !keys.includes('"id"'), `only the model's own keys: ${keys}`);
  });
});
