//! A bridge started in-process on 127.0.0.1:0 with its own data directory, and the
//! clients tests talk to it with.

use askuser_bridge::{start, Running, ServeOptions};
use askuser_core::protocol::BrowserEvent;
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

pub const TOKEN: &str = "test-token-0123456789abcdef";
pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct TestBridge {
    pub running: Option<Running>,
    pub dir: tempfile::TempDir,
    pub url: String,
    pub http: reqwest::Client,
}

pub async fn bridge() -> TestBridge {
    bridge_in(tempfile::tempdir().unwrap()).await
}

pub async fn bridge_in(dir: tempfile::TempDir) -> TestBridge {
    bridge_at(dir, "127.0.0.1:0").await
}

/// A bridge on `addr`: a restart on the address clients already know.
pub async fn bridge_at(dir: tempfile::TempDir, addr: &str) -> TestBridge {
    let addr = addr.to_owned();
    bridge_configured(dir, move |opts| opts.addr = addr).await
}

/// A bridge on 127.0.0.1:0 with `settings` instead of the defaults.
pub async fn bridge_with(settings: askuser_bridge::Settings) -> TestBridge {
    bridge_configured(tempfile::tempdir().unwrap(), move |opts| opts.settings = settings).await
}

/// A bridge on 127.0.0.1:0 (unless `configure` says otherwise) with the test token,
/// and an HTTP client that pins its certificate if it speaks TLS.
///
/// With `ASKUSER_TEST_POSTGRES` set (scripts/with-postgres), the bridge keeps its store
/// in a database of that server instead, one per data directory (so a restart on the
/// same directory finds its questions again).
pub async fn bridge_configured(dir: tempfile::TempDir, configure: impl FnOnce(&mut ServeOptions)) -> TestBridge {
    let mut opts = ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.token = Some(TOKEN.into());
    if let Ok(admin) = std::env::var("ASKUSER_TEST_POSTGRES") {
        opts.store = Some(shared_store(&admin, dir.path()).await);
    }
    configure(&mut opts);
    let running = start(opts).await.expect("the bridge starts");
    let (url, http) = (running.url.clone(), askuser_bridge::client::http_client(running.fingerprint));
    TestBridge { running: Some(running), dir, url, http }
}

/// `CREATE DATABASE name` on the server at `admin` (a URL of an existing database).
async fn create_database(admin: &str, name: &str) {
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls).await.expect("the test cluster is up");
    tokio::spawn(connection);
    client.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await.expect("a new database");
}

/// The database of data directory `dir` on the server at `admin`, made the first time.
async fn shared_store(admin: &str, dir: &std::path::Path) -> String {
    let name: String = dir.file_name().unwrap().to_string_lossy().chars().filter(char::is_ascii_alphanumeric).collect();
    let name = format!("t_{}", name.to_lowercase());
    let marker = dir.join("test-database");
    if !marker.exists() {
        create_database(admin, &name).await;
        std::fs::write(&marker, &name).unwrap();
    }
    admin.replacen("/postgres?", &format!("/{name}?"), 1)
}

impl TestBridge {
    pub fn running(&self) -> &Running {
        self.running.as_ref().unwrap()
    }

