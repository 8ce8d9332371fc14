//! The history panel: what the bridge keeps (answered, declined, withdrawn and timed-out
//! questions with what the agent received), paged and searchable, so it survives a
//! reload and a restart. Pages come over the socket (`history` → `askuser:history`).

use crate::bridge::Bridge;
use crate::dialog_view::rich_text;
use crate::events::{self, FromBridge};
use askuser_core::protocol::{BrowserEvent, QuestionRecord};
use askuser_core::Status;
use leptos::prelude::*;

/// Records per page.
const PAGE: usize = 20;

/// What the agent received, as one line per question: (question, answer).
pub fn pairs(record: &QuestionRecord) -> Vec<(String, String)> {
    let answers = record.result.as_ref().map(|r| r.answers.as_slice()).unwrap_or_default();
    record
        .request
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let answer = answers.get(i).map(|a| {
                let given = a.answer.joined();
                match &a.notes {
                    Some(n) => format!("{given} (note: {n})"),
                    None => given,
                }
            });
            (q.question.clone(), answer.unwrap_or_default())
        })
        .collect()
}

/// How a record ended, from this window's point of view (`client`: its id).
pub fn status_label(record: &QuestionRecord, client: Option<&str>) -> String {
    let by = record.answered_by.as_deref();
    match record.status {
        Status::Answered if by.is_some() && by == client => "answered here".into(),
        Status::Answered => match by {
            Some(b) if b.starts_with("c-") => "answered in a browser".into(),
            Some(b) => format!("answered via {b}"),
            None => "answered".into(),
        },
        Status::Cancelled if record.result.as_ref().is_some_and(|r| r.chat) => "declined: wants to talk it over".into(),
        Status::Cancelled => "declined".into(),
        Status::TimedOut => "timed out".into(),
        Status::Withdrawn => "withdrawn".into(),
        Status::Pending => "pending".into(),
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Page {
    records: Vec<QuestionRecord>,
    more: bool,
}

/// The panel. Asks for the first page when shown, again when a question closes, and for
/// older ones on "Older".
#[component]
pub fn HistoryPanel(bridge: StoredValue<Option<Bridge>, LocalStorage>, client: Signal<Option<String>>) -> impl IntoView {
    let page = RwSignal::new(Page::default());
    let search = RwSignal::new(String::new());
    let asked = RwSignal::new(false);
    let load = move |offset: usize| {
        let text = search.get_untracked();
        let sent = bridge.with_value(|b| b.as_ref().is_some_and(|b| b.history(Some(text).filter(|t| !t.trim().is_empty()), offset, PAGE)));
        asked.set(sent);
    };
    load(0);

    let subscription = events::subscribe(move |update| match update {
        FromBridge::Event(BrowserEvent::History { records, offset, more, .. }) => {
            _ = page.try_update(|p| {
                if *offset == 0 {
                    p.records = records.clone();
                } else if *offset == p.records.len() {
                    p.records.extend(records.iter().cloned());
                }
                p.more = *more;
            });
        }
        // A question ended, or the connection came back: the first page again.
        FromBridge::Event(BrowserEvent::Answered { .. } | BrowserEvent::Withdrawn { .. }) | FromBridge::Connection { .. } => load(0),
        FromBridge::Event(_) => {}
    });
    on_cleanup(move || drop(subscription));

    let list = move || {
        let client = client.get();
        page.with(|p| {
            p.records
                .iter()
                .map(|r| {
                    let agent = askuser_core::inbox::agent_name(r);
                    let status = status_label(r, client.as_deref());
                    let when = r.answered_at.map(|ms| {
                        js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64))
                            .to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)
                    });
                    let pairs = pairs(r)
                        .into_iter()
                        // As the dialog shows agent text: `code` and ```blocks``` as
                        // elements of text nodes, never their fences, never HTML.
                        .map(|(q, a)| {
                            let a = if a.is_empty() { "—".to_owned() } else { a };
                            view! { <dt>{rich_text(&q)}</dt><dd>{rich_text(&a)}</dd> }
                        })
                        .collect_view();
                    view! {
                        <li>
                            <p>
                                <strong>{agent}</strong>
                                <span class="askuser-muted">{format!(" · {status}")}{when.map(|w| format!(" · {}", String::from(w)))}</span>
                            </p>
                            <dl>{pairs}</dl>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let empty = move || {
        page.with(|p| p.records.is_empty()).then(|| {
            let text = if !asked.get() {
                "The history loads when the bridge is connected."
            } else if search.with(|s| s.trim().is_empty()) {
                "Nothing answered yet."
            } else {
                "Nothing in the history matches."
            };
            view! { <p class="askuser-muted">{text}</p> }
        })
    };

    view! {
        <section class="askuser-history" aria-label="History">
            <h2 class="askuser-h">"History"</h2>
            <input type="search" class="askuser-search" aria-label="Search the history" placeholder="Search questions and answers"
                prop:value=move || search.get()
                on:input=move |ev| {
                    search.set(event_target_value(&ev));
                    load(0);
                } />
            {empty}
            <ul>{list}</ul>
            {move || page.with(|p| p.more).then(|| view! {
                <button type="button" on:click=move |_| load(page.with_untracked(|p| p.records.len()))>"Older"</button>
            })}
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(v: serde_json::Value) -> QuestionRecord {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn what_the_agent_received_and_how_it_ended() {
        let answered = record(json!({"id": "q", "status": "answered", "createdAt": 1, "answeredAt": 2, "answeredBy": "c-3",
            "request": {"questions": [{"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}, {"question": "Name?"}]},
            "result": {"id": "q", "status": "answered", "answered": true, "answeredAt": 2, "answers": [
                {"question": "Which?", "answer": "A", "selectedOptions": ["A"], "custom": null, "wasCustom": false, "notes": "for now"},
                {"question": "Name?", "answer": "svc", "selectedOptions": [], "custom": "svc", "wasCustom": true}]}}));
        assert_eq!(pairs(&answered), [("Which?".to_owned(), "A (note: for now)".to_owned()), ("Name?".to_owned(), "svc".to_owned())]);
        assert_eq!(status_label(&answered, Some("c-3")), "answered here");
        assert_eq!(status_label(&answered, Some("c-4")), "answered in a browser");
        let withdrawn = record(json!({"id": "w", "status": "withdrawn", "createdAt": 1,
            "request": {"questions": [{"question": "Go?"}]},
            "result": {"id": "w", "status": "withdrawn", "answered": false, "answeredAt": 2, "answers": []}}));
        assert_eq!(pairs(&withdrawn), [("Go?".to_owned(), String::new())]);
        assert_eq!(status_label(&withdrawn, None), "withdrawn");
        let chat =
            record(json!({"id": "c", "status": "cancelled", "createdAt": 1, "answeredBy": "the agent host's own dialog (MCP elicitation)",
            "request": {"questions": [{"question": "Go?"}]},
            "result": {"id": "c", "status": "cancelled", "answered": false, "answeredAt": 2, "answers": [], "chat": true}}));
        assert_eq!(status_label(&chat, None), "declined: wants to talk it over");
    }
}
