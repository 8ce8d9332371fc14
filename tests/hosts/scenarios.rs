//! What every host is tested on, written once: the model asks the person a question
//! through askuser, and the person answers it in the inbox, late or after the host was
//! killed, or declines it. Each host file says how to set its host up and run it, and
//! what it shows the model ([`Host`]), and runs each scenario from its own tests
//! (`codex_…`, `claude_…`, `gemini_…`, so `cargo test -- codex` picks one host).

use crate::harness::Home;
use crate::model::{Model, Seen, Turn};
use crate::run::Run;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a host may take to start, list askuser's tool and call it (a loaded machine).
pub const START: Duration = Duration::from_secs(90);
/// How long one step of a conversation may take.
pub const STEP: Duration = Duration::from_secs(60);
/// Longer than a host takes to dismiss its elicitation form by itself (milliseconds), and
/// than the second within which askuser takes a dismissal for the host's, not the person's.
const AUTO_DECLINE: Duration = Duration::from_millis(2500);
/// The tool timeout of a user who lowered it: the person is slower.
const SHORT_TIMEOUT: Duration = Duration::from_secs(5);
/// What the user asks the host to do.
pub const PROMPT: &str = "Ask me which database the service should use, then say done.";

/// One host's CLI as these scenarios run it, and what it shows the model.
pub trait Host {
    /// The host's name in the inbox (askuser's name for its MCP client) and in messages.
    const NAME: &'static str;
    /// Its name to `askuser setup`.
    const SETUP: &'static str;
    /// What the host does headless with askuser's elicitation form, by itself and within
    /// milliseconds ("declined", "cancelled"); `None` for a host that declares no elicitation.
    const DISMISSES_FORMS: Option<&'static str>;
    /// The reason the host gives askuser (`notifications/cancelled`) when its tool timeout
    /// runs out.
    const TIMEOUT_REASON: &'static str;

    /// What a user of the host has in HOME before setting askuser up.
    fn before_setup(_home: &Home) {}

    /// A new user who set askuser up for this host with `askuser setup HOST`.
    async fn user() -> Home {
        let home = Home::new().await;
        Self::before_setup(&home);
        home.askuser(&["setup", Self::SETUP]);
        home
    }

    /// The host run headless on [`PROMPT`] for this user against `model`, with what setup
    /// wrote checked; `tool_timeout`: the user lowered askuser's tool timeout to that;
    /// `line`: run this shell line instead, as pasted from the docs ([`command`]).
    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run;

    /// Checks askuser's tool as the host offered it in its `first` request to the model.
    fn assert_offered(first: &Seen);

    /// Checks, from what the host logged in `home`, how it spoke MCP to askuser.
    fn assert_protocol(_home: &Home) {}

    /// Exactly what the model reads (inside [`Host::unframed`]) when the host gives up on a
    /// call with `args` after `timeout`.
    fn timed_out(args: &Value, timeout: Duration) -> String;

    /// A tool's output as the model read it, without what the host puts around every one;
    /// checked to be there.
    fn unframed(read: &str) -> &str {
        read
    }

    /// askuser's result in a tool's output, as the host shows one (and not a failed call)
    /// to the model.
    fn result(output: &str) -> Shown;
}

/// The host's command (`program` with `args`), or the shell line a user pasted from the docs.
pub fn command(home: &Home, program: &str, args: &[&str], line: Option<&str>) -> tokio::process::Command {
    match line {
        Some(line) => {
            let mut cmd = home.host(Path::new("sh"));
            cmd.arg("-c").arg(line);
            cmd
        }
        None => {
            let mut cmd = home.host(&crate::harness::host_bin(program));
            cmd.args(args);
            cmd
        }
    }
}

/// The lines of the first ```sh block under `heading` in `file` (from the repository's root).
pub fn doc_lines(file: &str, heading: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let section = text.split_once(&format!("\n{heading}\n")).map(|(_, rest)| rest);
    let section = section.unwrap_or_else(|| panic!("{file} has no section {heading:?}"));
    let block = section.split_once("```sh\n").and_then(|(before, rest)| Some((before, rest.split_once("\n```")?.0)));
    match block {
        Some((before, block)) if !before.contains("\n#") => block.lines().map(str::to_owned).collect(),
        _ => panic!("{heading:?} in {file} has no ```sh block"),
    }
}

