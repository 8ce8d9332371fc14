//! Late answers: a command run when a question is answered after its agent went away,
//! so an answer can restart a headless agent (`claude -p --resume SESSION`).
//!
//! The command runs without a shell. It gets the canonical result as JSON on stdin and
//! the ids in `ASKUSER_ID`, `ASKUSER_SESSION_ID`, `ASKUSER_PARENT_SESSION_ID`,
//! `ASKUSER_AGENT` and `ASKUSER_STATUS`.

use askuser_core::protocol::QuestionRecord;
use askuser_core::AskResult;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

pub fn run(command: &[String], record: &QuestionRecord, result: &AskResult) {
    let Some((program, args)) = command.split_first() else { return };
    let agent = record.request.agent.clone().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
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
