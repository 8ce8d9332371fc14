//! The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) for a 2026-07-28 host
//! that declares it on its call: the call returns at once with a task, the question waits
//! in the inbox (and in the host's own dialog, as the task's input request), and the host
//! polls `tasks/get` until the answer is there. No host timeout runs out while the person
//! thinks, and when the inbox answers first the next poll shows no input request any more,
//! so the host closes its dialog (which an `input_required` result could not make it do).
//!
//! A task's id is its question's id and a random part: the id is the host's bearer token
//! for the task. Tasks live in this process: a restarted `askuser mcp` does not know the
//! old ones, and says how to pick their questions up instead.

use super::{elicit, lock, now_ms, result, Call, Server, DIALOG};
use askuser_bridge::files::iso8601;
use askuser_core::Status;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams, GetTaskResult, InputRequest, InputRequests,
    InputResponses, JsonObject, MetaObject, Task, TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::AbortHandle;

/// How often a host should poll: an answer reaches the model at most this late.
const POLL: Duration = Duration::from_millis(500);

/// Ended tasks kept for a host that polls late (the oldest are forgotten first).
const ENDED: usize = 256;

/// This connection's tasks, by task id.
#[derive(Default)]
pub(super) struct Tasks {
    all: HashMap<String, Entry>,
    /// Ended tasks, oldest first.
    ended: VecDeque<String>,
}

impl Tasks {
    /// The questions of the tasks still waiting.
    pub(super) fn waiting(&self) -> impl Iterator<Item = &String> {
        self.all.values().filter(|t| t.end.is_none()).map(|t| &t.call.id)
    }
}

struct Entry {
    call: Call,
    created: u64,
    updated: u64,
    /// When the host's dialog was asked for, while its answer is outstanding.
    dialog: Option<tokio::time::Instant>,
    end: Option<End>,
    /// Waits on the bridge for the question to end.
    waiter: Option<AbortHandle>,
}

enum End {
    /// The call's result, as the call would have returned it (`resultType` and all).
    Completed(Value),
    /// The host cancelled the task (the question was withdrawn).
    Cancelled,
}

impl Server {
    /// Stores the question (the task resolves from then on) and returns its task; a waiter
    /// ends the task when the question ends. With `dialog`, the task asks for the host's
    /// own dialog as its input request until the host answers it or the inbox does.
    pub(super) async fn start_task(self: &Arc<Self>, call: Call, dialog: bool) -> CallToolResponse {
        // The waiter asks with the same body, which finds the question stored (no GET first).
        if let Some(body) = &call.body {
            if let Err(e) = self.connected().store(body).await {
                return result(self.outcome(Err(e))).into();
            }
        }
        let task_id = format!("{}:{}", call.id, askuser_bridge::files::random_hex(8));
        let now = now_ms();
        let entry = Entry {
            call: call.clone(),
            created: now,
            updated: now,
            dialog: dialog.then(tokio::time::Instant::now),
            end: None,
            waiter: None,
        };
        let mut seed = self.view(&task_id, &entry).task;
        // The seed is `working`: the input request, if any, comes with `tasks/get`.
        seed.status = TaskStatus::Working;
        lock(&self.state).tasks.all.insert(task_id.clone(), entry);
        tracing::info!(id = %call.id, task = %task_id, "the host takes the call as a task; the question waits in the inbox");
        let server = Arc::clone(self);
        let id = task_id.clone();
        let waiter = tokio::spawn(async move {
            let outcome = server.wait(&call).await;
            if outcome.as_ref().is_ok_and(|r| r.status != Status::Pending) {
                server.journal(&call, false);
            }
            let value = serde_json::to_value(result(server.outcome_of(&call, outcome))).expect("results serialize");
            server.end_task(&id, End::Completed(value));
        });
        if let Some(entry) = lock(&self.state).tasks.all.get_mut(&task_id) {
            entry.waiter = Some(waiter.abort_handle());
        }
        CallToolResponse::Task(CreateTaskResult::new(seed).with_meta(MetaObject(note(&self.tool_name(None)))))
    }

    /// `tasks/get`: where the task is now.
    pub(super) fn get_task(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let state = lock(&self.state);
        let entry = state.tasks.all.get(task_id).ok_or_else(|| unknown("tasks/get", task_id, &self.tool_name(None)))?;
        Ok(GetTaskResult::new(self.view(task_id, entry)))
    }