/// The lines under `heading` in `file` work when pasted by a new user of the host who
/// has askuser and the host installed: `askuser setup …` (`target/release/askuser`, as
/// the README builds it, is the askuser under test), then the host's line exactly as
/// written, which asks; the person's answer reaches the model, and the host exits 0. A
/// `scripts/run` line is the bridge, which this home runs already.
pub async fn pasted<H: Host>(file: &str, heading: &str) {
    let lines = doc_lines(file, heading);
    let (setup, rest): (Vec<&String>, Vec<&String>) =
        lines.iter().filter(|l| !l.starts_with("scripts/run")).partition(|l| l.contains("askuser setup "));
    let fits = setup.len() == 1 && setup[0].contains(&format!("askuser setup {}", H::SETUP)) && rest.len() == 1;
    assert!(
        fits,
        "{heading:?} in {file}: expected `askuser setup {}` and one line that runs the host; it is:\n{}",
        H::SETUP,
        lines.join("\n")
    );
    let home = Home::new().await;
    H::before_setup(&home);
    let askuser = format!("'{}'", crate::harness::askuser_bin().display());
    home.sh(&setup[0].replacen("target/release/askuser", &askuser, 1));

    let model = Model::new([Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut run = H::start(&home, &model, None, Some(rest[0])).await;
    let id = asked::<H>(&home, &run).await;
    if let Some(prompt) = rest[0].split('"').nth(1) {
        let first = model.seen()[0].body.to_string();
        assert!(first.contains(prompt), "the model gets the prompt {prompt:?} of `{}`: {first}", rest[0]);
    }
    home.answer(&id, sqlite()).await;
    let results = run.results(1, STEP, "after the answer").await;
    assert_answer::<H>(&results[0], &run);
    assert!(run.exit(STEP).await.success(), "`{}` exits 0\n{}", rest[0], run.report());
}

/// askuser's result as a host shows it to the model.
pub struct Shown {
    /// Its status (`answered`, `cancelled`), when the host shows `structuredContent`.
    pub status: Option<String>,
    /// What it means and what the model must do next, in words.
    pub message: String,
}

/// A result shown as its `structuredContent` in JSON text (Codex, Claude Code).
pub fn structured(output: &str) -> Shown {
    let read: Value =
        serde_json::from_str(output).unwrap_or_else(|e| panic!("the model reads structuredContent as JSON ({e}): {output:?}"));
    let message = read["message"].as_str().unwrap_or_else(|| panic!("structuredContent must carry the message: {read:#}"));
    Shown { status: read["status"].as_str().map(str::to_owned), message: message.to_owned() }
}

/// A question the model asks.
pub fn database_question() -> Value {
    json!({"questions": [{
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "PostgreSQL (Recommended)", "description": "A server; what production runs."},
            {"label": "SQLite", "description": "A file next to the service; nothing to run."}
        ]
    }]})
}

/// The person's answer to [`database_question`].
pub fn sqlite() -> Value {
    json!({"answers": [{"selected": ["SQLite"]}]})
}

/// The first question to reach the bridge (pending or not, the oldest), checked to be the
/// model's and to name the host; its id.
pub async fn asked<H: Host>(home: &Home, run: &Run) -> String {
    let until = Instant::now() + START;
    let question = loop {
        if let Some(q) = home.questions("all").await.into_iter().min_by_key(|q| q["createdAt"].as_u64()) {
            break q;
        }
        assert!(Instant::now() < until, "no question reached the bridge within {START:?}\n{}", run.report());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(question["request"]["questions"][0]["question"], database_question()["questions"][0]["question"], "{question:#}");
    assert_eq!(question["request"]["agent"]["name"], H::NAME, "the inbox names the host by its MCP client's name: {question:#}");
    question["id"].as_str().expect("the question has an id").to_owned()
}

/// A new user's host, run on a `script` that starts with [`database_question`], has asked
/// it, and the question waits for the person, and the host for it: after its elicitation
/// form was dismissed by the host (headless, nobody saw it) where it declares elicitation.
async fn waiting<H: Host>(script: impl IntoIterator<Item = Turn>, tool_timeout: Option<Duration>) -> Waiting {
    let home = H::user().await;
    let model = Model::new(script);
    let run = H::start(&home, &model, tool_timeout, None).await;
    let id = asked::<H>(&home, &run).await;
    let why = match H::DISMISSES_FORMS {
        Some(dismissed) => {
            tokio::time::sleep(AUTO_DECLINE).await;
            format!(
                "{} {dismissed} the elicitation form on its own (headless, nobody saw it), and askuser took that for the \
                 person's \"no\": the question must stay pending in the inbox",
                H::NAME
            )
        }
        None => "nobody has answered yet: the question waits in the inbox".to_owned(),
    };
    assert_eq!(home.statuses().await, [format!("{id}: pending")], "{why}\n{}", run.report());
    assert_eq!(model.results(), Vec::<String>::new(), "the call must still be waiting for the person\n{}", run.report());
    Waiting { home, model, run, id }
}

/// A question from the host waiting for the person.
struct Waiting {
    home: Home,
    model: Model,
    run: Run,
    /// The question's id.
    id: String,
}

/// `read` is the person's answer to [`database_question`], as the host shows it.
pub fn assert_answer<H: Host>(read: &str, run: &Run) {
    assert!(read.contains("SQLite") && read.contains("answered"), "the model must read the answer: {read:?}\n{}", run.report());
    let shown = H::result(H::unframed(read));
    if let Some(status) = shown.status {
        assert_eq!(status, "answered", "{read}");
    }
    assert!(shown.message.contains("SQLite"), "the message names the answer: {read}");
}

/// Asked headless, the question waits in the inbox however the host treats its own form,
/// and the person's answer there is what the model reads; the host then ends cleanly,
/// printing the model's last words.
pub async fn answered<H: Host>() {
    let Waiting { home, model, mut run, id } = waiting::<H>([Turn::Ask(database_question()), Turn::Say("done".into())], None).await;
    H::assert_offered(model.seen().first().expect("the host asked the model"));

    home.answer(&id, sqlite()).await;
    let results = run.results(1, STEP, "after the answer").await;
    assert_answer::<H>(&results[0], &run);
    assert!(run.exit(STEP).await.success(), "{} exits 0\n{}", H::NAME, run.report());
    assert_eq!(home.statuses().await, [format!("{id}: answered")]);
    assert!(run.output().contains("done"), "{} prints the model's last words\n{}", H::NAME, run.report());
    H::assert_protocol(&home);
}

/// A person slower than the host's tool timeout: the host gives up on the call, the
/// question stays open, the model's retry with the same arguments waits on the same
/// question, and the answer given then reaches the model.
pub async fn retried_after_the_timeout<H: Host>() {
    let script = [Turn::Ask(database_question()), Turn::Ask(database_question()), Turn::Say("done".into())];
    let Waiting { home, mut run, id, .. } = waiting::<H>(script, Some(SHORT_TIMEOUT)).await;
    let results = run.results(1, STEP, &format!("{}'s tool timeout", H::NAME)).await;
    let expected = H::timed_out(&database_question(), SHORT_TIMEOUT);
    assert_eq!(H::unframed(&results[0]), expected, "what the model reads when {} gives up\n{}", H::NAME, run.report());
    // The retry is on its way (the model answered the timeout with the same call).
    run.turns(2, STEP, "after the timeout").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        home.statuses().await,
        [format!("{id}: pending")],
        "{}'s timeout ({:?}) is not the person's no: the question stays open, and the retry with the same arguments \
         resumes it instead of asking again\n{}",
        H::NAME,
        H::TIMEOUT_REASON,
        run.report()
    );

    // Within the retry's own SHORT_TIMEOUT.
    home.answer(&id, sqlite()).await;
    let results = run.results(2, STEP, "the answer after the retry").await;
    assert_answer::<H>(&results[1], &run);
    assert!(run.exit(STEP).await.success(), "{} exits 0\n{}", H::NAME, run.report());
    assert_eq!(home.statuses().await, [format!("{id}: answered")], "one question, answered");
}

