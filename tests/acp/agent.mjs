// A scripted ACP agent on the official ACP TypeScript SDK, for `askuser acp`
// (tests/integration/acp.rs). Its one turn asks what claude-agent-acp 0.101.0 (the
// Claude Code adapter on npm) asks: the `tool_call` and `session/request_permission`
// of a Bash and an Edit call, and Claude Code's AskUserQuestion as an
// `elicitation/create` form. The payloads are what that adapter's own functions
// (`AcpToolCallRenderer.toolCall`, `buildClaudePermissionPresentation`,
// `buildClaudePermissionOptions` with Claude Code's usual suggestions,
// `askUserQuestionsToCreateRequest`) make for these inputs.
//
// It reports what it got as lines `RESULT NAME JSON` in its reply, which `askuser
// acp` prints on stdout. `node agent.mjs bash` ends its turn after the Bash call,
// `node agent.mjs die` exits as soon as the session is made.
import { agent, methods, ndJsonStream } from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const mode = process.argv[2] ?? "turn";
let client = {};
let cwd = "/";

const QUESTIONS = [
  {
    question: "Which database?",
    header: "DB",
    multiSelect: false,
    options: [
      { label: "PostgreSQL", description: "Shared" },
      { label: "SQLite", description: "Embedded" },
    ],
  },
  {
    question: "Which checks?",
    header: "Checks",
    multiSelect: true,
    options: [
      { label: "Lint", description: "clippy" },
      { label: "Tests", description: "cargo test" },
    ],
  },
];

/// The answers Claude Code's AskUserQuestion reads from the form's content, as
/// claude-agent-acp folds them (its `applyAskElicitationResponse`): a pick is the
/// answer and the "Other" field its note; with no pick the "Other" text is the
/// answer; a multi-select joins picks and the "Other" text with ", ", quoting any
/// item that holds ", " or a quote.
function claudeAnswers(response) {
  if (response.action === "decline") return { answers: {} };
  if (response.action !== "accept") return "cancelled";
  const content = response.content ?? {};
  const answers = {};
  const annotations = {};
  QUESTIONS.forEach((q, i) => {
    const custom = typeof content[`question_${i}_custom`] === "string" ? content[`question_${i}_custom`].trim() : "";
    const value = content[`question_${i}`];
    const picks = (Array.isArray(value) ? value : [value]).filter((v) => ["string", "number", "boolean"].includes(typeof v)).map(String).filter((v) => v !== "");
    if (q.multiSelect) {
      const items = custom === "" ? picks : [...picks, custom];
      const text = items.map((item) => (item.includes(", ") || item.includes('"') ? JSON.stringify(item) : item)).join(", ");
      if (text !== "") answers[q.question] = text;
    } else if (picks.length === 0) {
      if (custom !== "") answers[q.question] = custom;
    } else {
      answers[q.question] = picks.join(", ");
      if (custom !== "") annotations[q.question] = { notes: custom };
    }
  });
  return Object.keys(annotations).length > 0 ? { answers, annotations } : { answers };
}

