//! The questions as an MCP elicitation form (`elicitation/create`, form mode), and the
//! form's content back as answers, so a host with its own dialog can be answered there
//! while the browser inbox shows the same questions. Per question `i` (from 1), in the
//! schema constructs of the negotiated revision ([`Form`]):
//!
//! | question              | 2025-11-25 ([`Form::Titled`])                  | before ([`Form::Enum`])                           | `q{i}_other`         |
//! |-----------------------|------------------------------------------------|---------------------------------------------------|----------------------|
//! | options, one answer   | `q{i}`: string, `oneOf: [{const: label, title}]` | `q{i}`: string, `enum: [label]`, `enumNames`    | string: "Other" text |
//! | options, multi-select | `q{i}`: array, `items.anyOf: [{const, title}]`  | `q{i}_{j}`: a boolean per option `j` (from 1)    | string: "Other" text |
//! | free text             | `q{i}`: string, required                        | the same                                          | —                    |
//!
//! Before 2025-11-25 a form holds only flat primitives (string, number, boolean, and a
//! string `enum` with `enumNames`): no arrays, no `oneOf`. Either way the values are the
//! options' labels exactly (or one boolean per label), so the mapping is lossless both
//! ways; the titles add the description ("label — description") for the person.

use askuser_core::{Question, Selection};
use serde_json::{json, Map, Value};

fn field(i: usize) -> String {
    format!("q{}", i + 1)
}

fn other(i: usize) -> String {
    format!("q{}_other", i + 1)
}

fn flag(i: usize, j: usize) -> String {
    format!("q{}_{}", i + 1, j + 1)
}

/// Which schema constructs a form may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// 2025-11-25: titled single and multi-select enums (`oneOf`/`anyOf` of `const`+`title`).
    Titled,
    /// 2025-06-18: primitives only; a single select is `enum` + `enumNames`.
    Enum,
}

fn titled(o: &askuser_core::Choice) -> String {
    match &o.description {
        Some(d) => format!("{} — {d}", o.label),
        None => o.label.clone(),
    }
}

/// `elicitation/create` params for `questions`.
pub fn request(questions: &[Question], open_url: &str, form: Form) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let title = q.header.clone().unwrap_or_else(|| if questions.len() == 1 { "Answer".into() } else { format!("Question {}", i + 1) });
        if q.options.is_empty() {
            properties.insert(field(i), json!({"type": "string", "title": title, "description": q.question}));
            required.push(field(i));
            continue;
        }
        let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
        let titles: Vec<String> = q.options.iter().map(titled).collect();
        let choices: Vec<Value> = labels.iter().zip(&titles).map(|(l, t)| json!({"const": l, "title": t})).collect();
        match (form, q.multi_select) {
            (Form::Titled, true) => {
                properties
                    .insert(field(i), json!({"type": "array", "title": title, "description": q.question, "items": {"anyOf": choices}}));
            }
            (Form::Titled, false) => {
                properties.insert(field(i), json!({"type": "string", "title": title, "description": q.question, "oneOf": choices}));
            }
            (Form::Enum, false) => {
                properties.insert(
                    field(i),
                    json!({"type": "string", "title": title, "description": q.question, "enum": labels, "enumNames": titles}),
                );
            }
            (Form::Enum, true) => {
                for (j, t) in titles.iter().enumerate() {
                    let description = if j == 0 { format!("{} (choose any)", q.question) } else { q.question.clone() };
                    properties.insert(flag(i, j), json!({"type": "boolean", "title": t, "description": description, "default": false}));
                }
            }
        }
        properties
            .insert(other(i), json!({"type": "string", "title": "Other", "description": format!("Or your own answer to: {}", q.question)}));
    }
    let message = match questions {
        [q] => format!("{}\n\n(You can also answer in the askuser inbox: {open_url})", q.question),
        _ => format!("The agent asks {} questions. (You can also answer in the askuser inbox: {open_url})", questions.len()),
    };
    json!({"message": message, "requestedSchema": {"type": "object", "properties": properties, "required": required}})
}

/// The accepted form's `content` as one selection per question, or what is missing.
pub fn selections(questions: &[Question], content: &Map<String, Value>) -> Result<Vec<Selection>, String> {
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let flags: Vec<String> = q
                .options
                .iter()
                .enumerate()
                .filter(|(j, _)| content.get(&flag(i, *j)) == Some(&Value::Bool(true)))
                .map(|(_, o)| o.label.clone())
                .collect();
            let selected = match content.get(&field(i)) {
                None | Some(Value::Null) => flags,
                Some(Value::String(s)) if q.options.is_empty() => return nonempty(s).map(custom).ok_or_else(|| missing(i, q)),
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                Some(v) => return Err(format!("{}: expected text or a list of labels, got {v}", field(i))),
            };
            let typed = content.get(&other(i)).and_then(Value::as_str).and_then(nonempty);
            if selected.is_empty() && typed.is_none() {
                return Err(missing(i, q));
            }
            Ok(Selection { selected, custom: typed, notes: None })
        })
        .collect()
}

