//! JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line.

use serde_json::{json, Value};

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

pub fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
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
