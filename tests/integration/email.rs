//! Email against a real mail server from Debian's packages: exim (SMTP, with AUTH PLAIN
//! for the bridge, as a provider's submission port has) delivering over LMTP to dovecot
//! (IMAP, with IDLE), each a throwaway instance with its own configuration, spool and
//! maildirs in a temporary directory, on free loopback ports. The bridge mails a set; the
//! person reads it from their own IMAP mailbox as a mail client would and replies over
//! SMTP; the bridge reads the reply from its mailbox and answers the agent.

use crate::support::{bridge_configured, TestBridge};
use askuser_bridge::notify::{Email, MailSecurity, MailServer};
use futures_util::TryStreamExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const DOMAIN: &str = "mail.test";

/// Whether this process runs as root (exim and dovecot are started as root, which then
/// drop to their own users).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// exim and dovecot running for one test; stopped when dropped.
struct Mail {
    dir: tempfile::TempDir,
    /// SMTP: plain, with STARTTLS where the servers have a certificate.
    smtp: u16,
    /// IMAP: plain, with STARTTLS where the servers have a certificate.
    imap: u16,
    /// SMTP with TLS on connect (as 465), where the servers have a certificate.
    smtps: u16,
    /// IMAP with TLS on connect (as 993), where the servers have a certificate.
    imaps: u16,
    children: Vec<Child>,
}

/// A certificate authority made for one test.
struct Authority {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// Its certificate, as a user would give it in `SSL_CERT_FILE`.
    pem: String,
}

impl Authority {
    fn new() -> Authority {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        // A name of its own: another authority of the same name is a bad signature, not an unknown issuer.
        let name = format!("askuser test mail CA {}", askuser_bridge::files::random_hex(4));
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let pem = params.self_signed(&key).unwrap().pem();
        Authority { issuer: rcgen::Issuer::new(params, key), pem }
    }

    /// A server certificate for `name` it signs: (certificate, key), PEM.
    fn sign(&self, name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap().signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// Its certificate in a file in `dir`.
    fn file(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.pem).unwrap();
        path
    }
}