    /// `tasks/update`: the host's dialog gave `responses`; a key that is not outstanding
    /// is ignored, as the extension asks.
    pub(super) async fn update_task(&self, task_id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        let (call, sent, response) = {
            let mut state = lock(&self.state);
            let entry = state.tasks.all.get_mut(task_id).ok_or_else(|| unknown("tasks/update", task_id, &self.tool_name(None)))?;
            let (Some(sent), Some(response), None) = (entry.dialog, responses.get(DIALOG), &entry.end) else {
                tracing::debug!(task = %task_id, "tasks/update for no outstanding input request: ignored");
                return Ok(());
            };
            entry.dialog = None;
            entry.updated = now_ms();
            (entry.call.clone(), sent, response.clone())
        };
        // The task ends through its waiter when the bridge takes the answer.
        self.dialog_result(&call, sent, Some(response)).await;
        Ok(())
    }

    /// `tasks/cancel`: the host no longer wants the answer, so the question is withdrawn.
    pub(super) async fn cancel_task(&self, task_id: &str) -> Result<(), ErrorData> {
        let call = {
            let mut state = lock(&self.state);
            let entry = state.tasks.all.get_mut(task_id).ok_or_else(|| unknown("tasks/cancel", task_id, &self.tool_name(None)))?;
            if entry.end.is_some() {
                return Ok(());
            }
            if let Some(waiter) = entry.waiter.take() {
                waiter.abort();
            }
            entry.call.clone()
        };
        self.end_task(task_id, End::Cancelled);
        tracing::info!(id = %call.id, task = %task_id, "the host cancelled the task; withdrawing the question");
        if self.bridge.get().is_some() {
            self.connected().withdraw(&call.id).await;
        }
        self.journal(&call, false);
        Ok(())
    }

    fn end_task(&self, task_id: &str, end: End) {
        let mut state = lock(&self.state);
        let tasks = &mut state.tasks;
        let Some(entry) = tasks.all.get_mut(task_id) else { return };
        if entry.end.is_some() {
            return;
        }
        entry.end = Some(end);
        entry.dialog = None;
        entry.updated = now_ms();
        entry.waiter = None;
        tasks.ended.push_back(task_id.to_owned());
        if tasks.ended.len() > ENDED {
            if let Some(old) = tasks.ended.pop_front() {
                tasks.all.remove(&old);
            }
        }
    }

    /// What `tasks/get` shows of `entry`.
    fn view(&self, task_id: &str, entry: &Entry) -> DetailedTask {
        let mut task = Task::new(task_id, TaskStatus::Working, iso8601(entry.created), iso8601(entry.updated));
        task.ttl_ms = None;
        task.poll_interval_ms = Some(POLL.as_millis() as u64);
        let payload = match &entry.end {
            Some(End::Completed(result)) => TaskPayload::Completed { result: result.as_object().cloned().unwrap_or_default() },
            Some(End::Cancelled) => {
                task.status_message = Some("cancelled by the host; the question was withdrawn from the inbox".into());
                TaskPayload::Cancelled
            }
            None if entry.dialog.is_some() => TaskPayload::InputRequired { input_requests: self.dialog_request(&entry.call) },
            None => {
                task.status_message = Some("waiting for the person's answer".into());
                TaskPayload::Working
            }
        };
        DetailedTask::new(task, payload)
    }

    /// The host's dialog for `call`'s questions, as an input request.
    pub(super) fn dialog_request(&self, call: &Call) -> InputRequests {
        let form = elicit::request(&call.questions, &self.open_url(), elicit::Form::Titled);
        let params: ElicitRequestParams = serde_json::from_value(form).expect("the form is an elicitation");
        InputRequests::from([(DIALOG.to_owned(), InputRequest::Elicitation(ElicitRequest::new(params)))])
    }
}

/// What a host that runs the task in the background (Claude Code does, and tells the model
/// "you can keep working in the meantime") shows the model at once: that this task is a
/// question, whose answer the model must not guess.
fn note(tool: &str) -> JsonObject {
    let words = format!(
        "This {tool} task is a question for the person, waiting in askuser's inbox (and in your host's own dialog if it \
         shows one). Its result is the person's answer. Do not assume an answer and do not do anything that depends on \
         it: say that you are waiting for their answer and wait for this task's result."
    );
    JsonObject::from_iter([(AGENT_TASK.to_owned(), json!({ "modelImmediateResponse": words }))])
}

/// Where Claude Code reads a task's first words for the model (`_meta`).
const AGENT_TASK: &str = "com.anthropic/agent-task";

/// -32602 for a task this process does not know, with how to pick its question up.
fn unknown(method: &str, task_id: &str, tool: &str) -> ErrorData {
    let question = task_id.rsplit_once(':').map_or(task_id, |(q, _)| q);
    super::invalid(format!(
        "{method}: unknown task {task_id:?}: this askuser mcp did not create it, or it ended long ago \
         (a restarted server forgets its tasks). Its question, if there was one, stays in the inbox: \
         call {tool} with {{\"id\": {question:?}}} to wait for its answer"
    ))
}
