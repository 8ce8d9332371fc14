// `askuser mcp` in both eras of MCP, driven by the TypeScript SDK v2 client
// (`@modelcontextprotocol/client`), in its three modes: `auto` (it probes `server/discover`
// on a second, throwaway copy of the server command, then speaks 2026-07-28 to the real
// one: no `initialize`, a `_meta` envelope on every request), pinned to 2026-07-28 (the
// same probe; no fallback), and legacy (`initialize` with 2025-11-25, the default).
//
// Run: scripts/mcp-ts-test (installs the SDKs; ASKUSER_BIN picks the binary).

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { ASKUSER, bridge, sleep } from "./bridge.mjs";

const MODES = {
  auto: { negotiation: { versionNegotiation: { mode: "auto" } }, version: "2026-07-28" },
  "2026-07-28": { negotiation: { versionNegotiation: { mode: { pin: "2026-07-28" } } }, version: "2026-07-28" },
  legacy: { negotiation: { supportedProtocolVersions: ["2025-11-25"] }, version: "2025-11-25" },
};
const deploy = { question: "Deploy now?", choices: ["Yes", "No"] };
const wait = { timeout: 120000 };

/** An MCP host on the v2 client in `mode`; `dialog` answers its elicitation forms. */
async function host(t, dir, mode, dialog) {
  const transport = new StdioClientTransport({ command: ASKUSER, args: ["mcp", "--data-dir", dir], stderr: "ignore" });
  const capabilities = dialog ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "ts-v2-host", version: "1.0.0" }, { capabilities, ...MODES[mode].negotiation });
  if (dialog) client.setRequestHandler("elicitation/create", dialog);
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  assert.equal(client.getNegotiatedProtocolVersion(), MODES[mode].version);
  return client;
}

for (const mode of Object.keys(MODES)) {
  describe(`the TypeScript SDK v2 client, ${mode}`, { concurrency: true }, () => {
    test("an answer in the inbox reaches the model", async (t) => {
      const b = await bridge(t);
      const client = await host(t, b.dir, mode);
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
      const client = await host(t, b.dir, mode);
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
      const client = await host(t, b.dir, mode, async (request) => {
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
      const client = await host(t, b.dir, mode, async () => ({ action: "decline" }));
      const call = client.callTool({ name: "ask_user", arguments: deploy }, wait);
      const [q] = await b.pending();
      await sleep(500);
      assert.equal(await b.status(q.id), "pending", "the host's own decline is not the person's");
      await b.answer(q.id, ["Yes"]);
      assert.equal((await call).structuredContent.answers[0].answer, "Yes");
    });
  });
}

test("connecting and listing start no bridge, though auto probes a copy of the server", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "askuser-ts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const mode of Object.keys(MODES)) {
    const client = await host(t, dir, mode);
    await client.listTools();
    await client.close();
  }
  assert.ok(!existsSync(join(dir, "bridge.json")), "no bridge was started");
});
