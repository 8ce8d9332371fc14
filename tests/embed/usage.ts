// Type-checked with tsc (scripts/test) against the built package's askuser.d.ts: every
// function and payload as a host page would use them. `@ts-expect-error` lines prove
// the types refuse mistakes (tsc fails if such a line compiles).
import init, {
  normalize, validate, formatResult, mountDialog, connect, dialogStyles, Dialog,
  type AnyRequest, type AskResult, type AskuserError, type CanonicalRequest, type Connection,
  type DialogState, type Effect, type KeyOutcome, type MountedDialog, type Selection, type Validated,
  type AskedDetail, type ClaudeResult,
} from "../../target/embed-pkg/askuser.js";
// @ts-expect-error: wasm-streams' stream adapters (linked by Leptos) are not askuser's API
import type { IntoUnderlyingSource } from "../../target/embed-pkg/askuser.js";

export async function ide(panel: HTMLElement): Promise<void> {
  await init();

  // normalize / validate: any dialect in, the canonical request out.
  const opal: AnyRequest = { question: "Deploy now?", choices: ["Yes", "No"] };
  const request: CanonicalRequest = normalize(opal);
  const multi: boolean = request.questions[0].multiSelect;
  const fromText = normalize('{"question": "Which?", "follow_up": ["A", {"answer": "B"}]}');
  const checked: Validated = validate(request, { profile: "claude-code" });
  const dialect: "claude" | "pi" | "opal" | "roo" = checked.dialect;
  const warned: string[] = validate(fromText).warnings.map((w) => `${w.path}: ${w.message}`);
  // @ts-expect-error: the profile is one of two names
  validate(request, { profile: "strict" });
  try {
    normalize({ questions: [] });
  } catch (e) {
    const lines: string[] = (e as AskuserError).errors.map((x) => x.path);
    console.log(lines, (e as AskuserError).message);
  }

  // formatResult
  const result: AskResult = {
    id: "q-1", status: "answered", answered: true, answeredAt: 2000,
    answers: [{ question: "Deploy now?", answer: "Yes", selectedOptions: ["Yes"], custom: null, wasCustom: false }],
  };
  const claude = formatResult(result, "claude") as ClaudeResult;
  const sentence: string = claude.message;
  const text = formatResult(result, "text");
  // @ts-expect-error: not a format
  formatResult(result, "xml");
  // @ts-expect-error: a result needs its status
  formatResult({ id: "q-1" }, "pi");

  // new Dialog: the state machine for an IDE that draws its own UI.
  const dialog = new Dialog(request, {
    viewport: 5,
    onSubmit: (answers: Selection[]) => console.log(answers[0].selected, answers[0].custom),
    onCancel: () => console.log("declined"),
  });
  const outcome: KeyOutcome = dialog.key("ArrowDown");
  const effects: Effect[] = dialog.event({ type: "pick", index: 1 });
  for (const effect of [...outcome.effects, ...effects]) {
    if (effect.type === "submitted") console.log(effect.answers.length);
  }
  // @ts-expect-error: pick needs an index
  dialog.event({ type: "pick" });
  const state: DialogState = dialog.state();
  const focused = state.rows.find((r) => r.focused)?.label;
  const scroll: number = state.window.below;
  const prompt: string | undefined = state.prompt?.text;
  const done: "submitted" | "cancelled" | null = dialog.done;
  const resumed = new Dialog(request, { draft: dialog.draft() });
  resumed.free();

  // mountDialog: the same dialog as the askuser page, in the host's element.
  const mounted: MountedDialog = mountDialog(panel, request, {
    onAnswer: (answers) => console.log(answers.map((a) => a.selected ?? [])),
    onCancel: () => mounted.unmount(),
  });
  const css: string = dialogStyles();
  const open: boolean = mounted.mounted;

  // connect: the bridge's messages as askuser:* events.
  const conn: Connection = connect("http://127.0.0.1:7823", "token", panel);
  window.addEventListener("askuser:asked", (e) => {
    const detail: AskedDetail = e.detail;
    const id: string = detail.question.id;
    conn.answer(id, [{ selected: ["Yes"] }]);
  });
  window.addEventListener("askuser:answered", (e) => console.log(e.detail.result.status, e.detail.by));
  window.addEventListener("askuser:connection", (e) => console.log(e.detail.state === "open", conn.isOpen, conn.queued));
  const sent: boolean = conn.cancel("q-2");
  const chatted: boolean = conn.cancel("q-3", true);
  window.addEventListener("askuser:history", (e) => console.log(e.detail.records.length, e.detail.more === true));
  const paged: boolean = conn.history("database", 0, 20);
  conn.close();
  const other = connect("http://127.0.0.1:7823/#token=t", "");
  other.close();

  console.log(multi, dialect, warned, sentence, text, focused, scroll, prompt, done, css, open, sent, chatted, paged);
}