    /// Stops the bridge and hands back its data directory, for a restart.
    pub async fn stop(mut self) -> tempfile::TempDir {
        self.running.take().unwrap().stop().await;
        self.dir
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(format!("{}{path}", self.url)).bearer_auth(TOKEN)
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.url)).bearer_auth(TOKEN)
    }

    /// Question set `id` as `GET /v1/questions/ID` gives it.
    pub async fn record(&self, id: &str) -> serde_json::Value {
        self.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap()
    }

    /// Waits up to 15 s for question set `id` to have status `want`; the record then.
    pub async fn until_status(&self, id: &str, want: &str) -> serde_json::Value {
        for _ in 0..300 {
            let record = self.record(id).await;
            if record["status"] == want {
                return record;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{id} never became {want}: {:#}", self.record(id).await);
    }

    /// Starts a blocking `POST /v1/ask` in the background.
    /// A device token of `person` named `name`: the bridge's reply (`token`, `credential`).
    pub async fn device_token(&self, name: &str, person: Option<&str>) -> Value {
        let made = self.post("/v1/tokens").json(&serde_json::json!({"scope": "device", "name": name, "person": person}));
        made.send().await.unwrap().json().await.unwrap()
    }

    pub fn ask(&self, body: Value, format: &str) -> tokio::task::JoinHandle<reqwest::Response> {
        let req = self.post(&format!("/v1/ask?format={format}")).json(&body);
        tokio::spawn(async move { req.send().await.expect("the ask reaches the bridge") })
    }

    /// A browser socket, with the bridge's own Origin.
    pub async fn browser(&self) -> Socket {
        self.socket("/v1/ui", Some(&self.url.clone())).await.expect("the browser socket opens")
    }

    pub async fn socket(&self, path: &str, origin: Option<&str>) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
        let ws_url = format!("{}{path}?token={TOKEN}", self.url.replacen("http", "ws", 1));
        let mut req = ws_url.into_client_request().unwrap();
        if let Some(o) = origin {
            req.headers_mut().insert("origin", o.parse().unwrap());
        }
        tokio_tungstenite::connect_async(req).await.map(|(s, _)| s)
    }
}

/// The next protocol message on a socket (pings skipped), within 5 seconds.
pub async fn next_json(ws: &mut Socket) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("a message within 5 s");
        match msg.expect("the socket is open").expect("a frame") {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

pub async fn next_event(ws: &mut Socket) -> BrowserEvent {
    serde_json::from_value(next_json(ws).await).expect("a browser event")
}

/// Waits for the `asked` event and returns the question's id.
pub async fn next_asked(ws: &mut Socket) -> String {
    loop {
        if let BrowserEvent::Asked { question } = next_event(ws).await {
            return question.id;
        }
    }
}

pub async fn send(ws: &mut Socket, value: Value) {
    ws.send(Message::Text(value.to_string().into())).await.unwrap();
}

/// A chromedriver process and a headless Chromium session; both end when dropped.
pub struct Browser {
    client: Option<Client>,
    driver: Child,
    /// Chromium's profile, removed with the browser (a killed Chromium leaves its own
    /// temporary profile behind: ~6 MB a session, gigabytes over many runs).
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl std::ops::Deref for Browser {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().unwrap()
    }
}

pub async fn browser(width: u32, height: u32) -> Browser {
    browser_with(width, height, &[]).await
}

/// [`browser`] with more Chromium flags (e.g. `--force-dark-mode`).
pub async fn browser_with(width: u32, height: u32, flags: &[&str]) -> Browser {
    browser_options(width, height, flags, serde_json::json!({})).await
}

/// A phone: Chromium's device emulation with a touch screen (`pointer: coarse`, touch
/// events) at `width` × `height`.
pub async fn touch_browser(width: u32, height: u32) -> Browser {
    let emulation =
        serde_json::json!({"mobileEmulation": {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0, "touch": true}}});
    browser_options(width, height, &[], emulation).await
}

/// [`browser_with`] with more `goog:chromeOptions`.
async fn browser_options(width: u32, height: u32, flags: &[&str], options: serde_json::Value) -> Browser {
    crate::needs::Tool::Chromium.declared();
    assert!(askuser_bridge::has_ui(), "this build has no web UI: run scripts/build-ui (scripts/test does) before the tests");
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let driver = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {chromedriver} (install chromium-driver; scripts/setup does): {e}"));
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    .into_iter()
    .chain(flags.iter().copied())
    .map(str::to_owned)
    .collect();
    args.push(format!("--window-size={width},{height}"));
    let profile = tempfile::Builder::new().prefix("askuser-chromium-").tempdir().unwrap();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    let mut caps = serde_json::Map::new();
    let mut chrome = serde_json::json!({ "args": args });
    chrome.as_object_mut().unwrap().extend(options.as_object().cloned().unwrap_or_default());
    caps.insert("goog:chromeOptions".into(), chrome);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let mut last = None;
    for _ in 0..50 {
        match ClientBuilder::new(connector.clone()).capabilities(caps.clone()).connect(&format!("http://127.0.0.1:{port}")).await {
            Ok(client) => return Browser { client: Some(client), driver, _profile: profile },
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start: {last:?}");
}

impl Browser {
    /// A slow phone's network (1 s round trips, 180 KB/s down, 84 up) with nothing kept on
    /// the device: the HTTP cache off, the service worker bypassed.
    pub async fn slow_and_cold(&self) {
        self.cdp("Network.enable", serde_json::json!({})).await;
        self.cdp("Network.setCacheDisabled", serde_json::json!({"cacheDisabled": true})).await;
        self.cdp("Network.setBypassServiceWorker", serde_json::json!({"bypass": true})).await;
        let slow = serde_json::json!({"offline": false, "latency": 1000, "downloadThroughput": 180_000, "uploadThroughput": 84_000});
        self.cdp("Network.emulateNetworkConditions", slow).await;
    }

    /// The network unthrottled; with `warm`, the cache and the service worker back too.
    pub async fn fast(&self, warm: bool) {
        let fast = serde_json::json!({"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1});
        self.cdp("Network.emulateNetworkConditions", fast).await;
        if warm {
            self.cdp("Network.setCacheDisabled", serde_json::json!({"cacheDisabled": false})).await;
            self.cdp("Network.setBypassServiceWorker", serde_json::json!({"bypass": false})).await;
        }
    }

    pub async fn close(mut self) {
        if let Some(c) = self.client.take() {
            let _ = c.close().await;
        }
    }

    /// Presses keys on whatever has focus, as a person would.
    pub async fn keys(&self, keys: &str) {
        self.active_element().await.unwrap().send_keys(keys).await.unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
    }

    /// The first element `css` matches, once there (within 10 s). A page that navigates
    /// meanwhile (pairing reloads it) aborts chromedriver's search ("aborted by
    /// navigation"): the search goes on in the new page.
    pub async fn wait_css(&self, css: &str) -> Element {
        let search = async {
            loop {
                match self.wait().forever().for_element(Locator::Css(css)).await {
                    Err(e) if e.to_string().contains("aborted by navigation") => continue,
                    found => return found.unwrap(),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), search).await.unwrap_or_else(|_| panic!("{css} did not appear"))
    }

    /// The row with `role` whose text contains `name`.
    pub async fn row(&self, role: &str, name: &str) -> Element {
        for _ in 0..100 {
            for e in self.find_all(Locator::Css(&format!("[role={role}]"))).await.unwrap() {
                if e.text().await.unwrap_or_default().contains(name) {
                    return e;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {role} named {name:?}");
    }

    /// Runs a command of Chromium's DevTools protocol (through chromedriver) and returns
    /// its result: what WebDriver itself cannot ask, like whether the page is installable.
    pub async fn cdp(&self, cmd: &str, params: serde_json::Value) -> serde_json::Value {
        #[derive(Debug)]
        struct Cdp(serde_json::Value);
        impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
            fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
                base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
            }
            fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
                (http::Method::POST, Some(self.0.to_string()))
            }
        }
        self.issue_cmd(Cdp(serde_json::json!({"cmd": cmd, "params": params}))).await.unwrap()
    }

    pub async fn shot(&self, name: &str) {
        if let Ok(dir) = std::env::var("ASKUSER_SCREENSHOTS") {
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(format!("{dir}/{name}.png"), self.screenshot().await.unwrap()).unwrap();
        }
    }
}

/// The askuser binary under test, with none of this machine's `ASKUSER_*` settings (nor
/// `RUST_LOG`): each test says what it runs with.
pub fn askuser() -> Command {
    unset(Command::new(env!("CARGO_BIN_EXE_askuser")))
}

/// A docs line `askuser serve …` as pasted into a shell with `env` exported, here on a
/// free port and a data directory of its own, plus `args`: what it says on stderr up to
/// the first line `enough` takes (or its end), then it is stopped.
pub fn serve_as_pasted(command: &str, env: &[(&str, &str)], args: &[&str], mut enough: impl FnMut(&str) -> bool) -> String {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = askuser();
    cmd.args(command.split_whitespace().skip(1)).args(args).args(["--addr", "127.0.0.1:0", "--data-dir"]).arg(dir.path());
    cmd.envs(env.iter().copied()).env("HOME", dir.path()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = vec![];
    for line in stderr.lines().map_while(Result::ok) {
        let done = enough(&line);
        said.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    said.join("\n")
}

/// `cmd` without this machine's `ASKUSER_*` settings (nor `RUST_LOG`).
pub fn unset(mut cmd: Command) -> Command {
    for var in ["ASKUSER_URL", "ASKUSER_TOKEN", "ASKUSER_DATA_DIR", "ASKUSER_CERT_FINGERPRINT", "RUST_LOG"] {
        cmd.env_remove(var);
    }
    cmd
}

/// A program's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits up to 15 s for the `n`th (1-based) of what `seen` lists, as a stand-in service
/// records it: the calls it got of one method, the messages it was sent.
pub async fn nth_seen<T: Clone + std::fmt::Debug>(what: &str, n: usize, seen: impl Fn() -> Vec<T>) -> T {
    for _ in 0..300 {
        if let Some(item) = seen().get(n - 1) {
            return item.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{what} {n} never came; got {:#?}", seen());
}

/// An `askuser serve` process whose stderr goes to a file; killed when dropped.
pub struct Served {
    pub child: Child,
    pub log: std::path::PathBuf,
}

impl Served {
    pub fn spawn(mut cmd: Command, log: std::path::PathBuf) -> Served {
        let file = std::fs::File::create(&log).unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn().unwrap();
        Served { child, log }
    }

    /// The `askuser: open URL/#token=T` line, once printed.
    pub fn open_line(&mut self) -> String {
        for _ in 0..200 {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.starts_with("askuser: open ")) {
                return line.to_owned();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("askuser serve exited with {status}:\n{text}");
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("askuser serve printed no open line:\n{}", std::fs::read_to_string(&self.log).unwrap_or_default());
    }

    pub fn sigkill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.sigkill();
    }
}
