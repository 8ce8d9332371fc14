//! The command line. Each subcommand is a small function returning an exit code;
//! errors are printed to stderr as one clear line each.

use crate::ask::{AskArgs, McpArgs, EXIT_INVALID};
use crate::client::{BridgeArgs, Client, Refused};
use crate::input::read_text;
use crate::term::{err, fail, out, print_json};
use askuser_bridge::client::Scope;
use askuser_bridge::notify::{self, DiscordBot, Email, NotifyOptions, Quiet, Rules, SlackApp, TelegramBot};
use askuser_bridge::runtime;
use askuser_bridge::store::Durability;
use askuser_bridge::Settings;
use askuser_bridge::{client, files};
use askuser_bridge::{serve, ServeOptions};
use askuser_core::dialect::normalize_str;
use askuser_core::protocol::{AnswerBody, AnswerItem, AnswerSet, QuestionRecord};
use askuser_core::{AskResult, Format, Limits};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `askuser --version`: the crate's version and the git revision it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ASKUSER_REVISION"), ")");

#[derive(Debug, Parser)]
#[command(name = "askuser", version = VERSION, about = "Let headless AI agents ask a human, and get the answer back.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a request in any dialect (Claude Code, pi, Opal, Roo Code) and print it normalized.
    ///
    /// Prints the canonical request as JSON on stdout and warnings on stderr, exit 0;
    /// on invalid input prints one `path: message` line per error on stderr, exit 2.
    Validate {
        /// A JSON file, or `-` (the default) for standard input.
        file: Option<PathBuf>,
        /// Which limits apply.
        #[arg(long, value_enum, default_value_t = LimitsProfile::Default)]
        limits: LimitsProfile,
    },
    /// Print a canonical result in another format.
    Format {
        /// canonical, claude, pi or text.
        #[arg(long, short, default_value = "canonical")]
        format: Format,
        /// A JSON file with a canonical result, or `-` (the default) for standard input.
        file: Option<PathBuf>,
    },
    /// Run the bridge: agents ask it, browsers (and `askuser answer`) answer.
    Serve(ServeArgs),
    /// List the questions waiting for an answer.
    Pending {
        #[command(flatten)]
        bridge: BridgeArgs,
        /// Print the stored records as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer a question from the terminal: one ANSWER per question, in order.
    ///
    /// An ANSWER equal to an option's label (ignoring case) selects it; for a multi-select
    /// question, labels separated by commas select each; anything else is the "Other" text.
    Answer {
        #[command(flatten)]
        bridge: BridgeArgs,
        /// The question set's id (see `askuser pending`).
        id: String,
        #[arg(required = true)]
        answers: Vec<String>,
    },
    /// Ask a question through the bridge and print the answer (for scripts and agents without MCP).
    ///
    /// Exit codes: 0 answered, 3 cancelled, 4 timed out or withdrawn, 2 invalid input,
    /// 1 bridge unreachable.
    Ask(AskArgs),
    /// Print the result of an earlier ask (e.g. one stored with `askuser ask --no-wait`).
    ///
    /// Exit codes as for `ask`, and 5 while the question is still pending (without --wait).
    Result {
        #[command(flatten)]
        bridge: BridgeArgs,
        id: String,
        /// Wait until the question is final.
        #[arg(long)]
        wait: bool,
        #[arg(long, short, default_value = "canonical")]
        format: Format,
    },
    /// Serve the `ask_user` tool over MCP (stdio) for Claude Code, Codex, Gemini CLI or any MCP client.
    ///
    /// Finds a running bridge (flags, environment, bridge.json) or starts one in this process.
    Mcp(McpArgs),
    /// Run an Agent Client Protocol agent headless (`askuser acp -- AGENT [ARGS...]`) with
    /// one prompt, asking the person in the inbox what the agent asks its editor.
    ///
    /// The prompt comes from --prompt or standard input; the agent's reply goes to stdout.
    /// Its permission requests are approvals, its forms questions; it may read and write
    /// files in the current folder only. Exit 0 when its turn ends.
    Acp(crate::acp::AcpArgs),
    /// Decline a question set.
    Cancel {
        #[command(flatten)]
        bridge: BridgeArgs,
        id: String,
    },
    /// Print a shell completion script (e.g. `askuser completions bash > ~/.local/share/bash-completion/completions/askuser`).
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (e.g. `askuser man > ~/.local/share/man/man1/askuser.1`).
    Man,
    /// Set a host up to run `askuser mcp`: Claude Code, Claude Desktop, Codex, Gemini CLI, Cursor, OpenCode, Copilot CLI, Cline, Qwen Code, or any (json).
    Setup(crate::setup::SetupArgs),
    /// Check the data directory, the token, the bridge, the web UI and each host's configuration.
    Doctor(crate::doctor::DoctorArgs),
    /// Pair a phone or laptop: prints a link (and its QR code) with a one-time code;
    /// opening it gives that browser a device token of its own.
    Pair {
        #[command(flatten)]
        bridge: BridgeArgs,
        /// What the device is called in `askuser tokens list`.
        #[arg(long, default_value = "paired device")]
        name: String,
        /// The person it belongs to: questions for them or their teams reach it first.
        #[arg(long, value_name = "NAME")]
        person: Option<String>,
        /// How long the code is good for.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=60))]
        minutes: u64,
    },
    /// The paired devices (device tokens), and how to cut one off.
    Devices {
        #[command(flatten)]
        bridge: BridgeArgs,
    },
    /// Scoped tokens: agent tokens ask, device tokens answer; list, make and revoke them
    /// (with the admin token).
    Tokens {
        #[command(flatten)]
        bridge: BridgeArgs,
        #[command(subcommand)]
        action: TokensAction,
    },
    /// The inbox and the dialog in this terminal (for SSH, or no browser at hand).
    Tui(crate::tui::TuiArgs),
    /// People and their teams: a question for a person or team (`askuser ask --to`)
    /// reaches their devices first (with the admin token).
    People {
        #[command(flatten)]
        bridge: BridgeArgs,
        #[command(subcommand)]
        action: Option<PeopleAction>,
    },
    /// Approval rules (what "Always allow" kept) and the audit log of decisions; making
    /// and removing rules takes the admin token.
    Rules {
        #[command(flatten)]
        bridge: BridgeArgs,
        #[command(subcommand)]
        action: Option<RulesAction>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum RulesAction {
    /// Every rule, oldest first (the default).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Allows calls the rule matches without asking: `Bash(cargo test:*)`, `Edit(src/**)`,
    /// `WebFetch(domain:docs.rs)`, `Bash` (every command). Everywhere unless scoped.
    Add {
        rule: String,
        /// Only for agents working in this folder or below it.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["session", "agent"])]
        project: Option<String>,
        /// Only for this agent session.
        #[arg(long, value_name = "ID", conflicts_with = "agent")]
        session: Option<String>,
        /// Only for agents of this name (`claude-code`).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Removes a rule by its id: such calls are asked again.
    Remove { id: String },
    /// The audit log, newest first: every decision, by a person or a rule.
    Log {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

async fn rules(client: &Client, action: Option<RulesAction>) -> anyhow::Result<()> {
    let safe = |v: &serde_json::Value| crate::term::safe(v.as_str().unwrap_or_default()).into_owned();
    match action.unwrap_or(RulesAction::List { json: false }) {
        RulesAction::List { json } => {
            let rules = client.rules().await?;
            if json {
                print_json(&rules);
            } else if rules.as_array().is_none_or(Vec::is_empty) {
                out!("No rules yet: \"Always allow\" on an approval keeps one, or `askuser rules add 'Bash(cargo test:*)' --project .`");
            } else {
                for r in rules.as_array().into_iter().flatten() {
                    out!("{}  {}", safe(&r["id"]), safe(&r["text"]));
                    // Kept by an earlier version, or made wide on purpose: said, to review.
                    if r["wider"].is_string() {
                        out!("    review: wider than \"Always allow\" keeps now: {}", safe(&r["wider"]));
                    }
                }
                err!("askuser: `askuser rules remove ID` asks such calls again");
            }
        }
        RulesAction::Add { rule, project, session, agent } => {
            // A relative folder means this one: the rule is kept with the absolute path.
            let project = match project {
                Some(dir) => {
                    Some(std::path::absolute(&dir).map_err(|e| anyhow::anyhow!("--project {dir}: {e}"))?.to_string_lossy().into_owned())
                }
                None => None,
            };
            let body = serde_json::json!({"rule": rule, "project": project, "session": session, "agent": agent});
            let made = client.add_rule(&body).await?;
            out!("{}  {}", safe(&made["id"]), safe(&made["text"]));
        }
        RulesAction::Remove { id } => {
            client.remove_rule(&id).await?;
            out!("Removed {id}: such calls are asked again.");
        }
        RulesAction::Log { limit, json } => {
            let log = client.decisions(limit).await?;
            if json {
                print_json(&log);
                return Ok(());
            }
            if log.as_array().is_none_or(Vec::is_empty) {
                out!("No decisions yet.");
            }
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
            for d in log.as_array().into_iter().flatten().rev() {
                let by = match (d["rule"].as_str(), d["by"].as_str()) {
                    (Some(rule), _) if d["question"].is_null() => format!("by rule {rule}"),
                    (_, Some(by)) => format!("by {by}"),
                    _ => String::new(),
                };
                let ago = age(now.saturating_sub(d["at"].as_u64().unwrap_or(now)));
                out!("{ago:>6} ago  {:<6} {}: {}  {by}", safe(&d["decision"]), safe(&d["tool"]), safe(&d["summary"]));
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Subcommand)]
pub enum PeopleAction {
    /// Every person, their teams and devices (the default).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Puts a person in exactly these teams (none: in no team).
    Teams {
        person: String,
        #[arg(long = "team", value_name = "TEAM")]
        teams: Vec<String>,
    },
}

async fn people(client: &Client, action: Option<PeopleAction>) -> anyhow::Result<()> {
    match action.unwrap_or(PeopleAction::List { json: false }) {
        PeopleAction::List { json } => {
            let people = client.people().await?;
            if json {
                print_json(&people);
            } else if people.as_array().is_none_or(Vec::is_empty) {
                out!("No people yet: `askuser pair --person alice` pairs a device of hers, `askuser people teams alice --team db` puts her in a team.");
            } else {
                for p in people.as_array().into_iter().flatten() {
                    let list = |v: &serde_json::Value| {
                        v.as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", ")).unwrap_or_default()
                    };
                    out!(
                        "{}  teams: {}  devices: {}",
                        crate::term::safe(p["person"].as_str().unwrap_or_default()),
                        crate::term::safe(&list(&p["teams"])),
                        crate::term::safe(&list(&p["devices"]))
                    );
                }
            }
        }
        PeopleAction::Teams { person, teams } => {
            let set = client.set_teams(&person, &teams).await?;
            out!("{}", serde_json::to_string(&set).unwrap_or_default());
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Where to listen; 127.0.0.1:0 picks a free port.
    #[arg(long, default_value = client::DEFAULT_ADDR)]
    pub addr: String,
    /// Where askuser keeps its files (default: $ASKUSER_DATA_DIR, else the platform's data directory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The bearer token (default: $ASKUSER_TOKEN, else one created once per data directory).
    #[arg(long)]
    pub token: Option<String>,
    /// Also accept browser connections from this origin (e.g. a web IDE's), repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Time out questions that set no timeout of their own after this many seconds (default: never).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// How long a question whose agent went away stays answerable, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 24 * 3600)]
    pub grace: u64,
    /// A question for a person or team (`agent.assignee`, `askuser ask --to`) reaches
    /// everyone else's devices after this many seconds, or `never`.
    #[arg(long, value_name = "SECONDS|never", default_value = "300", value_parser = escalation)]
    pub escalate_after: Escalation,
    /// How long answered questions stay in the history, in days.
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub retention_days: u64,
    /// Keep questions, credentials and subscriptions in this PostgreSQL database, shared
    /// by every bridge given the same URL (a team's inbox; docs/deploy.md), instead of the
    /// SQLite file in the data directory: postgres://USER:PASSWORD@HOST/DB, with
    /// ?sslmode=require&sslrootcert=CA.pem for TLS. Also from ASKUSER_STORE.
    #[arg(long, value_name = "URL", env = "ASKUSER_STORE", hide_env_values = true, value_parser = StoreUrl)]
    pub store: Option<String>,
    /// `full` also survives power loss (slower); `normal` survives a killed process.
    #[arg(long, value_enum, default_value_t = DurabilityArg::Normal)]
    pub durability: DurabilityArg,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
    /// The most connections open at once (tabs, agents and requests together); one more
    /// gets a 503. Kept below the open-file limit.
    #[arg(long, value_name = "N", default_value_t = askuser_bridge::Limits::default().max_connections, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(1..), |n| n as usize))]
    pub max_connections: usize,
    /// Start even though the question store was found damaged (truncated, a damaged
    /// write-ahead log, or failing SQLite's integrity check), with what can still be read.
    /// Keep a copy of the data directory first.
    #[arg(long)]
    pub accept_damaged_store: bool,
    /// Run this command (no shell) when a question is answered after its agent left;
    /// {id} {session} {parent} {agent} {status} {answer} in it are replaced, and it gets the
    /// result JSON on stdin and ASKUSER_ID, ASKUSER_SESSION_ID in its environment.
    #[arg(long, num_args = 1.., value_name = "CMD", allow_hyphen_values = true)]
    pub on_late_answer: Vec<String>,
    /// Speak HTTPS with a certificate made once for this data directory (kept in its
    /// `tls/`); its SHA-256 fingerprint is printed for clients to pin. Required to
    /// listen beyond loopback, unless --tls-cert/--tls-key or --trust-proxy.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls: bool,
    /// Speak HTTPS with this PEM certificate (chain) ...
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// ... and this PEM private key.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A host name people reach this bridge by (repeatable): accepted in the Host and
    /// Origin headers, and put in the certificate --tls makes.
    #[arg(long = "name", value_name = "HOST")]
    pub names: Vec<String>,
    /// The https address people reach this bridge at through a TLS proxy in front of it
    /// (e.g. https://askuser.example.com): accepted as Host and Origin, and the address
    /// printed to open.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Listen beyond loopback over plain HTTP, because the TLS proxy at --public-url is
    /// in front and is the only way in. A client's address (for the pairing limit) is then
    /// the last one in X-Forwarded-For, which the proxy must append.
    #[arg(long, requires = "public_url", conflicts_with_all = ["tls", "tls_cert"])]
    pub trust_proxy: bool,
    #[command(flatten)]
    pub notify: NotifyArgs,
}

/// Reaching people away from the screen (docs/notify.md). Paired devices subscribe to
/// push from the page; these flags add channels and their rules.
#[derive(Debug, Clone, Args)]
pub struct NotifyArgs {
    #[command(flatten)]
    pub webhook: WebhookArgs,
    #[command(flatten)]
    pub ntfy: NtfyArgs,
    #[command(flatten)]
    pub slack: SlackArgs,
    #[command(flatten)]
    pub telegram: TelegramArgs,
    #[command(flatten)]
    pub whatsapp: WhatsAppArgs,
    #[command(flatten)]
    pub discord: DiscordArgs,
    #[command(flatten)]
    pub email: EmailArgs,
    /// The webhook, ntfy, Slack, Telegram, WhatsApp, Discord and email hear only of this
    /// agent's questions (name or session id; repeatable). `webhook:NAME`, `ntfy:NAME`,
    /// `slack:NAME`, `telegram:NAME`, `whatsapp:NAME`, `discord:NAME` or `email:NAME` sets it
    /// for one channel.
    #[arg(long = "notify-agent", value_name = "[CHANNEL:]NAME")]
    pub notify_agents: Vec<String>,
    /// The webhook, ntfy, Slack, Telegram, WhatsApp, Discord and email hear of a question only
    /// if it is still unanswered this many seconds after it was asked (`webhook:60`,
    /// `telegram:0`: for one channel).
    #[arg(long = "notify-delay", value_name = "[CHANNEL:]SECONDS")]
    pub notify_delays: Vec<String>,
    /// No webhook, ntfy, Slack, Telegram, WhatsApp, Discord or email message between these
    /// times of this machine's day (e.g. 22:00-07:00); what is asked then is sent when they
    /// end, if it still waits (`ntfy:22:00-07:00`: for one channel).
    #[arg(long = "notify-quiet", value_name = "[CHANNEL:]HH:MM-HH:MM")]
    pub notify_quiets: Vec<String>,
    /// Also allow push messages to this push service host (repeatable; `*.` for a
    /// domain). Browsers' own services are allowed already.
    #[arg(long = "push-service", value_name = "HOST")]
    pub push_services: Vec<String>,
    /// Who runs this bridge, told to push services (mailto: or https:).
    #[arg(long, value_name = "URI", default_value = "mailto:askuser@localhost")]
    pub push_contact: String,
    /// How long an answer link in a notification works, in hours.
    #[arg(long, value_name = "HOURS", default_value_t = 24)]
    pub answer_link_hours: u64,
}

/// A channel's own flags: whether they ask for it, and the channel they set up.
trait ChannelArgs {
    /// The channel's name, as `[CHANNEL:]` in the rules' flags say it.
    fn name(&self) -> &'static str;
    /// Whether its flags ask for it.
    fn wanted(&self) -> bool;
    /// Adds the channel to `opts`, hearing of questions as `rules` say.
    fn add(&self, opts: &mut NotifyOptions, rules: Rules, data_dir: &std::path::Path) -> anyhow::Result<()>;
}

impl NotifyArgs {
    /// Every channel's flags (a channel is added to the command line here).
    fn channels(&self) -> [&dyn ChannelArgs; 7] {
        [&self.webhook, &self.ntfy, &self.slack, &self.telegram, &self.whatsapp, &self.discord, &self.email]
    }

    pub fn options(&self, data_dir: &std::path::Path) -> anyhow::Result<NotifyOptions> {
        let mut opts = NotifyOptions::default();
        opts.push_services.hosts.extend(self.push_services.iter().cloned());
        opts.push_contact = self.push_contact.clone();
        opts.link_ttl = Duration::from_secs(self.answer_link_hours.clamp(1, 24 * 30) * 3600);
        let names: Vec<&str> = self.channels().iter().map(|c| c.name()).collect();
        let rules = |channel: &str| -> anyhow::Result<Rules> {
            // A value for this channel (`webhook:…`), or for every one (no prefix).
            let mine = |values: &[String]| -> Vec<String> {
                values
                    .iter()
                    .filter_map(|v| match v.split_once(':') {
                        Some((c, rest)) if c == channel => Some(rest.to_owned()),
                        Some((c, _)) if names.contains(&c) => None,
                        _ => Some(v.clone()),
                    })
                    .collect()
            };
            let delay = match mine(&self.notify_delays).last() {
                None => 0,
                Some(d) => d.parse().map_err(|_| anyhow::anyhow!("--notify-delay: expected [CHANNEL:]SECONDS, got {d:?}"))?,
            };
            let quiet = match mine(&self.notify_quiets).last() {
                None => None,
                Some(text) => {
                    let (from, to) = text
                        .split_once('-')
                        .ok_or_else(|| anyhow::anyhow!("--notify-quiet: expected [CHANNEL:]HH:MM-HH:MM (22:00-07:00), got {text:?}"))?;
                    let utc_offset_minutes = askuser_bridge::notify::local_offset_minutes();
                    Some(Quiet { from: from.trim().into(), to: to.trim().into(), utc_offset_minutes })
                }
            };
            let rules = Rules { agents: mine(&self.notify_agents), delay_seconds: delay, quiet };
            rules.check().map_err(|e| anyhow::anyhow!("{}", e.replace("rules.", "--notify-")))?;
            Ok(rules)
        };
        for channel in self.channels().into_iter().filter(|c| c.wanted()) {
            channel.add(&mut opts, rules(channel.name())?, data_dir)?;
        }
        Ok(opts)
    }
}

#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// POST each new question to this URL as JSON signed with HMAC-SHA256 (Slack's
    /// incoming webhooks show it as is).
    #[arg(long, value_name = "URL")]
    pub notify_webhook: Option<String>,
    /// The webhook's signing secret (default: one made once, kept in the data
    /// directory's notify/webhook-secret).
    #[arg(long, env = "ASKUSER_WEBHOOK_SECRET", value_name = "SECRET", hide_env_values = true)]
    pub notify_webhook_secret: Option<String>,
}

impl ChannelArgs for WebhookArgs {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn wanted(&self) -> bool {
        self.notify_webhook.is_some()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, data_dir: &std::path::Path) -> anyhow::Result<()> {
        let url = self.notify_webhook.as_deref().unwrap_or_default();
        let url: reqwest::Url = url.parse().map_err(|e| {
            anyhow::anyhow!(
                "--notify-webhook: expected a URL, got {:?} ({e})",
                askuser_bridge::redact(askuser_bridge::Secret::Webhook(url))
            )
        })?;
        let secret = match &self.notify_webhook_secret {
            Some(s) => s.clone(),
            None => notify::webhook_secret(data_dir)?,
        };
        opts.add(notify::Webhook { url, secret, rules });
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct NtfyArgs {
    /// Publish each new question to this ntfy topic (e.g. https://ntfy.sh/my-topic),
    /// with buttons that answer.
    #[arg(long, value_name = "URL/TOPIC")]
    pub notify_ntfy: Option<String>,
    /// An access token for a protected ntfy topic.
    #[arg(long, env = "ASKUSER_NTFY_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub notify_ntfy_token: Option<String>,
}

impl ChannelArgs for NtfyArgs {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn wanted(&self) -> bool {
        self.notify_ntfy.is_some()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        let url = self.notify_ntfy.as_deref().unwrap_or_default();
        let ntfy = notify::Ntfy::parse(url, self.notify_ntfy_token.clone()).map_err(anyhow::Error::msg)?;
        opts.add(notify::Ntfy { rules, ..ntfy });
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct SlackArgs {
    /// Post each question set to this Slack channel (its id, C…/G…/D…) with buttons
    /// that answer; `NAME=CHANNEL` posts a person's or team's there instead (repeatable).
    /// Needs the app's bot token and signing secret (docs/notify.md).
    #[arg(long = "notify-slack", value_name = "[NAME=]CHANNEL")]
    pub notify_slack: Vec<String>,
    /// The Slack app's bot token (xoxb-…).
    #[arg(long, env = "ASKUSER_SLACK_BOT_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub slack_bot_token: Option<String>,
    /// The Slack app's signing secret: requests to /slack/actions and /slack/events must
    /// be signed with it (not needed with --slack-app-token).
    #[arg(long, env = "ASKUSER_SLACK_SIGNING_SECRET", value_name = "SECRET", hide_env_values = true)]
    pub slack_signing_secret: Option<String>,
    /// The Slack app's app-level token (xapp-…): buttons and typed commands answer over
    /// Socket Mode, with no public URL.
    #[arg(long, env = "ASKUSER_SLACK_APP_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub slack_app_token: Option<String>,
    /// Slack's Web API.
    #[arg(long, value_name = "URL", default_value = askuser_bridge::notify::SLACK_API)]
    pub slack_api: String,
}

impl ChannelArgs for SlackArgs {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn wanted(&self) -> bool {
        !self.notify_slack.is_empty()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        let (token, secret) = (self.slack_bot_token.as_deref(), self.slack_signing_secret.as_deref());
        let app_token = self.slack_app_token.as_deref();
        opts.add(SlackApp::configure(&self.notify_slack, token, secret, app_token, &self.slack_api, rules)?);
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct TelegramArgs {
    /// Send each question set to this Telegram chat (its id: a person's, or a group's
    /// -100…) with buttons that answer, and take replies to it as answers; `NAME=CHAT_ID`
    /// sends a person's or team's there instead (repeatable). Needs the bot's token
    /// (docs/notify.md).
    #[arg(long = "notify-telegram", value_name = "[NAME=]CHAT_ID", allow_negative_numbers = true)]
    pub notify_telegram: Vec<String>,
    /// The Telegram bot's token, from @BotFather (123456789:AA…).
    #[arg(long, env = "ASKUSER_TELEGRAM_BOT_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub telegram_bot_token: Option<String>,
    /// Telegram's Bot API.
    #[arg(long, value_name = "URL", default_value = askuser_bridge::notify::TELEGRAM_API)]
    pub telegram_api: String,
}

impl ChannelArgs for TelegramArgs {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn wanted(&self) -> bool {
        !self.notify_telegram.is_empty()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        opts.add(TelegramBot::configure(&self.notify_telegram, self.telegram_bot_token.as_deref(), &self.telegram_api, rules)?);
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct WhatsAppArgs {
    /// Send each question set to this WhatsApp number (international form, +15551234567)
    /// with buttons or a list that answer, and take its replies as answers; `NAME=PHONE`
    /// sends a person's or team's there instead (repeatable). Needs the business number's
    /// id, an access token, the app secret and a verify token (docs/notify.md).
    #[arg(long = "notify-whatsapp", value_name = "[NAME=]PHONE")]
    pub notify_whatsapp: Vec<String>,
    /// The business phone number's id (the Graph API's sender; not the number).
    #[arg(long, env = "ASKUSER_WHATSAPP_PHONE_NUMBER_ID", value_name = "ID")]
    pub whatsapp_phone_number_id: Option<String>,
    /// The WhatsApp access token (a system user's).
    #[arg(long, env = "ASKUSER_WHATSAPP_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub whatsapp_token: Option<String>,
    /// The Meta app's secret: calls to /whatsapp/webhook must be signed with it.
    #[arg(long, env = "ASKUSER_WHATSAPP_APP_SECRET", value_name = "SECRET", hide_env_values = true)]
    pub whatsapp_app_secret: Option<String>,
    /// What the webhook's subscription handshake must present (you choose it, and enter it
    /// in the app's webhook settings too).
    #[arg(long, env = "ASKUSER_WHATSAPP_VERIFY_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub whatsapp_verify_token: Option<String>,
    /// The approved template sent to someone who has not written for 24 hours (NAME, or
    /// NAME:LANGUAGE when not en_US); the question follows once they reply. Without it,
    /// their questions wait until they write.
    #[arg(long, value_name = "NAME[:LANGUAGE]")]
    pub whatsapp_template: Option<String>,
    /// The Graph API.
    #[arg(long, value_name = "URL", default_value = askuser_bridge::notify::WHATSAPP_API)]
    pub whatsapp_api: String,
}

impl ChannelArgs for WhatsAppArgs {
    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn wanted(&self) -> bool {
        !self.notify_whatsapp.is_empty()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        let settings = askuser_bridge::notify::WhatsAppSettings {
            places: &self.notify_whatsapp,
            phone_number_id: self.whatsapp_phone_number_id.as_deref(),
            token: self.whatsapp_token.as_deref(),
            app_secret: self.whatsapp_app_secret.as_deref(),
            verify_token: self.whatsapp_verify_token.as_deref(),
            template: self.whatsapp_template.as_deref(),
            api: &self.whatsapp_api,
        };
        opts.add(askuser_bridge::notify::WhatsApp::configure(&settings, rules)?);
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct DiscordArgs {
    /// Post each question set to this Discord channel (its id) with buttons that answer,
    /// over the gateway (no public URL); `NAME=CHANNEL_ID` posts a person's or team's
    /// there instead (repeatable). Needs the bot's token (docs/notify.md).
    #[arg(long = "notify-discord", value_name = "[NAME=]CHANNEL_ID")]
    pub notify_discord: Vec<String>,
    /// The Discord bot's token (Developer Portal → Bot).
    #[arg(long, env = "ASKUSER_DISCORD_BOT_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub discord_bot_token: Option<String>,
    /// Discord's REST API (the gateway's address comes from its /gateway/bot).
    #[arg(long, value_name = "URL", default_value = askuser_bridge::notify::DISCORD_API)]
    pub discord_api: String,
}

impl ChannelArgs for DiscordArgs {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn wanted(&self) -> bool {
        !self.notify_discord.is_empty()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        opts.add(DiscordBot::configure(&self.notify_discord, self.discord_bot_token.as_deref(), &self.discord_api, rules)?);
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
pub struct EmailArgs {
    /// Mail each question set to this address, with answer links, and take replies to it
    /// as answers; `NAME=ADDRESS` mails a person's or team's there instead (repeatable).
    /// Needs --email-from, --email-smtp, --email-imap and the passwords (docs/notify.md).
    #[arg(long = "notify-email", value_name = "[NAME=]ADDRESS")]
    pub notify_email: Vec<String>,
    /// The bridge's own address: mails come from it and replies go to it, as
    /// NAME+q-TOKEN@DOMAIN (the server must deliver those to its mailbox).
    #[arg(long, env = "ASKUSER_EMAIL_FROM", value_name = "ADDRESS")]
    pub email_from: Option<String>,
    /// The SMTP server mails go out by: smtps://USER@HOST[:465] (TLS),
    /// smtp://USER@HOST[:587] (STARTTLS), or smtp+plain://HOST:PORT (this machine only).
    #[arg(long, env = "ASKUSER_EMAIL_SMTP", value_name = "URL")]
    pub email_smtp: Option<String>,
    /// The IMAP mailbox replies arrive in: imaps://USER@HOST[:993][/MAILBOX] (TLS),
    /// imap://… (STARTTLS), or imap+plain://… (this machine only); MAILBOX: INBOX.
    #[arg(long, env = "ASKUSER_EMAIL_IMAP", value_name = "URL")]
    pub email_imap: Option<String>,
    /// The SMTP user's password.
    #[arg(long, env = "ASKUSER_SMTP_PASSWORD", value_name = "PASSWORD", hide_env_values = true)]
    pub smtp_password: Option<String>,
    /// The IMAP user's password (default: the SMTP one).
    #[arg(long, env = "ASKUSER_IMAP_PASSWORD", value_name = "PASSWORD", hide_env_values = true)]
    pub imap_password: Option<String>,
}

impl ChannelArgs for EmailArgs {
    fn name(&self) -> &'static str {
        "email"
    }

    fn wanted(&self) -> bool {
        !self.notify_email.is_empty()
    }

    fn add(&self, opts: &mut NotifyOptions, rules: Rules, _: &std::path::Path) -> anyhow::Result<()> {
        opts.add(Email::configure(
            &self.notify_email,
            self.email_from.as_deref(),
            self.email_smtp.as_deref(),
            self.email_imap.as_deref(),
            self.smtp_password.as_deref(),
            self.imap_password.as_deref(),
            rules,
        )?);
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DurabilityArg {
    Normal,
    Full,
}

/// `--escalate-after`: seconds, or never.
#[derive(Debug, Clone, Copy)]
pub struct Escalation(Option<Duration>);

fn escalation(text: &str) -> Result<Escalation, String> {
    if text == "never" {
        return Ok(Escalation(None));
    }
    text.parse::<u64>().map(|s| Escalation(Some(Duration::from_secs(s)))).map_err(|_| format!("expected seconds or never, got {text:?}"))
}

/// `--store`: a PostgreSQL URL (checked here, so a typo fails before anything starts).
fn store_url(text: &str) -> Result<String, String> {
    let shown = || askuser_bridge::redact(askuser_bridge::Secret::Store(text));
    if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
        return Err(format!("expected a postgres:// or postgresql:// URL, got {:?}", shown()));
    }
    askuser_bridge::store::parse_url(text).map(|_| text.to_owned()).map_err(|e| format!("{e}, got {:?}", shown()))
}

/// Parses `--store` with [`store_url`]. Not a plain function parser: clap would put the
/// whole value, password and all, in its error.
#[derive(Clone)]
struct StoreUrl;

impl clap::builder::TypedValueParser for StoreUrl {
    type Value = String;

    fn parse_ref(&self, cmd: &clap::Command, _: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<String, clap::Error> {
        let refused = |why: String| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("--store: {why}\n")).with_cmd(cmd);
        let text = value.to_str().ok_or_else(|| refused("expected a postgres:// URL, got one that is not UTF-8".into()))?;
        store_url(text).map_err(refused)
    }
}

impl ServeArgs {
    pub fn options(&self) -> anyhow::Result<ServeOptions> {
        let mut opts = ServeOptions::new(files::data_dir(self.data_dir.as_deref())?);
        opts.addr = self.addr.clone();
        opts.token = self.token.clone();
        opts.allow_origins = self.allow_origins.clone();
        opts.limits.max_connections = self.max_connections;
        opts.accept_damaged_store = self.accept_damaged_store;
        opts.store = self.store.clone();
        opts.tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(askuser_bridge::Tls::Files { cert: cert.clone(), key: key.clone() }),
            _ => self.tls.then_some(askuser_bridge::Tls::SelfSigned),
        };
        opts.names = self.names.clone();
        opts.public_url = self.public_url.as_deref().map(askuser_bridge::public_url).transpose()?;
        opts.trust_proxy = self.trust_proxy;
        opts.notify = self.notify.options(&opts.data_dir)?;
        opts.durability = match self.durability {
            DurabilityArg::Normal => Durability::Normal,
            DurabilityArg::Full => Durability::Full,
        };
        opts.settings = Settings {
            default_timeout: self.timeout,
            grace: Duration::from_secs(self.grace),
            retention: Duration::from_secs(self.retention_days.saturating_mul(24 * 3600)),
            on_late_answer: self.on_late_answer.clone(),
            escalate_after: self.escalate_after.0,
            ..Settings::default()
        };
        Ok(opts)
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LimitsProfile {
    /// Lenient: up to 10 questions, 50 options, free-text questions allowed.
    Default,
    /// Claude Code's AskUserQuestion: 1-4 questions, 2-4 options, headers of 12 chars.
    ClaudeCode,
}

impl LimitsProfile {
    pub fn limits(self) -> Limits {
        match self {
            LimitsProfile::Default => Limits::default(),
            LimitsProfile::ClaudeCode => Limits::claude_code(),
        }
    }
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Validate { file, limits } => validate(file, limits),
        Command::Format { format, file } => format_result(file, format),
        Command::Serve(args) => {
            init_logging();
            let opts = match args.options() {
                Ok(o) => o,
                Err(e) => return fail(format!("{e:#}")),
            };
            match runtime().block_on(serve(opts, args.open)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(format!("{e:#}")),
            }
        }
        Command::Pending { bridge, json } => client_command(&bridge, |c| async move { pending(&c, json).await }),
        Command::Answer { bridge, id, answers } => client_command(&bridge, |c| async move {
            let body = AnswerBody { answers: AnswerSet::InOrder(answers.into_iter().map(AnswerItem::Text).collect()) };
            let result = c.answer(&id, &body).await?;
            out!("{}", result.summary());
            // Text that names no option goes as the person's own answer: say so, so that a
            // typo is not taken for a choice.
            let listed = c.get(&id).await.map(|r| r.request.questions).unwrap_or_default();
            for (a, q) in result.answers.iter().zip(&listed) {
                if let (Some(text), false) = (&a.custom, q.options.is_empty()) {
                    let options: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                    err!(
                        "askuser: {:?} is none of the options of {:?} ({}): it was sent as your own answer",
                        crate::term::safe(text),
                        crate::term::safe(&crate::term::one_line(&a.question)),
                        crate::term::safe(&options.join(", "))
                    );
                }
            }
            Ok(())
        }),
        Command::Ask(args) => crate::ask::ask(args),
        Command::Result { bridge, id, wait, format } => crate::ask::result(&bridge, &id, wait, format),
        Command::Mcp(args) => {
            init_logging();
            let rt = runtime();
            let outcome = rt.block_on(crate::ask::mcp(args));
            // Tokio reads stdin on a blocking thread that a signal leaves stuck in `read`:
            // don't wait for it.
            rt.shutdown_background();
            match outcome {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(format!("{e:#}")),
            }
        }
        Command::Acp(args) => {
            init_logging();
            crate::acp::run(args)
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "askuser", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Man => match clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(format!("cannot write the manual page: {e}")),
        },
        Command::Cancel { bridge, id } => client_command(&bridge, |c| async move {
            c.cancel(&id).await?;
            out!("cancelled {id}");
            Ok(())
        }),
        Command::Setup(args) => crate::setup::run(&args),
        Command::Doctor(args) => crate::doctor::run(&args),
        Command::Pair { bridge, name, person, minutes } => {
            client_command(&bridge, |c| async move { pair(&c, &name, person.as_deref(), minutes).await })
        }
        Command::People { bridge, action } => client_command(&bridge, |c| async move { people(&c, action).await }),
        Command::Devices { bridge } => client_command(&bridge, |c| async move { devices(&c).await }),
        Command::Tokens { bridge, action } => client_command(&bridge, |c| async move { tokens(&c, action).await }),
        Command::Rules { bridge, action } => client_command(&bridge, |c| async move { rules(&c, action).await }),
        Command::Tui(args) => crate::tui::run(&args),
    }
}

/// Logs go to stderr (stdout is for results and, in `askuser mcp`, the protocol);
/// `RUST_LOG` overrides the default level.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "askuser=info,rmcp=error,agent_client_protocol=error,warn".into());
    // Colours only on a terminal, and never with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).with_ansi(colour).try_init();
}

fn client_command<F, Fut>(bridge: &BridgeArgs, f: F) -> ExitCode
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let client = match bridge.client() {
        Ok(c) => c,
        Err(e) => return fail(format!("{e:#}")),
    };
    match runtime().block_on(f(client)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Refused>() {
            Some(r) if r.status == 400 => {
                for err in &r.body.errors {
                    err!("{err}");
                }
                if r.body.errors.is_empty() {
                    err!("askuser: {}", r.body.message);
                }
                ExitCode::from(EXIT_INVALID)
            }
            _ => fail(format!("{e:#}")),
        },
    }
}

/// "3m", "2h 5m": how long a question has waited.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        _ => format!("{}h {}m", s / 3600, s % 3600 / 60),
    }
}

#[derive(Debug, Clone, Subcommand)]
pub enum TokensAction {
    /// Every token made, revoked ones too (the tokens themselves are never kept).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make a token; it is printed once, on stdout.
    Create {
        #[arg(long, value_parser = PossibleValuesParser::new(["agent", "device", "admin"]).try_map(|s| s.parse::<Scope>()))]
        scope: Scope,
        /// What it is for ("phone", "ci-runner-3").
        #[arg(long)]
        name: String,
        /// The person a device token belongs to.
        #[arg(long, value_name = "NAME")]
        person: Option<String>,
    },
    /// Revoke a token by its id: refused from its next request, its sockets closed now,
    /// its page sessions ended; or end one page session (`session-…`).
    Revoke { id: String },
}

async fn pair(client: &Client, name: &str, person: Option<&str>, minutes: u64) -> anyhow::Result<()> {
    let code = client.pairing(name, person, minutes * 60).await?;
    let link = format!("{}/#pair={code}", client.endpoint.url);
    if let Some(lines) = crate::term::qr(&link) {
        for line in lines {
            out!("{line}");
        }
    }
    out!("{link}");
    err!("askuser: open it on the device within {minutes} minute(s); the code works once.");
    if let Some(fp) = client.endpoint.fingerprint {
        err!("askuser: the browser will warn about the bridge's own certificate; accept it only if its SHA-256 fingerprint is {fp}");
    }
    Ok(())
}

/// `, page session ID` for each page session credential `id` (None: the admin token) opened.
fn sessions_of(sessions: &[askuser_bridge::client::StoredSession], id: Option<&str>) -> String {
    sessions.iter().filter(|s| s.credential.as_deref() == id).map(|s| format!(", page session {}", s.id)).collect()
}

async fn devices(client: &Client) -> anyhow::Result<()> {
    let devices: Vec<_> = client.tokens().await?.into_iter().filter(|c| c.scope == Scope::Device).collect();
    let sessions = client.sessions().await?;
    if devices.is_empty() && sessions.is_empty() {
        out!("No devices paired yet: `askuser pair --name phone` pairs one.");
        return Ok(());
    }
    for d in &devices {
        let state = if d.revoked_at.is_some() { "revoked" } else { "paired" };
        out!("{}  {}  ({state}{})", d.id, crate::term::safe(&d.name), sessions_of(&sessions, Some(&d.id)));
    }
    let admin = sessions_of(&sessions, None);
    if !admin.is_empty() {
        out!("the admin token  ({})", admin.trim_start_matches(", "));
    }
    if devices.iter().any(|d| d.revoked_at.is_none()) || !sessions.is_empty() {
        err!("askuser: a lost device is cut off at once with `askuser tokens revoke ID` (a page session alone: its session-… id)");
    }
    Ok(())
}

async fn tokens(client: &Client, action: TokensAction) -> anyhow::Result<()> {
    match action {
        TokensAction::List { json } => {
            let all = client.tokens().await?;
            if json {
                print_json(&all);
            } else {
                let sessions = client.sessions().await?;
                if all.is_empty() {
                    out!("No tokens made yet (the admin token is the data directory's `token`).");
                }
                for c in all {
                    let state = c.revoked_at.map_or("in force".to_owned(), |_| "revoked".to_owned());
                    let sessions = sessions_of(&sessions, Some(&c.id));
                    out!("{}  {:<6}  {}  ({state}{sessions})", c.id, c.scope.as_str(), crate::term::safe(&c.name));
                }
                let admin = sessions_of(&sessions, None);
                if !admin.is_empty() {
                    out!("the admin token  ({})", admin.trim_start_matches(", "));
                }
            }
        }
        TokensAction::Create { scope, name, person } => {
            let (credential, token) = client.create_token(scope, &name, person.as_deref()).await?;
            err!(
                "askuser: made {} token {} ({}); it is shown only now:",
                scope.as_str(),
                credential.id,
                crate::term::safe(&credential.name)
            );
            out!("{token}");
        }
        TokensAction::Revoke { id } => {
            client.revoke_token(&id).await?;
            out!("Revoked {id}.");
        }
    }
    Ok(())
}

async fn pending(client: &Client, json: bool) -> anyhow::Result<()> {
    let records = client.questions("pending").await?;
    if json {
        print_json(&records);
        return Ok(());
    }
    if records.is_empty() {
        out!("No questions are waiting.");
        return Ok(());
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    for r in &records {
        print_record(r, now);
    }
    out!("Answer with: askuser answer ID ANSWER... (one per question; an option's label, or your own text)");
    Ok(())
}

fn print_record(r: &QuestionRecord, now: u64) {
    let who = r.request.agent.as_ref().map(|a| a.name.as_str()).unwrap_or("an agent");
    out!("{}  from {who}, waiting {}", r.id, age(now.saturating_sub(r.created_at)));
    for (i, q) in r.request.questions.iter().enumerate() {
        let header = q.header.as_deref().map(|h| format!("[{h}] ")).unwrap_or_default();
        let kind = if q.is_free_text() {
            " (free text)"
        } else if q.multi_select {
            " (several: separate with commas)"
        } else {
            ""
        };
        out!("  {}. {header}{}{kind}", i + 1, q.question.lines().collect::<Vec<_>>().join(" "));
        for o in &q.options {
            match &o.description {
                Some(d) => out!("       - {}: {d}", o.label),
                None => out!("       - {}", o.label),
            }
        }
        if !q.options.is_empty() {
            out!("       - (or type your own answer)");
        }
    }
    println!();
}

fn validate(file: Option<PathBuf>, profile: LimitsProfile) -> ExitCode {
    let text = match read_text(file.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(format!("{e:#}")),
    };
    match normalize_str(&text, &profile.limits()) {
        Ok(n) => {
            for w in &n.warnings {
                err!("warning: {w}");
            }
            print_json(&n.request);
            ExitCode::SUCCESS
        }
        Err(invalid) => {
            for e in &invalid.errors {
                err!("{e}");
            }
            ExitCode::from(EXIT_INVALID)
        }
    }
}

fn format_result(file: Option<PathBuf>, format: Format) -> ExitCode {
    let text = match read_text(file.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(format!("{e:#}")),
    };
    let result: AskResult = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            err!("expected a canonical result {{id, status, answered, answers, answeredAt}}: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    match format {
        Format::Text => out!("{}", result.summary()),
        other => print_json(&result.to_json(other)),
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    use askuser_bridge::notify::{Ntfy, Webhook};

    fn notify(args: &[&str]) -> anyhow::Result<askuser_bridge::notify::NotifyOptions> {
        let dir = tempfile::tempdir()?;
        let cli = Cli::try_parse_from(["askuser", "serve"].iter().chain(args))?;
        let Command::Serve(serve) = cli.command else { panic!("serve") };
        serve.notify.options(dir.path())
    }

    #[test]
    fn channel_rules_apply_to_both_or_to_the_channel_named() {
        let opts = notify(&[
            "--notify-webhook=https://hooks.example/x",
            "--notify-webhook-secret=s",
            "--notify-ntfy=https://ntfy.sh/topic",
            "--notify-delay=30",
            "--notify-delay=ntfy:0",
            "--notify-agent=webhook:ci",
            "--notify-quiet=ntfy:22:00-07:00",
        ])
        .unwrap();
        let (webhook, ntfy) = (opts.channel::<Webhook>().unwrap().rules.clone(), opts.channel::<Ntfy>().unwrap().rules.clone());
        assert_eq!((webhook.delay_seconds, webhook.agents.as_slice(), webhook.quiet.is_none()), (30, &["ci".to_owned()][..], true));
        assert_eq!((ntfy.delay_seconds, ntfy.agents.len()), (0, 0));
        let quiet = ntfy.quiet.unwrap();
        assert_eq!((quiet.from.as_str(), quiet.to.as_str()), ("22:00", "07:00"));
        let bad = notify(&["--notify-webhook=https://h/x", "--notify-webhook-secret=s", "--notify-delay=webhook:soon"]).unwrap_err();
        assert!(bad.to_string().contains("--notify-delay: expected [CHANNEL:]SECONDS"), "{bad}");
        let bad = notify(&["--notify-ntfy=https://ntfy.sh/t", "--notify-quiet=25:00-07:00"]).unwrap_err();
        assert!(bad.to_string().contains("--notify-quiet.from"), "{bad}");
    }

    /// docs/notify.md's Slack commands, as pasted after its `export` line, set up the
    /// app they say; a wrong channel or a missing secret is refused, naming the flag.
    #[test]
    fn the_slack_commands_in_the_docs_set_up_the_app() {
        let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
        let export = docs.lines().find(|l| l.starts_with("export ASKUSER_SLACK_BOT_TOKEN=")).expect("the export line");
        let env: Vec<(&str, &str)> = export.trim_start_matches("export ").split_whitespace().filter_map(|a| a.split_once('=')).collect();
        let secret = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap();
        let (token, signing) = (
            format!("--slack-bot-token={}", secret("ASKUSER_SLACK_BOT_TOKEN")),
            format!("--slack-signing-secret={}", secret("ASKUSER_SLACK_SIGNING_SECRET")),
        );
        let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-slack")).collect();
        assert_eq!(commands.len(), 3, "{commands:?}");
        // Socket Mode's: its own export, the app token and no signing secret.
        let socket =
            docs.lines().find(|l| l.starts_with("export ") && l.contains("ASKUSER_SLACK_APP_TOKEN=")).expect("Socket Mode's export");
        let socket_env: Vec<(&str, &str)> =
            socket.trim_start_matches("export ").split_whitespace().filter_map(|a| a.split_once('=')).collect();
        let app_token =
            socket_env.iter().find(|(k, _)| *k == "ASKUSER_SLACK_APP_TOKEN").map(|(_, v)| format!("--slack-app-token={v}")).unwrap();
        let socket_mode = commands.iter().find(|c| !c.contains("--public-url")).expect("a command with no public URL");
        let args: Vec<&str> = socket_mode.split_whitespace().skip(2).chain([token.as_str(), app_token.as_str()]).collect();
        let opts = notify(&args).unwrap();
        let slack = opts.channel::<SlackApp>().unwrap();
        assert_eq!((slack.app_token.as_deref(), slack.signing_secret.as_str()), (Some("xapp-your-app-token"), ""));
        assert!(!format!("{slack:?}").contains("xapp-your"), "its Debug shows no token");
        let bad = notify(&["--notify-slack=C0123ABCD", "--slack-bot-token=x", "--slack-app-token=xoxb-1"]).unwrap_err().to_string();
        assert!(bad.contains("--slack-app-token: expected an app-level token") && !bad.contains("xoxb-1"), "{bad}");
        for command in commands {
            let args: Vec<&str> = command.split_whitespace().skip(2).chain([token.as_str(), signing.as_str()]).collect();
            let opts = notify(&args).unwrap();
            let slack = opts.channel::<SlackApp>().expect("a Slack app");
            assert_eq!(slack.channel.as_deref(), Some("C0123ABCD"), "{command}");
            assert_eq!((slack.token.as_str(), slack.api.as_str()), ("xoxb-your-token", "https://slack.com/api/"));
            if command.contains("alice=") {
                assert_eq!(slack.routes.get("alice").map(String::as_str), Some("D0ALICE"));
                assert_eq!(slack.routes.get("db-team").map(String::as_str), Some("C0DBTEAM"));
            }
        }
        let bad = notify(&["--notify-slack=#general", "--slack-bot-token=x", "--slack-signing-secret=y"]).unwrap_err();
        assert!(bad.to_string().contains("--notify-slack: expected a channel id") && bad.to_string().contains("#general"), "{bad}");
        let bad = notify(&["--notify-slack=C0123ABCD", "--slack-bot-token=x"]).unwrap_err();
        assert!(bad.to_string().contains("--slack-signing-secret"), "{bad}");
    }

    /// docs/notify.md's Telegram commands, as pasted after its `export` line, set up the
    /// bot they say (a group's negative id taken as a value, not a flag); a wrong chat id,
    /// a missing or malformed token is refused, naming the flag and never showing the token.
    #[test]
    fn the_telegram_commands_in_the_docs_set_up_the_bot() {
        let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
        let export = docs.lines().find(|l| l.starts_with("export ASKUSER_TELEGRAM_BOT_TOKEN=")).expect("the export line");
        let token = export.trim_start_matches("export ASKUSER_TELEGRAM_BOT_TOKEN=").trim();
        let token_flag = format!("--telegram-bot-token={token}");
        let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-telegram")).collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        for command in commands {
            let args: Vec<&str> = command.split_whitespace().skip(2).chain([token_flag.as_str(), "--notify-delay=telegram:30"]).collect();
            let opts = notify(&args).unwrap();
            let bot = opts.channel::<TelegramBot>().expect("a Telegram bot");
            assert_eq!(bot.chat, Some(-1001234567890), "{command}");
            assert_eq!((bot.token.as_str(), bot.api.as_str(), bot.bot_id()), (token, "https://api.telegram.org/", "123456789"));
            assert_eq!(bot.rules.delay_seconds, 30, "telegram: rules are the bot's");
            assert!(opts.channel::<SlackApp>().is_none() && opts.channel::<Webhook>().is_none());
            if command.contains("alice=") {
                assert_eq!(bot.routes.get("alice"), Some(&111111111));
                assert_eq!(bot.routes.get("db-team"), Some(&-1009876543210));
            }
            assert!(!format!("{bot:?}").contains("your-bot-token"), "its Debug shows no token");
        }
        let bad = notify(&["--notify-telegram=@ops", &token_flag]).unwrap_err().to_string();
        assert!(bad.contains("--notify-telegram: expected a chat id") && bad.contains("@ops"), "{bad}");
        let bad = notify(&["--notify-telegram", "-100123", "--notify-telegram", "-100456", &token_flag]).unwrap_err().to_string();
        assert!(bad.contains("one shared chat at most"), "{bad}");
        let bad = notify(&["--notify-telegram=-100123"]).unwrap_err().to_string();
        assert!(bad.contains("--telegram-bot-token") && bad.contains("ASKUSER_TELEGRAM_BOT_TOKEN"), "{bad}");
        let bad = notify(&["--notify-telegram=-100123", "--telegram-bot-token=not a token at all"]).unwrap_err().to_string();
        assert!(bad.contains("--telegram-bot-token: expected the token") && !bad.contains("not a token at all"), "{bad}");
        let opts = notify(&["--notify-telegram=5", &token_flag, "--telegram-api=http://127.0.0.1:9/tg"]).unwrap();
        let api = &opts.channel::<TelegramBot>().unwrap().api;
        assert_eq!(api.as_str(), "http://127.0.0.1:9/tg/", "the API's path ends with / so methods join under it");
    }

    /// docs/notify.md's WhatsApp commands, pasted after its `export` line (each variable
    /// given as its flag), set up the channel they say; a wrong number, template or
    /// missing secret is refused naming the flag, never showing a secret.
    #[test]
    fn the_whatsapp_commands_in_the_docs_set_up_the_channel() {
        use askuser_bridge::notify::{WhatsApp, WhatsAppTemplate};
        let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
        let export = docs.lines().find(|l| l.starts_with("export ASKUSER_WHATSAPP_")).expect("the export line");
        let flags: Vec<String> = export
            .split_whitespace()
            .skip(1)
            .map(|kv| {
                let (var, value) = kv.split_once('=').unwrap();
                let flag = var.trim_start_matches("ASKUSER_").to_lowercase().replace('_', "-");
                format!("--{flag}={value}")
            })
            .collect();
        assert_eq!(flags.len(), 4, "{flags:?}");
        let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-whatsapp")).collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        for command in commands {
            let args: Vec<&str> = command.split_whitespace().skip(2).chain(flags.iter().map(String::as_str)).collect();
            let opts = notify(&args).unwrap_or_else(|e| panic!("{command}: {e}"));
            let wa = opts.channel::<WhatsApp>().expect("WhatsApp");
            assert_eq!((wa.phone.as_deref(), wa.phone_number_id.as_str()), (Some("15551234567"), "106540352242922"), "{command}");
            assert_eq!(wa.api.as_str(), "https://graph.facebook.com/v23.0/");
            assert_eq!((wa.token.as_str(), wa.app_secret.as_str()), ("EAAG-your-access-token", "your-app-secret"));
            if command.contains("alice=") {
                assert_eq!(wa.routes.get("alice").map(String::as_str), Some("15557654321"));
                assert_eq!(wa.template, Some(WhatsAppTemplate { name: "askuser_question".into(), language: "en_GB".into() }));
            } else {
                assert_eq!(wa.template, Some(WhatsAppTemplate { name: "askuser_question".into(), language: "en_US".into() }));
            }
            let shown = format!("{wa:?}");
            assert!(
                !shown.contains("your-access-token") && !shown.contains("your-app-secret") && !shown.contains("pick-a-long"),
                "{shown}"
            );
            let secrets = askuser_bridge::notify::Channel::secrets(wa);
            assert_eq!(secrets, ["EAAG-your-access-token", "your-app-secret", "pick-a-long-random-string"], "what the log never shows");
        }
        let with = |extra: &[&str]| {
            let args: Vec<&str> = extra.iter().copied().chain(flags.iter().map(String::as_str)).collect();
            notify(&args).unwrap_err().to_string()
        };
        let bad = with(&["--notify-whatsapp=555-1234"]);
        assert!(bad.contains("--notify-whatsapp: expected a phone number") && bad.contains("555-1234"), "{bad}");
        let bad = with(&["--notify-whatsapp=15551234567", "--whatsapp-template=Ask User"]);
        assert!(bad.contains("--whatsapp-template: expected a template's name"), "{bad}");
        let bad = notify(&["--notify-whatsapp=15551234567", "--whatsapp-phone-number-id=1", "--whatsapp-token=t"]).unwrap_err().to_string();
        assert!(bad.contains("--whatsapp-app-secret") && bad.contains("ASKUSER_WHATSAPP_APP_SECRET"), "{bad}");
    }

    /// docs/notify.md's Discord commands, as pasted after its `export` line, set up the
    /// bot they say; a wrong channel id or a missing token is refused, naming the flag.
    #[test]
    fn the_discord_commands_in_the_docs_set_up_the_bot() {
        let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
        let export = docs.lines().find(|l| l.starts_with("export ASKUSER_DISCORD_BOT_TOKEN=")).expect("the export line");
        let token = export.trim_start_matches("export ASKUSER_DISCORD_BOT_TOKEN=").trim();
        let token_flag = format!("--discord-bot-token={token}");
        let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-discord")).collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        for command in commands {
            let args: Vec<&str> = command.split_whitespace().skip(2).chain([token_flag.as_str(), "--notify-delay=discord:30"]).collect();
            let opts = notify(&args).unwrap();
            let bot = opts.channel::<DiscordBot>().expect("a Discord bot");
            assert_eq!(bot.channel.as_deref(), Some("123456789012345678"), "{command}");
            assert_eq!((bot.token.as_str(), bot.api.as_str(), bot.rules.delay_seconds), (token, "https://discord.com/api/v10/", 30));
            if command.contains("alice=") {
                assert_eq!(bot.routes.get("alice").map(String::as_str), Some("223456789012345678"));
                assert_eq!(bot.routes.get("db-team").map(String::as_str), Some("323456789012345678"));
            }
            assert!(!format!("{bot:?}").contains(token), "its Debug shows no token");
        }
        let bad = notify(&["--notify-discord=#general", &token_flag]).unwrap_err().to_string();
        assert!(bad.contains("--notify-discord: expected a channel id") && bad.contains("#general"), "{bad}");
        let bad = notify(&["--notify-discord=123"]).unwrap_err().to_string();
        assert!(bad.contains("--discord-bot-token") && bad.contains("ASKUSER_DISCORD_BOT_TOKEN"), "{bad}");
        let bad = notify(&["--notify-discord=123", "--discord-bot-token=not a token"]).unwrap_err().to_string();
        assert!(bad.contains("--discord-bot-token: expected") && !bad.contains("not a token"), "{bad}");
    }

    /// docs/notify.md's email commands (a private CA's too), as pasted after its `export` line, set up what they
    /// say; a wrong address, a password in a URL, a plain connection beyond this machine or
    /// a missing password is refused, naming the flag and never showing the password.
    #[test]
    fn the_email_commands_in_the_docs_set_up_email() {
        let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
        let export = docs.lines().find(|l| l.starts_with("export ASKUSER_SMTP_PASSWORD=")).expect("the export line");
        let password = export.trim_start_matches("export ASKUSER_SMTP_PASSWORD=").trim();
        let password_flag = format!("--smtp-password={password}");
        // One trusts a private CA first (SSL_CERT_FILE=FILE askuser serve …).
        let commands: Vec<&str> = docs
            .lines()
            .map(|l| l.strip_prefix("SSL_CERT_FILE=").and_then(|l| l.split_once(' ')).map_or(l, |(_, command)| command))
            .filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-email"))
            .collect();
        assert_eq!(commands.len(), 3, "{commands:?}");
        for command in commands {
            let args: Vec<&str> = command.split_whitespace().skip(2).chain([password_flag.as_str(), "--notify-delay=email:30"]).collect();
            let opts = notify(&args).unwrap_or_else(|e| panic!("{command}: {e}"));
            let email = opts.channel::<Email>().expect("email");
            assert_eq!(email.from, "askuser@example.com");
            assert_eq!((email.smtp_password.as_deref(), email.imap_password.as_str()), (Some(password), password), "one password for both");
            assert_eq!(email.imap.user.as_deref(), Some("askuser@example.com"), "{command}");
            assert_eq!((email.imap.host.as_str(), email.imap.port, email.imap.mailbox.as_str()), ("imap.example.com", 993, "INBOX"));
            assert_eq!(email.rules.delay_seconds, 30);
            assert!(!format!("{email:?}").contains(password), "its Debug shows no password");
            if command.contains("alice=") {
                assert_eq!(email.to.as_deref(), Some("ops@example.com"));
                assert_eq!(email.routes.get("alice").map(String::as_str), Some("alice@example.com"));
                assert_eq!((email.smtp.port, email.smtp.security), (587, notify::MailSecurity::StartTls));
            } else {
                assert_eq!(email.to.as_deref(), Some("alice@example.com"));
                assert_eq!(
                    (email.smtp.host.as_str(), email.smtp.port, email.smtp.security),
                    ("smtp.example.com", 465, notify::MailSecurity::Tls)
                );
            }
        }
        let base = ["--email-from=a@example.com", "--email-smtp=smtps://a@smtp.example.com", "--email-imap=imaps://a@imap.example.com"];
        let with = |extra: &[&str]| {
            notify(&base.iter().copied().chain(extra.iter().copied()).collect::<Vec<_>>()).map(|_| ()).unwrap_err().to_string()
        };
        let bad = with(&["--notify-email=alice", "--smtp-password=pw-secret"]);
        assert!(bad.contains("--notify-email: expected an email address") && bad.contains("alice"), "{bad}");
        let bad = with(&["--notify-email=alice@example.com"]);
        assert!(bad.contains("--smtp-password") && bad.contains("ASKUSER_SMTP_PASSWORD"), "{bad}");
        let bad = notify(&[
            "--notify-email=b@example.com",
            "--email-from=a@example.com",
            "--email-smtp=smtp+plain://smtp.example.com",
            "--email-imap=imaps://a@imap.example.com",
            "--smtp-password=pw-secret",
        ])
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(bad.contains("--email-smtp") && bad.contains("this one"), "{bad}");
        let bad = notify(&[
            "--notify-email=b@example.com",
            "--email-from=a@example.com",
            "--email-smtp=smtps://a:pw-secret@smtp.example.com",
            "--email-imap=imaps://a@imap.example.com",
        ])
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(bad.contains("--email-smtp") && bad.contains("password") && !bad.contains("pw-secret"), "{bad}");
    }

    /// The README's notification lines, pasted with the secrets the README says go in
    /// the environment (given as flags here), set up what their comments say.
    #[test]
    fn the_readmes_notification_lines_set_up_their_channels() {
        let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
        let lines: Vec<&str> = readme.lines().filter(|l| l.starts_with("askuser serve --notify-")).collect();
        assert_eq!(lines.len(), 7, "{lines:?}");
        for line in lines {
            let command = line.split(" # ").next().unwrap();
            let secrets = [
                "--slack-bot-token=xoxb-1",
                "--slack-signing-secret=s",
                "--telegram-bot-token=123456789:AAbc",
                "--whatsapp-phone-number-id=106540352242922",
                "--whatsapp-token=t",
                "--whatsapp-app-secret=s",
                "--whatsapp-verify-token=v",
                "--discord-bot-token=MTA.x",
            ];
            let args: Vec<&str> = command.split_whitespace().skip(2).chain(secrets).collect();
            let opts = notify(&args).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(opts.channels.len(), 1, "{line}: one channel each");
            if line.contains("--notify-delay 60") {
                assert_eq!(opts.channel::<Ntfy>().unwrap().rules.delay_seconds, 60, "{line}");
            }
        }
    }
}
