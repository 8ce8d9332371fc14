// @ts-check
// What the extension decides about what it shows, with no editor API: what a notification
// may show and offer, and the file a proposed edit would make (tests: test/logic.test.js,
// `node --test`).
"use strict";

const fs = require("fs");
const path = require("path");

const EDITS = ["Edit", "MultiEdit", "Write"];
/** Characters that hide or reorder text (controls, format characters, invisible fillers):
 * a command with any of them is not shown in a notification, where they would be hidden;
 * the panel shows them as escapes. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180e\u3164\uffa0]/u;
/** A notification shows at most this much of a command beside Allow (as the bridge's
 * own notifications do). */
const NOTIFY_MAX = 600;

/** Agent text in a notification: one line, and no `[text](target)`, which a notification
 * would make a link (a `command:` one runs a command). */
function plain(text) {
  return String(text).replace(/\s+/g, " ").replace(/\]\(/g, "] (").trim();
}

/** A command shown whole in a notification, where Allow may be offered beside it. */
function commandFits(command) {
  return typeof command === "string" && command.length <= NOTIFY_MAX && !HIDDEN.test(command) && !command.includes("](");
}

function isEdit(approval) {
  return approval && EDITS.includes(approval.tool);
}

/** The file as it would be after `approval`'s edit, or an Error saying why it cannot be
 * known (the text to replace is not in the file as it is now). */
function proposedText(approval) {
  const input = approval.input || {};
  const file = resolvePath(approval);
  if (!path.isAbsolute(file)) return new Error(`the file ${file} is relative and the agent named no folder`);
  let current = "";
  try {
    current = fs.readFileSync(file, "utf8");
  } catch {
    // a new file
  }
  if (approval.tool === "Write") return { file, current, next: String(input.content ?? "") };
  const edits = approval.tool === "MultiEdit" ? input.edits || [] : [input];
  let next = current;
  for (const [i, e] of edits.entries()) {
    const from = String(e.old_string ?? "");
    const to = String(e.new_string ?? "");
    // As the agent's own Edit takes it: empty old_string only makes a new file, and a
    // text to replace once must be there exactly once.
    const times = from === "" ? 0 : next.split(from).length - 1;
    if (from === "" && next === "") next = to;
    else if (from === "") return new Error(`edit ${i + 1} would create ${file}, which exists`);
    else if (times === 0) return new Error(`edit ${i + 1}'s old_string is not in ${file} as it is now`);
    else if (times > 1 && !e.replace_all) return new Error(`edit ${i + 1}'s old_string is in ${file} ${times} times, and the edit replaces one`);
    else next = e.replace_all ? next.split(from).join(to) : next.replace(from, () => to);
  }
  return { file, current, next };
}

function resolvePath(approval) {
  const p = String(approval.input?.file_path || approval.input?.path || "");
  return path.isAbsolute(p) ? p : path.join(approval.cwd || "", p);
}

module.exports = { plain, commandFits, isEdit, proposedText, resolvePath, HIDDEN, NOTIFY_MAX, EDITS };
