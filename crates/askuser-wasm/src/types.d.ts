// ----- requests (docs/protocol.md) -----

/** One option of a question. "Other" is never an option: every dialog adds its own free-text row. */
export interface Choice {
  label: string;
  description?: string;
  /** An HTML fragment, shown only inside a sandboxed frame. */
  preview?: string;
}

export interface Question {
  question: string;
  /** A short chip shown above the question ("Database"). */
  header?: string;
  /** Absent or empty: a free-text question. */
  options?: Choice[];
  multiSelect?: boolean;
}

/** Who is asking. */
export interface Agent {
  name: string;
  sessionId?: string;
  parentSessionId?: string;
}

/** The canonical request (Claude Code's AskUserQuestion plus askuser's own fields); pi's shape is the same. */
export interface Request {
  id?: string;
  questions: Question[];
  metadata?: Record<string, unknown>;
  agent?: Agent;
  timeoutSeconds?: number;
  /** Sent again after this many seconds without an answer, then escalated after twice as long. */
  remindAfterSeconds?: number;
  /** Only if the caller can go on without an answer: after this many seconds, no answer (`timed_out`, with `reason`). */
  defaultAfterSeconds?: number;
}

/** What an agent asks leave to do (set by the bridge on an approval's question). */
export interface Approval {
  tool: string;
  input: Record<string, unknown>;
  reason?: string;
  cwd?: string;
  toolUseId?: string;
}

/** A request as `normalize` returns it: `multiSelect` is always present. */
export interface CanonicalRequest extends Request {
  /** Set when the question asks leave to use a tool (approvals). */
  approval?: Approval;
  questions: (Question & { multiSelect: boolean })[];
  /**
   * Each option's preview as parsed markdown, by question and option (`null` where an
   * option has none): sent by a bridge with the question sets it shows a page, for a
   * dialog that draws without parsing. The shape is `docs/protocol.md`'s.
   */
  previewDocs?: (unknown | null)[][];
}

/** Opal's shape. */
export interface OpalRequest {
  question: string;
  choices?: string[];
  header?: string;
  multiSelect?: boolean;
  id?: string;
  metadata?: Record<string, unknown>;
  agent?: Agent;
  timeoutSeconds?: number;
  /** Sent again after this many seconds without an answer, then escalated after twice as long. */
  remindAfterSeconds?: number;
  /** Only if the caller can go on without an answer: after this many seconds, no answer (`timed_out`, with `reason`). */
  defaultAfterSeconds?: number;
}

/** Roo Code's shape. */
export interface RooRequest {
  question: string;
  follow_up?: (string | { answer: string; mode?: string })[];
  suggest?: (string | { answer: string; mode?: string })[];
  id?: string;
  metadata?: Record<string, unknown>;
  agent?: Agent;
  timeoutSeconds?: number;
  /** Sent again after this many seconds without an answer, then escalated after twice as long. */
  remindAfterSeconds?: number;
  /** Only if the caller can go on without an answer: after this many seconds, no answer (`timed_out`, with `reason`). */
  defaultAfterSeconds?: number;
}

/** A request in any dialect, or its JSON text. */
export type AnyRequest = Request | OpalRequest | RooRequest | string;

/** One problem with one field; `path` is empty for the whole input. */
export interface FieldError {
  path: string;
  message: string;
}

/** Every function throws this for bad input: `message` has one `path: message` line per problem. */
export interface AskuserError extends Error {
  errors: FieldError[];
}

export type Dialect = "claude" | "pi" | "opal" | "roo";

export interface ValidateOptions {
  /** "claude-code": 1-4 questions, 2-4 options each, headers of at most 12 chars. */
  profile?: "default" | "claude-code";
}

export interface Validated {
  request: CanonicalRequest;
  dialect: Dialect;
  /** What was changed so the request could be used, or ignored. */
  warnings: FieldError[];
}

// ----- answers and results -----

/** What a front end sends for one question: option labels and/or the Other text. */
export interface Selection {
  selected?: string[];
  custom?: string | null;
  /** The person's note for the agent about this answer. */
  notes?: string | null;
}

export type Status = "pending" | "answered" | "cancelled" | "timed_out" | "withdrawn";

export interface Answer {
  question: string;
  header?: string;
  /** An array for a multi-select question (labels in option order, then the Other text). */
  answer: string | string[];
  selectedOptions: string[];
  custom: string | null;
  wasCustom: boolean;
  /** The person's note for the agent. */
  notes?: string;
  /** The chosen option's preview (multi-select: each, separated by a blank line). */
  preview?: string;
}

