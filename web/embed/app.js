// The pretend IDE: plain JavaScript, no framework. It loads the askuser package, shows
// a request typed into the editor in the side panel, and shows a bridge's questions as
// they arrive through the askuser:* events. Agent text only ever goes into textContent.
import init, { normalize, validate, mountDialog, connect } from "./pkg/askuser.js";

const $ = (id) => document.getElementById(id);
const panel = $("panel");
let mounted = null;      // the MountedDialog in the panel
let showing = null;      // the bridge question id it shows, or null for the editor's request
let connection = null;
const pending = new Map(); // id -> question record

function show(text, isError = false) {
  $("output").textContent = text;
  $("output").classList.toggle("errors", isError);
}

function log(line) {
  const el = $("log");
  el.textContent = `${line}\n${el.textContent}`.slice(0, 5000);
}

function clearPanel() {
  if (mounted) mounted.unmount();
  mounted = null;
  showing = null;
  panel.replaceChildren();
  const p = document.createElement("p");
  p.className = "panel-empty";
  p.textContent = "No question open.";
  panel.append(p);
}

/** Mounts the dialog for `request` in the side panel. */
function openInPanel(request, { onAnswer, onCancel }, id = null) {
  clearPanel();
  panel.replaceChildren();
  mounted = mountDialog(panel, request, {
    onAnswer: (answers) => { clearPanel(); onAnswer(answers); },
    onCancel: () => { clearPanel(); onCancel(); },
  });
  showing = id;
}

// ----- the editor's request -----

$("show").addEventListener("click", () => {
  try {
    const request = normalize($("request").value);
    show("Shown in the panel.");
    openInPanel(request, {
      onAnswer: (answers) => show(`Answered: ${JSON.stringify(answers)}`),
      onCancel: () => show("Cancelled."),
    });
  } catch (e) {
    show(e.message, true); // one "path: message" line per problem
  }
});

$("check").addEventListener("click", () => {
  try {
    const { dialect, warnings } = validate($("request").value);
    show(`Valid (${dialect}).${warnings.map((w) => `\nwarning: ${w.path}: ${w.message}`).join("")}`);
  } catch (e) {
    show(e.message, true);
  }
});

// ----- the bridge -----

function renderPending() {
  const list = $("pending");
  list.replaceChildren(...[...pending.values()].map((record) => {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = record.request.questions.map((q) => q.question).join(" / ");
    button.addEventListener("click", () => openQuestion(record));
    li.append(button);
    return li;
  }));
}

function openQuestion(record) {
  openInPanel(record.request, {
    onAnswer: (answers) => connection?.answer(record.id, answers),
    onCancel: () => connection?.cancel(record.id),
  }, record.id);
}

function settle(id) {
  pending.delete(id);
  renderPending();
  if (showing === id) clearPanel();
}

window.addEventListener("askuser:connection", (e) => {
  $("status").textContent = e.detail.state;
});
window.addEventListener("askuser:snapshot", (e) => {
  pending.clear();
  for (const record of e.detail.questions) if (record.status === "pending") pending.set(record.id, record);
  renderPending();
  log(`snapshot: ${pending.size} waiting`);
});
window.addEventListener("askuser:asked", (e) => {
  const record = e.detail.question;
  pending.set(record.id, record);
  renderPending();
  log(`asked ${record.id}: ${record.request.questions[0].question}`);
  if (!mounted) openQuestion(record); // an idle panel shows the new question at once
});
window.addEventListener("askuser:answered", (e) => {
  log(`answered ${e.detail.id} (${e.detail.result.status})`);
  settle(e.detail.id);
});
window.addEventListener("askuser:withdrawn", (e) => {
  log(`withdrawn ${e.detail.id} (${e.detail.status})`);
  settle(e.detail.id);
});
window.addEventListener("askuser:error", (e) => log(`error: ${e.detail.error.message}`));

$("connect").addEventListener("click", () => {
  connection?.close();
  try {
    connection = connect($("bridge-url").value.trim(), $("bridge-token").value.trim());
  } catch (e) {
    $("status").textContent = e.message;
  }
});
$("disconnect").addEventListener("click", () => {
  connection?.close();
  connection = null;
});

await init();
$("loaded").textContent = "askuser loaded";
document.body.dataset.ready = "true";
