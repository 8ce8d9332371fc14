// End to end: headless Chromium loads the example IDE page (web/embed/) with the built
// package (target/embed-pkg, from scripts/build-embed) against a real bridge
// (target/debug/askuser serve). An agent asks over HTTP; the page hears askuser:asked,
// the dialog is answered by keyboard, and the agent's blocked request returns the answer.
// A click in the panel chooses and only Submit sends.
//
//   node tests/embed/e2e.mjs      (prints "e2e: N passed, 0 failed")
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { serve } from "../../web/embed/serve.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const { chromium } = createRequire(import.meta.url)(join(repo, ".tools/pw/node_modules/playwright-core"));
const bin = process.env.ASKUSER_BIN ?? join(repo, "target/debug/askuser");
for (const need of [bin, join(repo, "target/embed-pkg/askuser.js")]) {
  if (!existsSync(need)) {
    console.error(`e2e: ${need} is missing (cargo build -p askuser; scripts/build-embed)`);
    process.exit(2);
  }
}

let passed = 0;
const failures = [];
/** Runs one step; the steps build on each other, so after a failure the rest are skipped (and count as failed). */
async function check(name, body) {
  if (failures.length > 0) {
    failures.push(name);
    console.log(`skip ${name}`);
    return;
  }
  try {
    await body();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    failures.push(name);
    console.log(`FAIL ${name}\n     ${String(e?.stack ?? e).split("\n").join("\n     ")}`);
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/** Starts the bridge; resolves to {url, token, child} from its first `askuser: open URL/#token=TOKEN` line. */
function startBridge(dataDir, origin) {
  const child = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--allow-origin", origin],
    { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the bridge printed no address within 20 s")), 20_000);
    child.on("exit", (code) => reject(new Error(`the bridge exited with ${code}`)));
    createInterface({ input: child.stderr }).on("line", (line) => {
      const m = line.match(/^askuser: open (\S+)\/#token=(\S+)$/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], token: m[2], child });
      }
    });
  });
}

const dataDir = mkdtempSync(join(tmpdir(), "askuser-e2e-"));
const { server, origin } = await serve();
let bridge;
let browser;
const watchdog = setTimeout(() => {
  console.log("e2e: timed out after 120 s");
  process.exitCode = 1;
  cleanup().finally(() => process.exit(1));
}, 120_000);

async function cleanup() {
  await browser?.close().catch(() => {});
  const child = bridge?.child;
  if (child && child.exitCode === null && child.signalCode === null) {
    // The bridge writes its last files as it stops: remove the directory after that.
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

try {
  bridge = await startBridge(dataDir, origin);
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });
  const dialog = page.locator("#panel [role=dialog]");

  /** Waits until the keyboard focus is inside the panel's dialog. */
  const focusInDialog = () => page.waitForFunction(() => document.activeElement?.closest("#panel [role=dialog]"), null, { timeout: 5000 });

  /** The agent: POST /v1/ask and block until the question is final. */
  const ask = (request) => fetch(`${bridge.url}/v1/ask?format=canonical`, {
    method: "POST",
    headers: { authorization: `Bearer ${bridge.token}`, "content-type": "application/json" },
    body: JSON.stringify(request),
  }).then(async (r) => ({ status: r.status, body: await r.json() }));

  await check("the page loads the package", async () => {
    await page.goto(`${origin}/`);
    await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
    // Record every askuser:* event the page receives.
    await page.evaluate(() => {
      window.__events = [];
      for (const name of ["snapshot", "asked", "answered", "withdrawn", "connection"]) {
        window.addEventListener(`askuser:${name}`, (e) => window.__events.push({ name, detail: e.detail }));
      }
    });
  });

  await check("an invalid request in the editor lists every problem", async () => {
    await page.fill("#request", JSON.stringify({ questions: [{ question: "", options: [{ label: "" }] }] }));
    await page.click("#show");
    const text = await page.textContent("#output");
    assert(text.includes("questions[0].question: ") && text.includes("questions[0].options[0].label: "), text);
    assert(await dialog.count() === 0, "no dialog for an invalid request");
  });

  await check("a request from the editor is answered in the panel by keyboard", async () => {
    await page.fill("#request", JSON.stringify({ question: "Deploy now?", choices: ["Yes", "No"] }));
    await page.click("#show");
    await dialog.waitFor();
    assert((await dialog.textContent()).includes("Deploy now?"), "the question is shown");
    await focusInDialog();
    await page.keyboard.press("2");
    await page.waitForFunction(() => document.querySelector("#output").textContent.startsWith("Answered"));
    const text = await page.textContent("#output");
    assert(text === 'Answered: [{"selected":["No"]}]', text);
    assert(await dialog.count() === 0, "the panel is cleared");
  });

  await check("a click in the panel chooses, another click changes it, and only Submit sends", async () => {
    await page.fill("#request", JSON.stringify({ question: "Which API?", choices: ["v1", "v2", "v3"] }));
    await page.click("#show");
    await dialog.waitFor();
    const row = (label) => dialog.locator("[role=radio]", { hasText: label });
    await row("v2").click();
    await row("v3").click();
    await page.waitForTimeout(200);
    assert(!(await page.textContent("#output")).startsWith("Answered"), "a click sent the answer");
    assert(await row("v3").getAttribute("aria-checked") === "true", "v3 is shown as chosen");
    assert(await row("v2").getAttribute("aria-checked") === "false", "v2 is no longer chosen");
    await dialog.locator("[data-action=enter]").click();
    await page.waitForFunction(() => document.querySelector("#output").textContent.startsWith("Answered"));
    const text = await page.textContent("#output");
    assert(text === 'Answered: [{"selected":["v3"]}]', text);
  });

  await check("the page connects to the bridge", async () => {
    await page.fill("#bridge-url", bridge.url);
    await page.fill("#bridge-token", bridge.token);
    await page.click("#connect");
    await page.waitForFunction(() => document.querySelector("#status").textContent === "open", null, { timeout: 10_000 });
    await page.waitForFunction(() => window.__events.some((e) => e.name === "snapshot"));
  });

  await check("an agent's question arrives as askuser:asked, is answered by keyboard, and the agent gets the answer", async () => {
    const agent = ask({ questions: [{ question: "Which database?", header: "DB",
      options: [{ label: "PostgreSQL" }, { label: "SQLite" }] }], metadata: { from: "e2e" } });
    await page.waitForFunction(() => window.__events.some((e) => e.name === "asked"), null, { timeout: 10_000 });
    const asked = await page.evaluate(() => window.__events.find((e) => e.name === "asked").detail);
    assert(asked.type === "asked" && asked.question.request.questions[0].question === "Which database?", JSON.stringify(asked));
    await dialog.waitFor();
    await focusInDialog();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    const { status, body } = await agent;
    assert(status === 200, `HTTP ${status}: ${JSON.stringify(body)}`);
    assert(body.status === "answered" && body.answered === true, JSON.stringify(body));
    assert(body.id === asked.question.id, "the same question");
    assert(JSON.stringify(body.answers[0].answer) === '"SQLite"' && body.answers[0].selectedOptions[0] === "SQLite", JSON.stringify(body));
    assert(body.metadata?.from === "e2e", "metadata comes back");
    await page.waitForFunction((id) => window.__events.some((e) => e.name === "answered" && e.detail.id === id), asked.question.id);
    assert(await dialog.count() === 0, "the panel is cleared once answered");
  });

  await check("Escape in the panel declines, and the agent is told", async () => {
    const agent = ask({ question: "Anything else?", choices: ["No"] });
    await dialog.waitFor({ timeout: 10_000 });
    await focusInDialog();
    await page.keyboard.press("Escape");
    const { status, body } = await agent;
    assert(status === 200 && body.status === "cancelled" && body.answered === false, `HTTP ${status}: ${JSON.stringify(body)}`);
  });

  await check("the page logged no errors", async () => {
    assert(pageErrors.length === 0, pageErrors.join("\n"));
  });
} catch (e) {
  failures.push(`setup: ${e?.message ?? e}`);
  console.log(`FAIL setup\n     ${e?.stack ?? e}`);
} finally {
  clearTimeout(watchdog);
  await cleanup();
}

console.log(`e2e: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
