//! MCP's stdio transport: JSON-RPC 2.0, one message per line, read by askuser rather than
//! by rmcp's own line reader, which drops a line that is not JSON (or not UTF-8) without a
//! word, so that its request never gets an answer. Here such a line gets a parse error
//! (-32700) and the server reads on; a line that is JSON-RPC but not an MCP message gets
//! -32600 with what was wrong. The transport also sees each message before the SDK acts on
//! it: a cancel's reason is noted before the next line is read ([`Lines::on_cancel`]), and
//! the end of stdin is told at once ([`Lines::gone`]), not after the SDK's drain.

use rmcp::model::{JsonRpcMessage, NumberOrString, ServerNotification};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// A message from the client.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The reply to a request this server sent: its result, or its error object.
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
}

/// An error reply: code, message and the request id (null when it could not be read).
pub fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Why the client's side of the connection ended.
#[derive(Debug, Clone)]
pub enum Ended {
    Eof,
    Error(String),
}

/// Called with a `notifications/cancelled`'s request id (as JSON text) and reason.
pub type OnCancel = Box<dyn Fn(String, String) + Send + Sync>;

/// The stdio transport: lines in, lines out.
pub struct Lines<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    gone: watch::Sender<Option<Ended>>,
    on_cancel: OnCancel,
    /// A request other than a probe came: the SDK, which ends the connection on a
    /// notification before that, may now be given them.
    opened: bool,
}

impl<R: AsyncRead + Unpin + Send> Lines<R> {
    pub fn new(input: R, output: impl AsyncWrite + Unpin + Send + 'static, on_cancel: OnCancel) -> Lines<R> {
        let (out, mut outbox) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut output = output;
            while let Some(mut line) = outbox.recv().await {
                line.push(b'\n');
                if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                    break;
                }
            }
        });
        Lines { input: BufReader::new(input), line: Vec::new(), out, gone: watch::channel(None).0, on_cancel, opened: false }
    }

    /// Tells when the client's end closed, the moment it is read.
    pub fn gone(&self) -> watch::Receiver<Option<Ended>> {
        self.gone.subscribe()
    }

    fn reply(&self, message: &Value) {
        let _ = self.out.send(serde_json::to_vec(message).expect("messages serialize"));
    }

    /// The next message for the SDK from one line, or the error reply to send instead.
    fn read(&mut self, line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Value> {
        let text = std::str::from_utf8(line).map_err(|e| {
            error(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: each line must be one JSON-RPC message in UTF-8, and this one is not UTF-8 ({e})"),
            )
        })?;
        if text.trim().is_empty() {
            return Ok(None);
        }
        let incoming = parse(text)?;
        match &incoming {
            Incoming::Request { method, .. } => self.opened |= !matches!(method.as_str(), "ping" | "server/discover"),
            _ if !self.opened => {
                tracing::debug!("ignoring a notification or reply before the first request: {text}");
                return Ok(None);
            }
            _ => {}
        }
        if let Incoming::Notification { method, params } = &incoming {
            if method == "notifications/cancelled" {
                if let Some(request) = params.get("requestId") {
                    let reason = params.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
                    (self.on_cancel)(request.to_string(), reason.to_owned());
                }
            }
        }
        let message: Result<RxJsonRpcMessage<RoleServer>, _> = serde_json::from_str(text);
        message.map(|m| Some(from_client(m))).map_err(|e| {
            let id = match incoming {
                Incoming::Request { id, .. } => id,
                _ => Value::Null,
            };
            error(id, INVALID_REQUEST, format!("Invalid request: not an MCP message ({e})"))
        })
    }
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for Lines<R> {
    type Error = std::io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = serde_json::to_vec(&to_client(item))
            .map_err(std::io::Error::other)
            .and_then(|line| self.out.send(line).map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe)));
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // The SDK's loop drops this future when its other work is ready first: what was
            // read of a line by then stays in `self.line`, and this read goes on from there.
            match self.input.read_until(b'\n', &mut self.line).await {
                Ok(0) if self.line.is_empty() => {
                    self.gone.send_replace(Some(Ended::Eof));
                    return None;
                }
                Err(e) => {
                    self.gone.send_replace(Some(Ended::Error(e.to_string())));
                    return None;
                }
                Ok(_) => {
                    let line = std::mem::take(&mut self.line);
                    let read = self.read(&line);
                    self.line = line;
                    self.line.clear();
                    match read {
                        Ok(Some(message)) => return Some(message),
                        Ok(None) => {}
                        Err(reply) => self.reply(&reply),
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The SDK numbers the requests it sends to the client from 0, and the TypeScript SDK
/// (in Claude Code, among others) ignores a `notifications/cancelled` for request 0
/// (`if (!requestId) return`): a dialog withdrawn by that cancel would stay up. So the
/// ids go out one higher ([`to_client`]) and come back one lower ([`from_client`]).
fn shifted(id: &mut NumberOrString, by: i64) {
    if let NumberOrString::Number(n) = id {
        *n += by;
    }
}

fn to_client(mut message: TxJsonRpcMessage<RoleServer>) -> TxJsonRpcMessage<RoleServer> {
    match &mut message {
        JsonRpcMessage::Request(request) => shifted(&mut request.id, 1),
        JsonRpcMessage::Notification(n) => {
            if let ServerNotification::CancelledNotification(c) = &mut n.notification {
                if let Some(id) = &mut c.params.request_id {
                    shifted(id, 1);
                }
            }
        }
        _ => {}
    }
    message
}

/// The replies to the server's requests, back in the SDK's numbering ([`shifted`]).
fn from_client(mut message: RxJsonRpcMessage<RoleServer>) -> RxJsonRpcMessage<RoleServer> {
    match &mut message {
        JsonRpcMessage::Response(response) => shifted(&mut response.id, -1),
        JsonRpcMessage::Error(error) => {
            if let Some(id) = &mut error.id {
                shifted(id, -1);
            }
        }
        _ => {}
    }
    message
}

/// Reads one line. A line that is not a JSON-RPC message gets the error reply to send.
pub fn parse(line: &str) -> Result<Incoming, Value> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        error(Value::Null, PARSE_ERROR, format!("Parse error: each line must be one JSON-RPC message, and this one is not JSON ({e})"))
    })?;
    let Value::Object(mut message) = value else {
        let what = if value.is_array() { "an array (batches are not part of MCP)" } else { "not an object" };
        return Err(error(Value::Null, INVALID_REQUEST, format!("Invalid request: expected a JSON-RPC message object, got {what}")));
    };
    let id = message.remove("id");
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error(id.unwrap_or(Value::Null), INVALID_REQUEST, "Invalid request: \"jsonrpc\" must be \"2.0\""));
    }
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) if id.is_string() || id.is_number() => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(_)), Some(id)) => {
            Err(error(Value::Null, INVALID_REQUEST, format!("Invalid request: \"id\" must be a string or a number, got {id}")))
        }
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(other), id) => {
            Err(error(id.unwrap_or(Value::Null), INVALID_REQUEST, format!("Invalid request: \"method\" must be a string, got {other}")))
        }
        (None, Some(id)) if message.contains_key("result") || message.contains_key("error") => {
            let outcome = match message.remove("error") {
                Some(error) => Err(error),
                None => Ok(message.remove("result").unwrap_or(Value::Null)),
            };
            Ok(Incoming::Response { id, outcome })
        }
        (None, id) => Err(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid request: a message needs a \"method\" (or, as a reply, \"result\" or \"error\")",
        )),
    }
}