impl Drop for Mail {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        // dovecot -F's children end with their master; exim's daemon runs in the foreground.
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Mail {
    /// Starts both, with mailboxes for `bridge`, `alice` and `mallory` (password: the name
    /// and `pw`), and waits until each answers; no TLS.
    fn start() -> Mail {
        Mail::start_with(None)
    }

    /// As [`Mail::start`], and with `certificate` (certificate, key: PEM) both take TLS on
    /// connect (`smtps`, `imaps`) and STARTTLS; dovecot then requires TLS (`ssl =
    /// required`, loopback excepted for the test's own mail client) and exim offers AUTH
    /// only over TLS.
    fn start_with(certificate: Option<(String, String)>) -> Mail {
        Mail::launch(certificate, "")
    }

    /// As [`Mail::start_with`], with `dovecot` (settings; `{dir}` is the servers' folder)
    /// added to dovecot's configuration.
    fn launch(certificate: Option<(String, String)>, dovecot: &str) -> Mail {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        chmod(&d, 0o755);
        for sub in ["run", "mail", "spool", "log"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        for sub in ["mail", "spool", "log"] {
            chmod(&d.join(sub), 0o777);
        }
        let (smtp, imap, smtps, imaps) = (free_port(), free_port(), free_port(), free_port());
        let p = |s: &str| d.join(s).display().to_string();
        // Readable by exim's and dovecot's own users: a throwaway key.
        let (dovecot_tls, exim_tls, exim_auth) = match &certificate {
            None => ("ssl = no\n".to_owned(), "tls_advertise_hosts =\n".to_owned(), ""),
            Some((cert, key)) => {
                std::fs::write(d.join("cert.pem"), cert).unwrap();
                std::fs::write(d.join("key.pem"), key).unwrap();
                chmod(&d.join("key.pem"), 0o644);
                (
                    format!("ssl = required\nssl_cert = <{cert}\nssl_key = <{key}\n", cert = p("cert.pem"), key = p("key.pem"),),
                    format!(
                        "tls_advertise_hosts = *\ntls_certificate = {cert}\ntls_privatekey = {key}\n\
                         daemon_smtp_ports = {smtp} : {smtps}\ntls_on_connect_ports = {smtps}\n",
                        cert = p("cert.pem"),
                        key = p("key.pem"),
                    ),
                    "  server_advertise_condition = ${if def:tls_in_cipher}\n",
                )
            }
        };
        std::fs::write(d.join("users"), "bridge:{PLAIN}bridgepw::::::\nalice:{PLAIN}alicepw::::::\nmallory:{PLAIN}mallorypw::::::\n")
            .unwrap();
        std::fs::write(
            d.join("dovecot.conf"),
            format!(
                "protocols = imap lmtp\nlisten = 127.0.0.1\nbase_dir = {run}\nstate_dir = {run}\nlog_path = {log}\n\
                 {dovecot_tls}disable_plaintext_auth = no\nauth_mechanisms = plain login\nauth_username_format = %Ln\n\
                 default_internal_user = dovecot\ndefault_login_user = dovenull\nfirst_valid_uid = 1\n\
                 mailbox_idle_check_interval = 1 secs\nmail_location = maildir:{mail}/%n\n\
                 passdb {{\n driver = passwd-file\n args = {users}\n}}\n\
                 userdb {{\n driver = static\n args = uid=65534 gid=65534 home={mail}/%n\n}}\n\
                 service imap-login {{\n chroot =\n inet_listener imap {{\n  port = {imap}\n }}\n{imaps_listener}}}\n\
                 service lmtp {{\n unix_listener lmtp {{\n  mode = 0666\n }}\n}}\n\
                 service anvil {{\n chroot =\n}}\n{dovecot}",
                dovecot = dovecot.replace("{dir}", &d.display().to_string()),
                imaps_listener = match certificate {
                    Some(_) => format!(" inet_listener imaps {{\n  port = {imaps}\n  ssl = yes\n }}\n"),
                    None => String::new(),
                },
                run = p("run"),
                log = p("log/dovecot.log"),
                mail = p("mail"),
                users = p("users"),
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("exim.conf"),
            format!(
                "primary_hostname = {DOMAIN}\ndomainlist local_domains = {DOMAIN}\nspool_directory = {spool}\n\
                 log_file_path = {log}/%slog\nkeep_environment =\nexim_user = Debian-exim\nexim_group = Debian-exim\n\
                 {daemon}local_interfaces = 127.0.0.1\nhost_lookup =\nrfc1413_hosts =\n\
                 {exim_tls}acl_smtp_rcpt = check_rcpt\n\
                 begin acl\ncheck_rcpt:\n  accept domains = +local_domains\n  deny message = relay not permitted\n\
                 begin routers\nlocal:\n  driver = accept\n  domains = +local_domains\n  local_part_suffix = +*\n\
                 \x20 local_part_suffix_optional\n  transport = dovecot_lmtp\n\
                 begin transports\ndovecot_lmtp:\n  driver = lmtp\n  socket = {lmtp}\n\
                 begin retry\n*  *  F,1m,1s\n\
                 begin authenticators\nplain:\n  driver = plaintext\n  public_name = PLAIN\n  server_prompts = :\n\
                 \x20 server_condition = ${{if and{{{{eq{{$auth2}}{{bridge}}}}{{eq{{$auth3}}{{bridgepw}}}}}}}}\n\
                 \x20 server_set_id = $auth2\n{exim_auth}",
                daemon = if certificate.is_some() { String::new() } else { format!("daemon_smtp_ports = {smtp}\n") },
                spool = p("spool"),
                log = p("log"),
                lmtp = p("run/lmtp"),
            ),
        )
        .unwrap();
        let spawn = |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("it starts");
        let dovecot = spawn(Command::new("/usr/sbin/dovecot").arg("-F").arg("-c").arg(d.join("dovecot.conf")));
        let exim = spawn(Command::new("/usr/sbin/exim").arg("-C").arg(d.join("exim.conf")).arg("-bdf"));
        let tls = certificate.is_some();
        let (smtps, imaps) = if tls { (smtps, imaps) } else { (0, 0) };
        let mail = Mail { dir, smtp, imap, smtps, imaps, children: vec![dovecot, exim] };
        for port in [smtp, imap, smtps, imaps].into_iter().filter(|&p| p != 0) {
            let up = (0..200).any(|_| {
                std::thread::sleep(Duration::from_millis(50));
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
            assert!(up, "port {port} never answered: {}", mail.logs());
        }
        mail
    }

    fn logs(&self) -> String {
        let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_default();
        format!("exim: {}\ndovecot: {}", read(self.dir.path().join("log/mainlog")), read(self.dir.path().join("log/dovecot.log")))
    }

    /// The bridge's email channel at this server, mailing `alice`.
    fn channel(&self) -> Email {
        let mut email = Email::configure(
            &[format!("alice@{DOMAIN}")],
            Some(&format!("bridge@{DOMAIN}")),
            Some(&format!("smtp+plain://bridge@127.0.0.1:{}", self.smtp)),
            Some(&format!("imap+plain://bridge@127.0.0.1:{}/INBOX", self.imap)),
            Some("bridgepw"),
            None,
            Default::default(),
        )
        .unwrap();
        email.poll = Duration::from_secs(1);
        email
    }

    /// `user`'s mailbox, logged in over IMAP as a mail client would.
    async fn mailbox(&self, user: &str) -> async_imap::Session<tokio::net::TcpStream> {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", self.imap)).await.unwrap();
        let mut client = async_imap::Client::new(tcp);
        client.read_response().await.unwrap();
        let mut session = client.login(user, format!("{user}pw")).await.map_err(|(e, _)| e).unwrap();
        session.select("INBOX").await.unwrap();
        session
    }

    /// Every mail in `user`'s INBOX: its flags and its raw text.
    async fn mails(&self, user: &str) -> Vec<(Vec<String>, Vec<u8>)> {
        let mut session = self.mailbox(user).await;
        let fetched: Vec<_> = session.fetch("1:*", "(FLAGS BODY.PEEK[])").await.unwrap().try_collect().await.unwrap_or_default();
        let mails =
            fetched.iter().map(|f| (f.flags().map(|fl| format!("{fl:?}")).collect(), f.body().unwrap_or_default().to_vec())).collect();
        let _ = session.logout().await;
        mails
    }

    /// Waits up to 15 s for `user`'s `n`th mail (1-based).
    async fn nth(&self, user: &str, n: usize) -> (Vec<String>, Vec<u8>) {
        for _ in 0..150 {
            if let Some(m) = self.mails(user).await.into_iter().nth(n - 1) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{user} never got mail {n}: {}", self.logs());
    }

    /// Sends `raw` from `from` to `to` over SMTP, as the person's mail client does.
    async fn send(&self, from: &str, to: &str, raw: &str) {
        use lettre::AsyncTransport;
        let transport = lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::builder_dangerous("127.0.0.1").port(self.smtp).build();
        let envelope = lettre::address::Envelope::new(Some(from.parse().unwrap()), vec![to.parse().unwrap()]).unwrap();
        transport.send_raw(&envelope, raw.as_bytes()).await.unwrap();
    }
}

fn question(id: &str) -> Value {
    json!({"id": id, "agent": {"name": "ci"}, "questions": [{
        "question": "Which database? <b>not bold</b>", "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}, {"label": "MySQL"}]}]})
}

/// A reply from `from` to the mail `to` (parsed), saying `text` above the quoted mail.
fn reply(from: &str, to: &mail_parser::Message, id: &str, text: &str) -> (String, String) {
    let reply_to = to.reply_to().and_then(|a| a.first()).and_then(|a| a.address()).expect("a Reply-To").to_owned();
    let message_id = to.message_id().expect("a Message-ID");
    let raw = format!(
        "From: {from}\r\nTo: {reply_to}\r\nSubject: Re: {}\r\nMessage-ID: <{id}@{DOMAIN}>\r\nIn-Reply-To: <{message_id}>\r\n\
         References: <{message_id}>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n\r\n\
         On Sat, 28 Nov 2026, askuser <bridge@{DOMAIN}> wrote:\r\n> ci asks\r\n> 1. Postgres\r\n",
        to.subject().unwrap_or_default()
    );
    (reply_to, raw)
}

async fn email_bridge(mail: &Mail) -> TestBridge {
    let channel = mail.channel();
    bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(channel);
    })
    .await
}

#[tokio::test]
async fn a_set_mailed_is_answered_by_the_persons_reply_and_only_theirs() {
    needs!(MailServer);
    let mail = Mail::start();
    let b = email_bridge(&mail).await;
    let waiting = b.ask(question("e-1"), "claude");

    // Alice reads it in her mailbox.
    let (_, raw) = mail.nth("alice", 1).await;
    let sent = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let subject = format!("ci asks · Database · id {}", askuser_bridge::notify::short_id("e-1"));
    assert_eq!(sent.subject(), Some(subject.as_str()));
    assert_eq!(sent.from().and_then(|a| a.first()).and_then(|a| a.address()), Some("bridge@mail.test"));
    let text = sent.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(text.contains("Which database? <b>not bold</b>\n1. Postgres\n2. SQLite\n3. MySQL\n"), "{text}");
    assert!(text.contains("#q=e-1"), "it links to the set in askuser: {text}");
    assert!(text.contains("SQLite: ") && text.contains("/a/"), "answer links: {text}");
    let html = sent.body_html(0).unwrap().into_owned();
    assert!(html.contains("&lt;b&gt;not bold&lt;/b&gt;") && !html.contains("<b>"), "{html}");
    let reply_to = sent.reply_to().and_then(|a| a.first()).and_then(|a| a.address()).unwrap().to_owned();
    assert!(reply_to.starts_with("bridge+q-") && reply_to.ends_with("@mail.test"), "{reply_to}");
    assert!(sent.message_id().unwrap().starts_with("askuser."), "{:?}", sent.message_id());

    // Mallory, who got the mail somehow, replies from her own address: ignored, told nothing.
    let (to, forged) = reply("mallory@mail.test", &sent, "m1", "1");
    mail.send("mallory@mail.test", &to, &forged).await;
    let (flags, _) = mail.nth("bridge", 1).await;
    for _ in 0..150 {
        if mail.nth("bridge", 1).await.0.iter().any(|f| f.contains("Seen")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(mail.nth("bridge", 1).await.0.iter().any(|f| f.contains("Seen")), "read and marked seen (was {flags:?}): {}", mail.logs());
    assert_eq!(b.record("e-1").await["status"], "pending", "a reply from another address answers nothing");
    // So is a forged From with no token of askuser's in In-Reply-To.
    let guessed = format!(
        "From: alice@mail.test\r\nTo: {to}\r\nSubject: Re\r\nMessage-ID: <g1@{DOMAIN}>\r\nIn-Reply-To: <askuser.000000000000000000000000@{DOMAIN}>\r\n\r\n1\r\n"
    );
    mail.send("alice@mail.test", &to, &guessed).await;

    // Alice replies "2" above the quoted mail.
    let (to, answer) = reply("alice@mail.test", &sent, "a1", "2");
    mail.send("alice@mail.test", &to, &answer).await;
    let record = b.until_status("e-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}");
    assert_eq!(record["answeredBy"], "email:alice@mail.test");
    let response = waiting.await.unwrap();
    let told: Value = response.json().await.unwrap();
    assert!(told.to_string().contains("SQLite"), "the waiting agent gets the answer: {told}");
    assert_eq!(mail.mails("mallory").await.len(), 0, "Mallory is told nothing");

    // A second reply comes too late: Alice is told, in reply to it.
    let (to, late) = reply("alice@mail.test", &sent, "a2", "3");
    mail.send("alice@mail.test", &to, &late).await;
    let (_, raw) = mail.nth("alice", 2).await;
    let said = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let text = said.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(text.contains("not waiting any more"), "{text}");
    assert_eq!(said.in_reply_to().as_text(), Some(&*format!("a2@{DOMAIN}")));
    assert_eq!(b.record("e-1").await["result"]["answers"][0]["answer"], "SQLite", "the first answer stands");
    let bridge_mails = mail.mails("bridge").await;
    assert_eq!(bridge_mails.len(), 4, "{}", mail.logs());
    for _ in 0..100 {
        if mail.mails("bridge").await.iter().all(|(f, _)| f.iter().any(|f| f.contains("Seen"))) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(mail.mails("bridge").await.iter().all(|(f, _)| f.iter().any(|f| f.contains("Seen"))), "each reply handled once, marked seen");
    let alice: Vec<String> = mail.mails("alice").await.iter().map(|(_, m)| String::from_utf8_lossy(m).into_owned()).collect();
    assert_eq!(alice.len(), 2, "the guessed reply got no answer: {alice:#?}");
}

#[tokio::test]
async fn an_approval_mailed_shows_its_command_whole_and_a_reply_in_words_denies_it() {
    needs!(MailServer);
    let mail = Mail::start();
    let b = email_bridge(&mail).await;
    let command = format!("rm -rf build && echo '{}'", "x".repeat(3000));
    let body = json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": "t1", "cwd": "/work/app"});
    let req = b.post("/v1/approve").json(&body);
    let waiting = tokio::spawn(async move { req.send().await.unwrap() });
    let (_, raw) = mail.nth("alice", 1).await;
    let sent = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let text = sent.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(text.contains(&command), "the command whole: {}", &text[..200]);
    let (to, answer) = reply("alice@mail.test", &sent, "a1", "Use make clean instead");
    mail.send("alice@mail.test", &to, &answer).await;
    let response: Value = waiting.await.unwrap().json().await.unwrap();
    assert_eq!(response["behavior"], "deny", "{response:#}");
    assert!(response["message"].as_str().unwrap_or_default().contains("Use make clean instead"), "{response:#}");
}

#[test]
fn a_plain_connection_is_refused_beyond_this_machine_and_passwords_stay_out_of_urls() {
    let bad = MailServer::parse("email-smtp", "smtp", "smtp+plain://mail.example.com:25").unwrap_err().to_string();
    assert!(bad.contains("--email-smtp") && bad.contains("only on this one"), "{bad}");
    let bad = MailServer::parse("email-imap", "imap", "imaps://me:secret@mail.example.com").unwrap_err().to_string();
    assert!(bad.contains("--email-imap") && !bad.contains("secret"), "{bad}");
    let s = MailServer::parse("email-imap", "imap", "imaps://me@example.com@mail.example.com/Answers").unwrap();
    assert_eq!(
        (s.host.as_str(), s.port, s.security, s.user.as_deref(), s.mailbox.as_str()),
        ("mail.example.com", 993, MailSecurity::Tls, Some("me@example.com"), "Answers")
    );
    let s = MailServer::parse("email-smtp", "smtp", "smtp://me@mail.example.com").unwrap();
    assert_eq!((s.port, s.security), (587, MailSecurity::StartTls));
}

/// `askuser serve` mailing `alice` over `smtp` and reading `imap` (URLs), started as a
/// user would: flags, the password in the environment, and a private CA trusted with
/// `SSL_CERT_FILE` (`ca`); its log in its data directory.
struct Served {
    bridge: crate::support::Served,
    url: String,
    http: reqwest::Client,
    _data: tempfile::TempDir,
}

impl Served {
    fn start(smtp: &str, imap: &str, ca: &Path) -> Served {
        let data = tempfile::tempdir().unwrap();
        let mut cmd = crate::support::askuser();
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--token", crate::support::TOKEN, "--data-dir"])
            .arg(data.path())
            .args(["--notify-email", &format!("alice@{DOMAIN}"), "--email-from", &format!("bridge@{DOMAIN}")])
            .args(["--email-smtp", smtp, "--email-imap", imap])
            .env("ASKUSER_SMTP_PASSWORD", "bridgepw")
            .env("SSL_CERT_FILE", ca)
            .env_remove("SSL_CERT_DIR");
        let mut bridge = crate::support::Served::spawn(cmd, data.path().join("serve.log"));
        let line = bridge.open_line();
        let url = line.strip_prefix("askuser: open ").unwrap().split_once("/#token=").unwrap().0.to_owned();
        Served { bridge, url, http: askuser_bridge::client::http(None).build().unwrap(), _data: data }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.bridge.log).unwrap_or_default()
    }

    /// Waits up to 20 s for the log to say each of `said`; the log then.
    async fn until_logged(&self, said: &[&str]) -> String {
        for _ in 0..200 {
            let log = self.log();
            if said.iter().all(|s| log.contains(s)) {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the bridge never logged {said:?}:\n{}", self.log());
    }

    async fn ask(&self, body: Value) {
        let asked = self.http.post(format!("{}/v1/ask?wait=false", self.url)).bearer_auth(crate::support::TOKEN).json(&body).send().await;
        assert_eq!(asked.unwrap().status(), 202);
    }

    async fn record(&self, id: &str) -> Value {
        let got = self.http.get(format!("{}/v1/questions/{id}", self.url)).bearer_auth(crate::support::TOKEN).send().await.unwrap();
        got.json().await.unwrap()
    }
}

/// A set mailed over `smtp` and answered by a reply read over `imap` (schemes), the
/// servers' certificate signed by a private CA the bridge trusts through `SSL_CERT_FILE`;
/// the servers' logs show TLS was used for both.
async fn answered_over_tls(smtp: &str, imap: &str) {
    let ca = Authority::new();
    let mail = Mail::start_with(Some(ca.sign("localhost")));
    let tls = smtp.ends_with('s');
    let (smtp_port, imap_port) = if tls { (mail.smtps, mail.imaps) } else { (mail.smtp, mail.imap) };
    let ca_file = ca.file(mail.dir.path());
    let b =
        Served::start(&format!("{smtp}://bridge@localhost:{smtp_port}"), &format!("{imap}://bridge@localhost:{imap_port}/INBOX"), &ca_file);
    b.ask(question("t-1")).await;
    let (_, raw) = mail.nth("alice", 1).await;
    let sent = mail_parser::MessageParser::default().parse(&raw).unwrap();
    assert!(sent.body_text(0).unwrap().contains("2. SQLite"), "{:?}", sent.body_text(0));
    let (to, answer) = reply("alice@mail.test", &sent, "a1", "2");
    mail.send("alice@mail.test", &to, &answer).await;
    let mut record = b.record("t-1").await;
    for _ in 0..200 {
        if record["status"] == "answered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        record = b.record("t-1").await;
    }
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}\n{}\n{}", b.log(), mail.logs());
    assert_eq!(record["answeredBy"], "email:alice@mail.test");
    // exim offers AUTH only over TLS: the bridge's mail came in encrypted and logged in.
    let logs = mail.logs();
    let took = logs.lines().find(|l| l.contains("<= bridge@mail.test")).unwrap_or_else(|| panic!("{logs}"));
    assert!(took.contains("P=esmtpsa") && took.contains("X=TLS") && took.contains("A=plain:bridge"), "{took}");
    // dovecot's login line says TLS (a plain one on loopback says "secured").
    let login = logs.lines().find(|l| l.contains("Login: user=<bridge>")).unwrap_or_else(|| panic!("{logs}"));
    assert!(login.contains(", TLS") && !login.contains("secured"), "{login}");
}

#[tokio::test]
async fn a_set_is_mailed_over_smtps_and_answered_over_imaps_with_a_private_ca() {
    needs!(MailServer);
    answered_over_tls("smtps", "imaps").await;
}

#[tokio::test]
async fn a_set_is_mailed_and_answered_over_starttls_with_a_private_ca() {
    needs!(MailServer);
    answered_over_tls("smtp", "imap").await;
}

/// What a bridge did not do: no mail came in from it (exim's log), it never logged in to
/// its mailbox (dovecot's), and Alice has no mail.
async fn nothing_sent_or_read(mail: &Mail) {
    let logs = mail.logs();
    assert!(!logs.contains("<= bridge@mail.test"), "nothing sent: {logs}");
    assert!(!logs.contains("Login: user=<bridge>"), "nothing read: {logs}");
    assert_eq!(mail.mails("alice").await.len(), 0);
}

#[tokio::test]
async fn a_mail_server_whose_certificate_is_not_trusted_or_for_another_name_is_refused() {
    needs!(MailServer);
    // Signed by a CA the bridge does not trust (it trusts another one).
    let ca = Authority::new();
    let mail = Mail::start_with(Some(ca.sign("localhost")));
    let other = tempfile::tempdir().unwrap();
    let b = Served::start(
        &format!("smtps://bridge@localhost:{}", mail.smtps),
        &format!("imaps://bridge@localhost:{}", mail.imaps),
        &Authority::new().file(other.path()),
    );
    b.ask(question("u-1")).await;
    let untrusted = "the certificate localhost presented is not signed by an authority this system trusts";
    let log = b
        .until_logged(&[
            &format!("email refused the notification: cannot send over SMTP (smtps://bridge@localhost:{}): {untrusted}", mail.smtps),
            &format!("cannot read the mailbox for email answers: {untrusted}"),
            "SSL_CERT_FILE",
        ])
        .await;
    assert!(!log.contains("bridgepw"), "{log}");
    nothing_sent_or_read(&mail).await;

    // Signed by the CA it trusts, but for another name; over STARTTLS this time.
    let mail = Mail::start_with(Some(ca.sign("mail.example.org")));
    let b = Served::start(
        &format!("smtp://bridge@localhost:{}", mail.smtp),
        &format!("imap://bridge@localhost:{}", mail.imap),
        &ca.file(other.path()),
    );
    b.ask(question("u-2")).await;
    let wrong = "the certificate localhost presented is not for localhost";
    b.until_logged(&[
        &format!("email refused the notification: cannot send over SMTP (smtp://bridge@localhost:{}): {wrong}", mail.smtp),
        &format!("cannot read the mailbox for email answers: {wrong}"),
    ])
    .await;
    nothing_sent_or_read(&mail).await;
}

#[tokio::test]
async fn starttls_the_server_does_not_offer_is_refused_never_skipped() {
    needs!(MailServer);
    let mail = Mail::start(); // neither offers STARTTLS
    let ca = tempfile::tempdir().unwrap();
    let b = Served::start(
        &format!("smtp://bridge@localhost:{}", mail.smtp),
        &format!("imap://bridge@localhost:{}", mail.imap),
        &Authority::new().file(ca.path()),
    );
    b.ask(question("s-1")).await;
    b.until_logged(&[
        &format!("email refused the notification: cannot send over SMTP (smtp://bridge@localhost:{})", mail.smtp),
        "STARTTLS is not supported",
        &format!("cannot read the mailbox for email answers: the IMAP server imap://bridge@localhost:{} refused STARTTLS", mail.imap),
    ])
    .await;
    nothing_sent_or_read(&mail).await;
}

impl Mail {
    /// How many IMAP connections `user` has open now (`doveadm who`).
    fn connections(&self, user: &str) -> usize {
        let out = Command::new("/usr/bin/doveadm").arg("-c").arg(self.dir.path().join("dovecot.conf")).args(["who", "-1"]).output();
        let out = out.expect("doveadm runs");
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.split_whitespace().next() == Some(user)).count()
    }
}

/// Two bridges on one PostgreSQL store with the same email settings: the first to start
/// holds the mailbox's reading lease and keeps it (one login in dovecot's log, never two
/// connections at once), a reply answers once (the person gets no "too late" mail from
/// the other), and when the holder stops the other takes the lease over (a second login)
/// and reads a later reply.
#[tokio::test]
async fn bridges_sharing_a_store_read_the_mailbox_one_at_a_time() {
    needs!(MailServer, Postgres);
    let db = crate::pg::Cluster::start();
    let url = db.database("team");
    let mail = Mail::start();
    let lease = Duration::from_secs(6);
    let start = |url: String| {
        let mut channel = mail.channel();
        channel.lease = lease;
        bridge_configured(tempfile::tempdir().unwrap(), move |o| {
            o.store = Some(url);
            o.notify.add(channel);
        })
    };
    let a = start(url.clone()).await;
    for _ in 0..100 {
        if mail.connections("bridge") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(mail.connections("bridge"), 1, "the first bridge reads: {}", mail.logs());
    let b = start(url).await;
    // Watch the mailbox's connections while both run (the test itself never logs in as
    // the bridge meanwhile).
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = {
        let (watching, conf) = (watching.clone(), mail.dir.path().join("dovecot.conf"));
        std::thread::spawn(move || {
            let mut most = 0;
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                let out = Command::new("/usr/bin/doveadm").arg("-c").arg(&conf).args(["who", "-1"]).output().unwrap();
                let n = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("bridge ")).count();
                most = most.max(n);
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        })
    };

    let _waiting = b.ask(question("p-1"), "claude");
    let (_, raw) = mail.nth("alice", 1).await;
    let sent = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let (to, answer) = reply("alice@mail.test", &sent, "a1", "2");
    mail.send("alice@mail.test", &to, &answer).await;
    let record = b.until_status("p-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}");
    // Two terms more with both running: the other never reads it too.
    tokio::time::sleep(lease * 2).await;
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(watcher.join().unwrap(), 1, "one bridge at a time logs in to the mailbox: {}", mail.logs());
    assert_eq!(mail.mails("alice").await.len(), 1, "one mail sent, the reply answered once (no \"too late\" mail)");
    assert_eq!(a.record("p-1").await["result"]["answers"][0]["answer"], "SQLite");

    // A second set, mailed while both run; then the reader stops.
    let _waiting2 = b.ask(question("p-2"), "claude");
    let (_, raw) = mail.nth("alice", 2).await;
    let second = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let logins = || mail.logs().lines().filter(|l| l.contains("Login: user=<bridge>")).count();
    assert_eq!(logins(), 1, "the first bridge held the mailbox all along: {}", mail.logs());
    a.stop().await;
    let (to, answer) = reply("alice@mail.test", &second, "a2", "3");
    mail.send("alice@mail.test", &to, &answer).await;
    let mut record = b.record("p-2").await;
    for _ in 0..(lease.as_millis() / 100 * 3) {
        if record["status"] == "answered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        record = b.record("p-2").await;
    }
    assert_eq!(record["result"]["answers"][0]["answer"], "MySQL", "the other bridge took the mailbox over: {record:#}\n{}", mail.logs());
    assert_eq!(logins(), 2, "the other bridge logged in: {}", mail.logs());
    assert_eq!(mail.mails("alice").await.len(), 2, "nothing more was sent");
}

/// A server without IDLE: the bridge reads the mailbox every `poll` instead (1 s here,
/// 30 s by default), and never sends IDLE (dovecot's rawlog of its sessions).
#[tokio::test]
async fn without_idle_the_mailbox_is_read_every_poll() {
    needs!(MailServer);
    let mail = Mail::launch(
        None,
        "imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ UIDPLUS\n\
         protocol imap {\n rawlog_dir = {dir}/rawlog/%u\n}\n",
    );
    for user in ["", "/bridge", "/alice"] {
        let dir = mail.dir.path().join(format!("rawlog{user}"));
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o777);
    }
    let b = email_bridge(&mail).await;
    let _waiting = b.ask(question("n-1"), "claude");
    let (_, raw) = mail.nth("alice", 1).await;
    let sent = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let (to, answer) = reply("alice@mail.test", &sent, "a1", "2");
    mail.send("alice@mail.test", &to, &answer).await;
    let record = b.until_status("n-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}");
    let said: String = std::fs::read_dir(mail.dir.path().join("rawlog/bridge"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "in"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let capabilities = said.lines().filter(|l| l.ends_with(" CAPABILITY")).count();
    assert!(capabilities >= 1, "it asked what the server offers: {said}");
    assert!(said.lines().filter(|l| l.ends_with(" UID SEARCH UNSEEN")).count() >= 3, "read again and again: {said}");
    assert!(!said.lines().any(|l| l.to_uppercase().ends_with(" IDLE")), "no IDLE where none is offered: {said}");
}