async function turn(ctx) {
  const sessionId = ctx.params.sessionId;
  const update = (u) => ctx.client.notify(methods.client.session.update, { sessionId, update: u });
  const say = (text) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  const report = (name, value) => say(`RESULT ${name} ${JSON.stringify(value)}\n`);
  const attempt = (promise) => promise.then((value) => ({ value }), (error) => ({ error: error.message ?? String(error) }));
  await report("prompt", ctx.params.prompt);
  await report("capabilities", client);
  await say("Working on it.\n");

  // Bash: the tool call, then the permission request (Claude Code suggested
  // `Bash(cargo test:*)`, hence the allow_always option).
  const bash = { command: "cargo test --all", description: "Run the tests" };
  const bashContent = [{ type: "content", content: { type: "text", text: "Run the tests" } }];
  await update({ _meta: { claudeCode: { toolName: "Bash" } }, toolCallId: "toolu_bash", sessionUpdate: "tool_call", name: "Bash", rawInput: bash, status: "pending", title: "cargo test --all", kind: "execute", content: bashContent });
  const allowed = await ctx.client.request(methods.client.session.requestPermission, {
    toolCall: { toolCallId: "toolu_bash", name: "Bash", status: "pending", rawInput: bash, title: "cargo test --all", kind: "execute", content: bashContent },
    options: [
      { optionId: "allow-once", name: "Yes", kind: "allow_once" },
      { optionId: "allow-with-updates", name: "Yes, and don't ask again for cargo test commands", kind: "allow_always" },
      { optionId: "reject", name: "No", kind: "reject_once" },
    ],
    sessionId,
  });
  await report("bash", allowed);
  if (mode === "bash") return { stopReason: "end_turn" };

  // Files through the client: in the session's folder, and outside it.
  const file = path.join(cwd, "notes.txt");
  await report("read", await attempt(ctx.client.request(methods.client.fs.readTextFile, { sessionId, path: file, line: 2, limit: 1 })));
  await report("write", await attempt(ctx.client.request(methods.client.fs.writeTextFile, { sessionId, path: path.join(cwd, "out", "made.txt"), content: "made by the agent\n" })));
  await report("outside", await attempt(ctx.client.request(methods.client.fs.readTextFile, { sessionId, path: "/etc/hostname" })));

  // Edit (Claude Code suggested accepting edits for the session).
  const target = path.join(cwd, "src", "main.rs");
  const edit = { file_path: target, old_string: "let a = 1;", new_string: "let a = 2;", replace_all: false };
  const diff = [{ type: "diff", path: target, oldText: "let a = 1;", newText: "let a = 2;" }];
  await update({ _meta: { claudeCode: { toolName: "Edit" } }, toolCallId: "toolu_edit", sessionUpdate: "tool_call", name: "Edit", rawInput: edit, status: "pending", title: "Edit src/main.rs", kind: "edit", content: diff, locations: [{ path: target }] });
  const edited = await ctx.client.request(methods.client.session.requestPermission, {
    toolCall: { toolCallId: "toolu_edit", name: "Edit", status: "pending", rawInput: edit, title: "Edit src/main.rs", kind: "edit", content: diff, locations: [{ path: target }] },
    options: [
      { optionId: "allow-once", name: "Yes", kind: "allow_once" },
      { optionId: "allow-with-updates", name: "Yes, allow all edits during this session", kind: "allow_always" },
      { optionId: "reject", name: "No", kind: "reject_once" },
    ],
    sessionId,
  });
  await report("edit", edited);

  // AskUserQuestion: offered only to a client with form elicitation.
  if (client.elicitation?.form) {
    await update({ _meta: { claudeCode: { toolName: "AskUserQuestion" } }, toolCallId: "toolu_ask", sessionUpdate: "tool_call", name: "AskUserQuestion", rawInput: { questions: QUESTIONS }, status: "pending", title: "Which database?", kind: "other", content: [{ type: "content", content: { type: "text", text: "Which database?" } }] });
    const option = (o) => ({ const: o.label, title: o.label, description: o.description });
    const form = await ctx.client.request(methods.client.elicitation.create, {
      mode: "form",
      sessionId,
      toolCallId: "toolu_ask",
      message: "Please answer the following questions.",
      requestedSchema: {
        type: "object",
        properties: {
          question_0: { type: "string", title: "DB", description: "Which database?", oneOf: QUESTIONS[0].options.map(option) },
          question_0_custom: { type: "string", title: "Other", description: "Type your own answer, or add a note to the option you chose above (optional)." },
          question_1: { type: "array", title: "Checks", description: "Which checks?", items: { anyOf: QUESTIONS[1].options.map(option) } },
          question_1_custom: { type: "string", title: "Other", description: "Type your own answer to add to your selection above (optional)." },
        },
      },
    });
    await report("questions", { response: form, claude: claudeAnswers(form) });
  }
  await say("Done.\n");
  return { stopReason: "end_turn" };
}

const app = agent({ name: "askuser-test-agent" })
  .onRequest(methods.agent.initialize, (ctx) => {
    client = ctx.params.clientCapabilities ?? {};
    return {
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "scripted-agent", title: "Scripted Agent", version: "1.0.0" },
      authMethods: [],
    };
  })
  .onRequest(methods.agent.session.new, (ctx) => {
    cwd = ctx.params.cwd;
    if (mode === "die") setImmediate(() => process.exit(3));
    return { sessionId: `sess-${process.pid}` };
  })
  .onRequest(methods.agent.session.prompt, turn)
  .onNotification(methods.agent.session.cancel, () => {});

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