/// "an array", "a string", … for error messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<Incoming, Value>) -> i64 {
        r.unwrap_err()["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn reads_requests_notifications_and_replies() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap(),
            Incoming::Request { id: json!(7), method: "ping".into(), params: Value::Null }
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Incoming::Notification { method: "notifications/initialized".into(), params: Value::Null }
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Incoming::Response { id: json!("a"), outcome: Ok(json!({})) }
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1}}"#).unwrap(),
            Incoming::Response { id: json!(3), outcome: Err(json!({"code": -1})) }
        );
    }

    /// rmcp's loop drops the read whenever other work is ready first (a reply, a
    /// progress notification): a line read in part by then must not be lost.
    #[tokio::test]
    async fn a_line_read_in_part_when_the_read_is_dropped_is_kept() {
        use tokio::io::AsyncWriteExt;
        let (mut host, input) = tokio::io::duplex(1024);
        let mut lines = Lines::new(input, tokio::io::sink(), Box::new(|_, _| {}));
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#;
        let (first, rest) = line.split_at(25);
        host.write_all(first.as_bytes()).await.unwrap();
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), Transport::receive(&mut lines)).await;
        assert!(dropped.is_err(), "half a line is no message");
        host.write_all(format!("{rest}\n").as_bytes()).await.unwrap();
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), Transport::receive(&mut lines))
            .await
            .expect("the rest of the line completes it")
            .expect("a message");
        assert!(matches!(&message, JsonRpcMessage::Request(r) if r.id == NumberOrString::Number(7)), "{message:?}");
    }

    #[test]
    fn bad_lines_get_the_right_error() {
        assert_eq!(code(parse("{not json")), PARSE_ERROR);
        assert_eq!(code(parse("[]")), INVALID_REQUEST);
        assert_eq!(code(parse(r#"{"id":1,"method":"ping"}"#)), INVALID_REQUEST);
        assert_eq!(code(parse(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#)), INVALID_REQUEST);
        let e = parse("{not json").unwrap_err();
        assert_eq!(e["id"], Value::Null);
    }
}
