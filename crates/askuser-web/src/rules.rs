//! The approval rules panel: what "Always allow" kept (a tool, a pattern, where it
//! applies), each with Remove, and the latest decisions of the audit log. Over HTTP
//! with the page's token (`GET /v1/rules`, `DELETE /v1/rules/ID`, `GET /v1/decisions`);
//! a device may read both and remove a rule (which only makes the bridge ask again).

use crate::pairing::request;
use crate::push::{get, text};
use js_sys::{Array, JSON};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

/// Decisions shown.
const LOG: usize = 20;

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    id: String,
    /// `Bash(cargo test:*) in /srv/app`.
    text: String,
    /// What it allows beyond anything "Always allow" keeps now (`Bash(rm:*)`, kept by
    /// an earlier version), shown to review; empty when nothing.
    wider: String,
}

/// One entry of the audit log, as it is shown: "allow", "Bash", "cargo test", who.
#[derive(Debug, Clone, PartialEq)]
struct Decision {
    decision: String,
    tool: String,
    summary: String,
    who: String,
    at: f64,
}

/// `path`'s JSON array, each item read by `read` (JS objects: no serde code for a few
/// fields, as in [`crate::push`]).
async fn list<T>(token: &str, path: &str, read: impl Fn(&JsValue) -> T) -> Result<Vec<T>, String> {
    let body = request("GET", path, Some(token), None).await?;
    let items = JSON::parse(&body).ok().and_then(|v| v.dyn_into::<Array>().ok()).ok_or("the bridge sent something unexpected")?;
    Ok(items.iter().map(|item| read(&item)).collect())
}

/// The rules and the log, or what went wrong.
async fn load(token: &str) -> Result<(Vec<Rule>, Vec<Decision>), String> {
    let rules = list(token, "/v1/rules", |r| Rule { id: text(r, "id"), text: text(r, "text"), wider: text(r, "wider") }).await?;
    let log = list(token, &format!("/v1/decisions?limit={LOG}"), |d| {
        let who = match (get(d, "question").is_null(), text(d, "rule"), text(d, "by")) {
            (true, rule, _) if !rule.is_empty() => format!("by rule {rule}"),
            (_, _, by) if !by.is_empty() => format!("by {by}"),
            _ => String::new(),
        };
        Decision {
            decision: text(d, "decision"),
            tool: text(d, "tool"),
            summary: text(d, "summary"),
            who,
            at: get(d, "at").as_f64().unwrap_or(0.0),
        }
    })
    .await?;
    Ok((rules, log))
}

#[component]
pub fn RulesPanel(token: Option<String>, on_close: Callback<()>) -> impl IntoView {
    let shown = RwSignal::new(None::<(Vec<Rule>, Vec<Decision>)>);
    let error = RwSignal::new(token.is_none().then(|| "This page has no token: open the link `askuser serve` printed.".to_owned()));
    let token = StoredValue::new(token.unwrap_or_default());
    let reload = move || {
        let token = token.get_value();
        leptos::task::spawn_local(async move {
            match load(&token).await {
                Ok(got) => {
                    _ = shown.try_set(Some(got));
                    _ = error.try_set(None);
                }
                Err(e) => _ = error.try_set(Some(e)),
            }
        });
    };
    if error.get_untracked().is_none() {
        reload();
    }
    let remove = move |id: String| {
        let token = token.get_value();
        leptos::task::spawn_local(async move {
            match request("DELETE", &format!("/v1/rules/{id}"), Some(&token), None).await {
                Ok(_) => reload(),
                Err(e) => _ = error.try_set(Some(e)),
            }
        });
    };
    let rules = move || {
        shown.get().map(|(rules, _)| {
            if rules.is_empty() {
                return view! { <p class="askuser-muted">"No rules: every call is asked. \"Always allow\" on an approval keeps one."</p> }
                    .into_any();
            }
            let items = rules
                .into_iter()
                .map(|r| {
                    let id = r.id.clone();
                    let label = format!("Remove {}", r.text);
                    let wide = !r.wider.is_empty();
                    let wider = wide.then(|| {
                        view! { <p class="askuser-rule-wider">"Review: wider than \"Always allow\" keeps now: "{r.wider}</p> }
                    });
                    view! {
                        <li class:askuser-wide=wide>
                            <code>{r.text}</code>
                            " "
                            <button type="button" aria-label=label on:click=move |_| remove(id.clone())>"Remove"</button>
                            {wider}
                        </li>
                    }
                })
                .collect_view();
            view! { <ul class="askuser-rules">{items}</ul> }.into_any()
        })
    };
    let log = move || {
        shown.get().map(|(_, log)| {
            let items = log
                .into_iter()
                .map(|d| {
                    let when = js_sys::Date::new(&JsValue::from_f64(d.at)).to_locale_string("default", &JsValue::UNDEFINED);
                    view! {
                        <li>
                            <strong>{d.decision}</strong>" "{d.tool}": "<code>{d.summary}</code>
                            <span class="askuser-muted">{format!(" · {} · {}", d.who, String::from(when))}</span>
                        </li>
                    }
                })
                .collect_view();
            view! { <h3>"Latest decisions"</h3><ul class="askuser-decisions">{items}</ul> }
        })
    };
    view! {
        <section class="askuser-rules-panel" role="dialog" aria-label="Approval rules">
            <h2>"Approval rules"</h2>
            <p class="askuser-muted">"Calls a rule matches are allowed without asking. Remove one to be asked again."</p>
            {rules}
            {log}
            {move || error.get().map(|e| view! { <p class="askuser-error" role="alert">{e}</p> })}
            <button type="button" on:click=move |_| on_close.run(())>"Done"</button>
        </section>
    }
}