/// The host killed while the person thinks; they answer with nobody waiting; the next
/// run that asks the same gets that answer, and the person is not asked twice.
pub async fn killed_then_restarted<H: Host>() {
    let Waiting { home, mut run, id, .. } = waiting::<H>([Turn::Ask(database_question())], None).await;

    run.kill();
    let status = run.exit(STEP).await;
    assert!(!status.success(), "killed: {status:?}");
    drop(run);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(home.statuses().await, [format!("{id}: pending")], "the host went away: the question stays open");
    home.answer(&id, sqlite()).await;

    let second = Model::new([Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut run = H::start(&home, &second, None, None).await;
    let until = Instant::now() + START;
    while second.results().is_empty() {
        let now = home.statuses().await;
        if now.len() > 1 || Instant::now() > until {
            panic!(
                "the restarted {} asked the same question again and got no answer: the questions are {now:?}; it must \
                 resume {id}, answered meanwhile, and not ask the person a second time\n{}",
                H::NAME,
                run.report()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_answer::<H>(&second.results()[0], &run);
    assert_eq!(home.statuses().await, [format!("{id}: answered")], "no second question");
    assert!(run.exit(STEP).await.success(), "{} exits 0\n{}", H::NAME, run.report());
}

/// The person declines in the inbox, or picks "Chat about this": what the model reads says
/// so and tells it not to assume an answer; its message, lower-cased.
async fn declined<H: Host>(chat: bool) -> String {
    let Waiting { home, mut run, id, .. } = waiting::<H>([Turn::Ask(database_question()), Turn::Say("done".into())], None).await;

    home.decline(&id, chat).await;
    let results = run.results(1, STEP, "after the decline").await;
    assert!(run.exit(STEP).await.success(), "{} exits 0\n{}", H::NAME, run.report());
    assert_eq!(home.statuses().await, [format!("{id}: cancelled")]);
    let shown = H::result(H::unframed(&results[0]));
    if let Some(status) = shown.status {
        assert_eq!(status, "cancelled", "{}", results[0]);
    }
    let message = shown.message.to_lowercase();
    assert!(message.contains("do not assume an answer"), "the model must be told not to assume an answer: {:?}", results[0]);
    message
}

/// The person declines: the model reads that they did.
pub async fn declined_in_the_inbox<H: Host>() {
    let message = declined::<H>(false).await;
    assert!(message.contains("declined"), "the model must read that the user declined: {message:?}");
}

/// The person picks "Chat about this": the model reads that they want to talk it over.
pub async fn chat_about_this<H: Host>() {
    let message = declined::<H>(true).await;
    assert!(
        message.contains("talk") || message.contains("discuss"),
        "the model must read that the user wants to talk it over: {message:?}"
    );
}
