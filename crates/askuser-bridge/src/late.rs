//! Late answers: a command run when a question is answered after its agent went away,
//! so an answer can restart a headless agent
//! (`--on-late-answer claude -p --resume {session} {answer}`).
//!
//! The command runs without a shell. In its arguments `{id}`, `{session}`, `{parent}`,
//! `{agent}`, `{status}` and `{answer}` (the one-line summary of the answers) are
//! replaced, each as a whole argument's part, never parsed again. It gets the canonical
//! result as JSON on stdin and the same values in `ASKUSER_ID`, `ASKUSER_SESSION_ID`,
//! `ASKUSER_PARENT_SESSION_ID`, `ASKUSER_AGENT`, `ASKUSER_STATUS`. (Session ids are
//! plain ids that never start with "-": the core refuses others.)

use askuser_core::protocol::QuestionRecord;
use askuser_core::AskResult;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// `arg` with its placeholders replaced.
pub fn fill(arg: &str, record: &QuestionRecord, result: &AskResult) -> String {
    let agent = record.request.agent.clone().unwrap_or_default();
    arg.replace("{id}", &record.id)
        .replace("{session}", agent.session_id.as_deref().unwrap_or_default())
        .replace("{parent}", agent.parent_session_id.as_deref().unwrap_or_default())
        .replace("{agent}", &agent.name)
        .replace("{status}", result.status.as_str())
        .replace("{answer}", &result.summary())
}

pub fn run(command: &[String], record: &QuestionRecord, result: &AskResult) {
    let Some((program, args)) = command.split_first() else { return };
    let agent = record.request.agent.clone().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args.iter().map(|a| fill(a, record, result)))
        .env("ASKUSER_ID", &record.id)
        .env("ASKUSER_SESSION_ID", agent.session_id.unwrap_or_default())
        .env("ASKUSER_PARENT_SESSION_ID", agent.parent_session_id.unwrap_or_default())
        .env("ASKUSER_AGENT", agent.name)
        .env("ASKUSER_STATUS", result.status.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    let json = serde_json::to_vec(result).unwrap_or_default();
    let id = record.id.clone();
    let program = program.clone();
    match cmd.spawn() {
        Ok(mut child) => {
            tokio::spawn(async move {
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(&json).await;
                }
                match child.wait().await {
                    Ok(status) if status.success() => tracing::info!(%id, "late-answer command finished"),
                    Ok(status) => tracing::warn!(%id, "late-answer command {program} exited with {status}"),
                    Err(e) => tracing::warn!(%id, "late-answer command {program} failed: {e}"),
                }
            });
        }
        Err(e) => tracing::warn!(%id, "cannot run the late-answer command {program}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askuser_core::{Agent, Request, Status};

    #[test]
    fn placeholders_become_the_values_and_nothing_else() {
        let request = Request {
            agent: Some(Agent { name: "claude-code".into(), session_id: Some("s-42".into()), ..Default::default() }),
            ..Request::default()
        };
        let record = QuestionRecord {
            id: "q-1".into(),
            request: request.clone(),
            status: Status::Answered,
            created_at: 1,
            answered_at: None,
            result: None,
            answered_by: None,
        };
        let result = AskResult::unanswered("q-1", &request, Status::Withdrawn, 2);
        assert_eq!(fill("--resume={session}", &record, &result), "--resume=s-42");
        assert_eq!(fill("{id}:{status}:{parent}:{agent}", &record, &result), "q-1:withdrawn::claude-code");
        assert_eq!(fill("SESSION", &record, &result), "SESSION", "only braces are placeholders");
    }
}
