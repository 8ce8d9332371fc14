// The askuser panel: the inbox beside the embed package's dialog (the same core, keys,
// tabs, notes, previews and approval view as the page). It gets the waiting sets from the
// extension host by message and sends answers back the same way: it never reaches the
// bridge itself. Agent text is only ever set as text.
import init, { mountDialog } from "./askuser.js";

const vscode = acquireVsCodeApi();
const list = document.getElementById("sets");
const dialog = document.getElementById("dialog");
const actions = document.getElementById("actions");
const statusLine = document.getElementById("status");
const wasm = document.querySelector("script[data-wasm]").dataset.wasm;

/** Waiting sets, oldest first, and the one shown. */
let records = [];
let current;
let handle;
/** Ids answered or declined here: when they leave, they were not answered elsewhere. */
const mine = new Set();

function title(r) {
  const q = r.request.questions[0];
  return q ? q.header || q.question : r.id;
}

function agent(r) {
  return r.request.agent?.name || "agent";
}

function renderList() {
  list.replaceChildren(
    ...records.map((r) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "set";
      if (r.id === current) b.setAttribute("aria-current", "true");
      const who = document.createElement("span");
      who.className = "agent";
      who.textContent = agent(r);
      const what = document.createElement("span");
      what.className = "what";
      what.textContent = title(r);
      b.append(who, what);
      b.addEventListener("click", () => show(r.id));
      li.append(b);
      return li;
    }),
  );
  if (!records.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "No questions are waiting.";
    list.append(li);
  }
}

function unmount() {
  handle?.unmount();
  handle = undefined;
  actions.replaceChildren();
}

/** Shows set `id` in the dialog (which takes the focus, so its keys work at once). */
function show(id) {
  const r = records.find((x) => x.id === id);
  unmount();
  current = r?.id;
  renderList();
  if (!r) return;
  if (r.edit) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = "Show in the diff view";
    b.addEventListener("click", () => vscode.postMessage({ type: "diff", id: r.id }));
    actions.append(b);
  }
  handle = mountDialog(dialog, r.request, {
    styles: false,
    onAnswer: (answers) => {
      mine.add(r.id);
      vscode.postMessage({ type: "answer", id: r.id, answers });
    },
    onCancel: (chat) => {
      mine.add(r.id);
      vscode.postMessage({ type: "cancel", id: r.id, chat });
    },
  });
  vscode.postMessage({ type: "shown", id: r.id });
}

// The dialog needs its wasm: what comes before (the host sends the sets every second) is
// dropped, and "ready" asks for them again.
await init({ module_or_path: wasm });

window.addEventListener("message", (e) => {
  const m = e.data;
  if (m.type === "records") {
    const had = current;
    records = m.records;
    if (m.focus && records.some((r) => r.id === m.focus)) {
      statusLine.textContent = "";
      show(m.focus);
    } else if (had && !records.some((r) => r.id === had)) {
      // Answered elsewhere (or withdrawn): it leaves, and the next one comes.
      statusLine.textContent = mine.has(had) ? "Sent." : "That question set was answered elsewhere.";
      show(records[0]?.id);
    } else if (!had && records.length) {
      show(records[0].id);
    } else renderList();
  } else if (m.type === "sent") {
    if (m.ok) {
      statusLine.textContent = "Sent.";
      records = records.filter((r) => r.id !== m.id);
      if (current === m.id) show(records[0]?.id);
    } else {
      mine.delete(m.id);
      statusLine.textContent = `Not sent: ${m.message}`;
    }
  }
});

vscode.postMessage({ type: "ready" });