fn nonempty(s: &str) -> Option<String> {
    Some(s.trim()).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn custom(text: String) -> Selection {
    Selection { custom: Some(text), ..Selection::default() }
}

fn missing(i: usize, q: &Question) -> String {
    format!("{}: no answer to {:?}", field(i), q.question)
}

#[cfg(test)]
mod tests {
    use super::*;
    use askuser_core::{resolve, Choice};

    fn questions() -> Vec<Question> {
        let choice = |label: &str, description: Option<&str>| Choice {
            label: label.into(),
            description: description.map(str::to_owned),
            ..Choice::default()
        };
        vec![
            Question {
                question: "Which database?".into(),
                header: Some("Database".into()),
                options: vec![choice("PostgreSQL", Some("relational")), choice("SQLite", None)],
                multi_select: false,
            },
            Question {
                question: "Which features?".into(),
                header: None,
                options: vec![choice("Auth", None), choice("Billing", None), choice("Search", None)],
                multi_select: true,
            },
            Question { question: "Name the service?".into(), header: None, options: vec![], multi_select: false },
        ]
    }

    #[test]
    fn the_form_has_a_field_per_question_and_an_other_beside_each_choice() {
        let form = request(&questions(), "http://127.0.0.1:7766", Form::Titled);
        let schema = &form["requestedSchema"];
        assert_eq!(schema["properties"]["q1"]["oneOf"][0], json!({"const": "PostgreSQL", "title": "PostgreSQL — relational"}));
        assert_eq!(schema["properties"]["q1"]["title"], "Database");
        assert_eq!(schema["properties"]["q2"]["type"], "array");
        assert_eq!(schema["properties"]["q2"]["items"]["anyOf"][2]["const"], "Search");
        assert_eq!(schema["properties"]["q3"], json!({"type": "string", "title": "Question 3", "description": "Name the service?"}));
        assert!(schema["properties"]["q2_other"].is_object() && schema["properties"].get("q3_other").is_none());
        assert_eq!(schema["required"], json!(["q3"]));
        assert!(form["message"].as_str().unwrap().contains("http://127.0.0.1:7766"));
    }

    #[test]
    fn every_answer_the_form_can_give_comes_back_as_the_same_answer() {
        let qs = questions();
        let content = json!({"q1": "SQLite", "q2": ["Auth", "Search"], "q2_other": "Audit log", "q3": "billing-api"});
        let picked = selections(&qs, content.as_object().unwrap()).unwrap();
        let answers = resolve(&qs, &picked).unwrap();
        assert_eq!(answers[0].selected_options, ["SQLite"]);
        assert_eq!(answers[1].selected_options, ["Auth", "Search"]);
        assert_eq!(answers[1].custom.as_deref(), Some("Audit log"));
        assert_eq!(answers[2].custom.as_deref(), Some("billing-api"));

        let typed = json!({"q1_other": "DuckDB", "q2": [], "q2_other": "none yet", "q3": "x"});
        let answers = resolve(&qs, &selections(&qs, typed.as_object().unwrap()).unwrap()).unwrap();
        assert_eq!((answers[0].custom.as_deref(), answers[0].was_custom), (Some("DuckDB"), true));
    }

    /// 2025-06-18 forms: flat primitives only; the same answers come back.
    #[test]
    fn before_2025_11_25_the_form_uses_only_enums_and_booleans() {
        let qs = questions();
        let form = request(&qs, "http://127.0.0.1:7766", Form::Enum);
        let props = form["requestedSchema"]["properties"].as_object().unwrap();
        assert_eq!(props["q1"]["enum"], json!(["PostgreSQL", "SQLite"]));
        assert_eq!(props["q1"]["enumNames"], json!(["PostgreSQL — relational", "SQLite"]));
        assert!(props.get("q2").is_none(), "no array field");
        assert_eq!(props["q2_2"], json!({"type": "boolean", "title": "Billing", "description": "Which features?", "default": false}));
        for (name, schema) in props {
            let kind = schema["type"].as_str().unwrap();
            assert!(["string", "boolean"].contains(&kind), "{name}: {schema}");
            assert!(schema.get("oneOf").is_none() && schema.get("anyOf").is_none() && schema.get("items").is_none(), "{name}: {schema}");
        }
        let content = json!({"q1": "SQLite", "q2_1": true, "q2_2": false, "q2_3": true, "q3": "billing-api"});
        let answers = resolve(&qs, &selections(&qs, content.as_object().unwrap()).unwrap()).unwrap();
        assert_eq!(answers[0].selected_options, ["SQLite"]);
        assert_eq!(answers[1].selected_options, ["Auth", "Search"]);
        assert_eq!(answers[2].custom.as_deref(), Some("billing-api"));
    }

    #[test]
    fn an_unanswered_question_is_named() {
        let e = selections(&questions(), json!({"q2": ["Auth"], "q3": "x"}).as_object().unwrap()).unwrap_err();
        assert_eq!(e, "q1: no answer to \"Which database?\"");
        let e = selections(&questions(), json!({"q1": "SQLite", "q2": ["Auth"], "q3": "  "}).as_object().unwrap()).unwrap_err();
        assert!(e.starts_with("q3:"), "{e}");
    }
}