/** The canonical result an agent receives. */
export interface AskResult {
  id: string;
  status: Status;
  answered: boolean;
  answers: Answer[];
  metadata?: Record<string, unknown>;
  /** Milliseconds since the Unix epoch. */
  answeredAt: number;
  /** Declined with "Chat about this": the person would rather talk it over. */
  chat?: true;
  /** On a `timed_out` result whose request set `defaultAfterSeconds`: "no answer after 30 min; default applied". */
  reason?: string;
}

export type Format = "canonical" | "claude" | "pi" | "text";

/** Claude Code's shape: `answers` maps each question to its answer text. */
export interface ClaudeResult {
  questions: { question: string; header?: string; multiSelect: boolean }[];
  answers: Record<string, string>;
  /** Per question: the chosen option's preview and the person's notes. */
  annotations?: Record<string, { preview?: string; notes?: string }>;
  chat?: true;
  metadata?: Record<string, unknown>;
  /** The tool-result sentence the model reads. */
  message: string;
}

/** pi's shape. */
export interface PiResult {
  answered: boolean;
  cancelled?: true;
  timedOut?: true;
  withdrawn?: true;
  answers: { question: string; answer: string | string[]; selectedOption?: string; wasCustom: boolean }[];
  metadata?: Record<string, unknown>;
}

export type FormattedResult = AskResult | ClaudeResult | PiResult | string;

// ----- the dialog state machine (new Dialog) -----

export interface QuestionDraft {
  selected: number[];
  other: boolean;
  otherText: string;
  confirmed: boolean;
  /** The person's note for the agent about this answer. */
  notes: string;
  /** The focused row, so the question comes back where the person left it. */
  focus?: number;
}

/** What to persist to resume a dialog (`options.draft`). */
export interface Draft {
  tab: number;
  questions: QuestionDraft[];
}

export interface DialogOptions {
  /** Rows visible at once (default 7). */
  viewport?: number;
  /** The key for a new line, as the footer names it (default "Shift+Enter"). */
  newlineKey?: string;
  /** Text answers longer than this many chars ask for confirmation (default 2000). */
  softLimit?: number;
  /** A draft from `dialog.draft()` to resume. */
  draft?: Draft;
  /** Called with one selection per question when the person submits. */
  onSubmit?: (answers: Selection[]) => void;
  /** Called when the person declines; `chat`: "Chat about this" (talk it over instead). */
  onCancel?: (chat: boolean) => void;
}

/** Everything a host can tell the dialog. */
export type DialogEvent =
  | { type: "next" } | { type: "prev" } | { type: "first" } | { type: "last" }
  | { type: "focus"; index: number }
  /** A click or tap on a row: chooses it (single select) or toggles it (multi); sends nothing. */
  | { type: "pick"; index: number }
  /** A number key: answers with that option at once (single select), as in Claude Code. */
  | { type: "quick"; number: number }
  | { type: "other" } | { type: "toggle" }
  | { type: "setText"; text: string }
  | { type: "type"; text: string }
  | { type: "backspace" }
  | { type: "nextTab" } | { type: "prevTab" }
  | { type: "goTab"; index: number }
  /** `commit`: the Submit/Next button: sends what was chosen (nothing chosen: a hint). */
  | { type: "enter" } | { type: "commit" } | { type: "escape" }
  | { type: "confirm"; yes: boolean }
  | { type: "notes"; text: string }
  | { type: "decline" } | { type: "chat" }
  | { type: "resize"; viewport: number }
  /** How much of an approval the host shows: while only a part, Allow is refused. */
  | { type: "shown"; whole: boolean };

/** What the host must do. */
export type Effect = { type: "submitted"; answers: Selection[] } | { type: "cancelled"; chat?: true };

export interface KeyOutcome {
  /** false: the dialog did not use the key; do not preventDefault. */
  handled: boolean;
  effects: Effect[];
}

export interface TabView {
  label: string;
  answered: boolean;
  isSubmit: boolean;
}

export interface QuestionView {
  index: number;
  text: string;
  header: string | null;
  multiSelect: boolean;
  freeText: boolean;
  answered: boolean;
}

export interface RowView {
  index: number;
  label: string;
  description: string | null;
  preview: string | null;
  /** The 1-based number shown before an option; null for Other. */
  number: number | null;
  /** The quick key: "1".."9", "0" for Other; an approval's "a", "A", "e" (Always allow exactly, where offered), "d" (none for the message row). */
  key: string | null;
  focused: boolean;
  /** Chosen (single select) or checked (multi select). */
  selected: boolean;
  isOther: boolean;
}

/** Rows `start..end` are visible; `above` / `below` are hidden. */
export interface ScrollWindow {
  start: number;
  end: number;
  above: number;
  below: number;
}

export type PromptKind = { type: "discard"; count: number; chat?: true } | { type: "longAnswer"; chars: number };

