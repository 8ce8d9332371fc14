//! A bridge started in-process on 127.0.0.1:0 with its own data directory, and the
//! clients tests talk to it with.

use askuser::serve::{start, Running, ServeOptions};
use askuser_core::protocol::BrowserEvent;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
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
    let mut opts = ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.token = Some(TOKEN.into());
    let running = start(opts).await.expect("the bridge starts");
    let url = running.url.clone();
    TestBridge { running: Some(running), dir, url, http: reqwest::Client::new() }
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

    /// Starts a blocking `POST /v1/ask` in the background.
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
