//! Question sets the chat channels' tests render and answer.

use askuser_core::protocol::QuestionRecord;
use askuser_core::{resolve, Agent, AskResult, Choice, Question, Request, Selection, Status};

pub(crate) fn record(questions: Vec<Question>) -> QuestionRecord {
    QuestionRecord {
        id: "q-1".into(),
        request: Request {
            id: Some("q-1".into()),
            questions,
            agent: Some(Agent { name: "claude-code".into(), ..Agent::default() }),
            ..Request::default()
        },
        status: Status::Pending,
        created_at: 1_000,
        answered_at: None,
        result: None,
        answered_by: None,
    }
}

pub(crate) fn single(labels: &[&str]) -> Question {
    Question {
        question: "Which database?".into(),
        header: Some("DB".into()),
        options: labels.iter().map(|l| Choice::new(*l)).collect(),
        multi_select: false,
    }
}

pub(crate) fn multi(labels: &[&str]) -> Question {
    Question { question: "Which features?".into(), multi_select: true, ..single(labels) }
}

/// A set of a single-select and a multi-select question, closed as `status` by `by`:
/// answered "SQLite" and "API, Auth"; declined to talk it over when `chat`.
pub(crate) fn closed(status: Status, by: Option<&str>, chat: bool) -> QuestionRecord {
    let mut done = record(vec![single(&["PostgreSQL", "SQLite"]), multi(&["Auth", "API"])]);
    let answers = resolve(
        &done.request.questions,
        &[Selection::option("SQLite"), Selection { selected: vec!["API".into(), "Auth".into()], ..Selection::default() }],
    )
    .unwrap();
    done.status = status;
    done.answered_by = by.map(str::to_owned);
    done.result = Some(match status {
        Status::Answered => AskResult::answered("q-1", &done.request, answers, 2),
        _ if chat => AskResult::chat("q-1", &done.request, 2),
        s => AskResult::unanswered("q-1", &done.request, s, 2),
    });
    done
}

/// An approval of Bash running `command` in /srv/app, as the bridge asks it.
pub(crate) fn approval(command: &str) -> QuestionRecord {
    use askuser_core::approval::Approval;
    let mut a =
        Approval::from_claude(&serde_json::json!({"tool_name": "Bash", "input": {"command": command, "description": "Clean up"}})).unwrap();
    a.cwd = Some("/srv/app".into());
    let mut r = record(vec![]);
    r.request = Request { agent: r.request.agent.clone(), ..a.request(&a.suggest(None), &askuser_core::Limits::default()).unwrap() };
    r
}