/** A yes/no question over the dialog. */
export interface Prompt {
  kind: PromptKind;
  text: string;
  /** What Enter answers. */
  defaultYes: boolean;
  /** The buttons' words, for what each does ("Decline", "Keep answering"). */
  yes: string;
  no: string;
  /** What a yes would throw away: each answer given or text typed, as "Label: text". */
  lost: string[];
}

export interface ReviewItem {
  index: number;
  label: string;
  question: string;
  answer: string | null;
}

/** The plain view model `dialog.state()` returns. */
export interface DialogState {
  tabs: TabView[];
  activeTab: number;
  onSubmitTab: boolean;
  question: QuestionView | null;
  /** The options, then the Other row; empty on the Submit tab. */
  rows: RowView[];
  otherText: string;
  /** The current question's note for the agent. */
  notes: string;
  /** The text field has the keyboard. */
  editing: boolean;
  window: ScrollWindow;
  prompt: Prompt | null;
  hint: string | null;
  review: ReviewItem[];
  unanswered: string[];
  done: "submitted" | "cancelled" | null;
  /** What was sent, once done: "Answer sent.", "Declined."; an approval's "Allowed.", "Denied: …". */
  outcome: string | null;
  /** Set for an approval: show this instead of the question's text (keys a, A, e where "Always allow exactly" is offered, d). */
  approval: ApprovalView | null;
  /** Key help for the current mode. */
  footer: string;
}

/** What an approval will do, as the dialog shows it (never as JSON). */
export type Shown =
  | { kind: "command"; command: string; cwd?: string }
  | { kind: "diff"; file: string; lines: { change: "same" | "added" | "removed" | "gap"; text: string }[] }
  | { kind: "write"; file: string; head: string[]; total: number }
  | { kind: "fetch"; url: string }
  | { kind: "call"; args: [string, string][] };

export interface ApprovalView {
  tool: string;
  /** "Run this command in /srv/app?", "Edit src/main.rs?" */
  title: string;
  shown: Shown;
  reason?: string;
}

// ----- the mounted dialog (mountDialog) -----

export interface MountOptions {
  /** Called with one selection per question when the person submits. */
  onAnswer?: (answers: Selection[]) => void;
  /** Called when the person declines; `chat`: "Chat about this" (talk it over instead). */
  onCancel?: (chat: boolean) => void;
  /** false: do not add the package's stylesheet to <head> (see dialogStyles()). */
  styles?: boolean;
}

// ----- the bridge (connect) and its events -----

export interface QuestionRecord {
  id: string;
  request: CanonicalRequest;
  status: Status;
  createdAt: number;
  answeredAt?: number;
  result?: AskResult;
  answeredBy?: string;
}

export interface AgentPresence {
  sessionId: string;
  name: string;
  parentSessionId?: string;
  connected: boolean;
}

export type ErrorCode = "invalid" | "bad_message" | "conflict" | "not_found" | "too_many" | "unauthorized" | "unavailable" | "internal";

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  errors?: FieldError[];
}

export interface SnapshotDetail { type: "snapshot"; client: string; questions: QuestionRecord[]; agents: AgentPresence[] }
export interface AskedDetail { type: "asked"; question: QuestionRecord }
/** Answered or cancelled: `result.status` says which. */
export interface AnsweredDetail { type: "answered"; id: string; by?: string; result: AskResult }
export interface WithdrawnDetail { type: "withdrawn"; id: string; status: "withdrawn" | "timed_out" }
export interface AgentDetail { type: "agent"; agent: AgentPresence }
/** A page of the bridge's history, for `connection.history(...)`. */
export interface HistoryDetail { type: "history"; ref?: string; records: QuestionRecord[]; offset: number; more?: true }
export interface AckDetail { type: "ack"; ref: string; id: string }
export interface ErrorDetail { type: "error"; ref?: string; id?: string; error: ErrorBody }
/** `unauthorized`: the bridge refused the token (it stops trying); `reconnecting`: the bridge could not be reached (it keeps trying). */
export interface ConnectionDetail { state: "connecting" | "open" | "reconnecting" | "unauthorized" | "closed"; attempt: number }

/** The events `connect` fires, by name. */
export interface AskuserEventMap {
  "askuser:snapshot": CustomEvent<SnapshotDetail>;
  "askuser:asked": CustomEvent<AskedDetail>;
  "askuser:answered": CustomEvent<AnsweredDetail>;
  "askuser:withdrawn": CustomEvent<WithdrawnDetail>;
  "askuser:agent": CustomEvent<AgentDetail>;
  "askuser:history": CustomEvent<HistoryDetail>;
  "askuser:ack": CustomEvent<AckDetail>;
  "askuser:error": CustomEvent<ErrorDetail>;
  "askuser:connection": CustomEvent<ConnectionDetail>;
}

declare global {
  interface WindowEventMap extends AskuserEventMap {}
}
