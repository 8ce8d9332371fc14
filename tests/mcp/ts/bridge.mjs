// A real `askuser serve` for the TypeScript SDK tests, in its own data directory.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const ASKUSER = process.env.ASKUSER_BIN ?? new URL("../../../target/debug/askuser", import.meta.url).pathname;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A real `askuser serve` in its own data directory. */
export async function bridge(t) {
  const dir = mkdtempSync(join(tmpdir(), "askuser-ts-"));
  const proc = spawn(ASKUSER, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dir], { stdio: ["ignore", "ignore", "pipe"] });
  const lines = createInterface({ input: proc.stderr });
  const first = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`askuser serve exited with ${code}`)));
  });
  lines.on("line", () => {});
  assert.match(first, /^askuser: open /);
  const [url, token] = first.replace("askuser: open ", "").split("/#token=");
  t.after(async () => {
    // The bridge writes its last files as it stops: remove the directory after that.
    const exited = new Promise((resolve) => (proc.exitCode !== null ? resolve() : proc.once("exit", resolve)));
    proc.kill("SIGTERM");
    await exited;
    // Never throw here: a failing hook would skip the others (and leave hosts running).
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (e) {
      console.error(`could not remove ${dir}: ${e}`);
    }
  });
  const http = async (method, path, body) => {
    const r = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json().catch(() => null) };
  };
  /** The pending questions, once at least `count` wait (within 10 s). */
  const pending = async (count = 1) => {
    for (let i = 0; i < 200; i++) {
      const r = await http("GET", "/v1/questions?status=pending");
      if (r.status === 200 && r.body.length >= count) return r.body;
      await sleep(50);
    }
    throw new Error("no pending question appeared");
  };
  /** Answers question `id`, once it is in the bridge (a task exists before its question is stored). */
  const answer = async (id, answers) => {
    for (let i = 0; i < 100; i++) {
      const r = await http("POST", `/v1/questions/${id}/answer`, { answers });
      if (r.status !== 404) return assert.equal(r.status, 200, JSON.stringify(r.body));
      await sleep(50);
    }
    assert.fail(`question ${id} never reached the bridge`);
  };
  const status = async (id) => (await http("GET", `/v1/questions/${id}`)).body.status;
  return { dir, url, token, http, pending, answer, status };
}

