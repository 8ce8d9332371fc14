//! The messages between agents, the bridge and browsers, as JSON text frames.
//!
//! Every message is an object with a `type` tag (snake_case). Both ends use these
//! types; `docs/protocol.md` documents the JSON. The core only defines and checks
//! messages: it never sends one.
//!
//! - Agent socket (`/v1/agent`): [`AgentMessage`] in, [`AgentEvent`] out.
//! - Browser socket (`/v1/ui`): [`BrowserMessage`] in, [`BrowserEvent`] out.

use crate::answer::{AskResult, Selection, Status};
use crate::error::{FieldError, Invalid};
use crate::format::Format;
use crate::model::{Question, Request};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A question set as the bridge stores it and browsers see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionRecord {
    pub id: String,
    /// The canonical request (its `agent` says who asks).
    pub request: Request,
    pub status: Status,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<AskResult>,
    /// The browser client (or `cli`, `http`) that gave the final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

/// An agent session's presence, for the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPresence {
    pub session_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub connected: bool,
}

/// Why a message was refused. `code` is stable; `message` is for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request or answer failed validation; `errors` lists every problem.
    Invalid,
    /// The message is not JSON or not a known message.
    BadMessage,
    /// The id is in use with other questions, or the question is already final.
    Conflict,
    NotFound,
    /// A limit was reached (pending questions per agent, message rate, size).
    TooMany,
    Unauthorized,
    /// The bridge could not store it now (its store did not answer in time, or it is
    /// stopping): nothing changed, and the same message may be sent again.
    Unavailable,
    Internal,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody { code, message: message.into(), errors: vec![] }
    }

    pub fn invalid(invalid: Invalid) -> Self {
        let n = invalid.errors.len();
        ErrorBody {
            code: ErrorCode::Invalid,
            message: format!("{n} problem{} found:\n{invalid}", if n == 1 { "" } else { "s" }),
            errors: invalid.errors,
        }
    }
}

/// From an agent to the bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMessage {
    /// Ask (or, with a known `request.id`, resume). `request` is in any dialect.
    Ask {
        /// Chosen by the agent to match the `accepted` / `error` reply.
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        request: Value,
        #[serde(default)]
        format: Format,
    },
    /// The agent takes its question back.
    Withdraw { id: String },
}

/// From the bridge to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The question is stored durably; `resumed` when the id already existed.
    Accepted {
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        id: String,
        resumed: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<FieldError>,
    },
    /// The final result, in the format the ask chose.
    Result { id: String, status: Status, result: Value },
    /// A message was refused (see [`Refused`]).
    Error(Refused),
}

/// A refusal, the same on both sockets: the `ref` of the message refused (if it had
/// one), the question it was about (if any), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub error: ErrorBody,
}

impl Refused {
    /// A refusal of no message and no question in particular.
    pub fn of(error: ErrorBody) -> Refused {
        Refused { reference: None, id: None, error }
    }
}

/// From a browser to the bridge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BrowserMessage {
    /// One selection per question, in order. Sending the same answer twice is harmless:
    /// the first answer is final, and an identical one is acknowledged again.
    Answer {
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        id: String,
        answers: Vec<Selection>,
    },
    /// The person declines the whole question set; with `chat`, because they would
    /// rather talk it over with the agent ("Chat about this").
    Cancel {
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        id: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        chat: bool,
    },
    /// A page of the history the bridge keeps (answered, declined, withdrawn and timed-out
    /// questions, most recently finished first), optionally only those whose question,
    /// options or answers contain `search` (ignoring case). Answered by a `history` event.
    History {
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        search: Option<String>,
        #[serde(default)]
        offset: usize,
        /// At most [`HISTORY_PAGE`]; default 20.
        #[serde(default = "history_page")]
        limit: usize,
    },
}

/// The most history records one `history` event carries.
pub const HISTORY_PAGE: usize = 100;

fn history_page() -> usize {
    20
}

/// Questions per `snapshot` part: what a socket buffers at once stays small however
/// many questions wait (a socket's write buffer keeps the size of its largest frame).
pub const SNAPSHOT_PART: usize = 100;

/// A `snapshot` part also ends once its questions' stored JSON passes this many bytes
/// (a part holds at least one question), so a tab's snapshot of big questions never
/// sits in memory whole.
pub const SNAPSHOT_PART_BYTES: usize = 512 * 1024;

/// The person a browser connection belongs to, and their teams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Viewer {
    pub person: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teams: Vec<String>,
}

/// From the bridge to every browser. Read by [`BrowserEventDef`] (not derived: a page
/// reads every frame, and serde's internally tagged enums are the largest code in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BrowserEvent {
    /// Sent first on every connection (and to resync a browser that fell behind): every
    /// pending question, oldest first, in parts of at most [`SNAPSHOT_PART`] questions
    /// (fewer once they pass [`SNAPSHOT_PART_BYTES`]).
    /// Every part but the last has `more: true`; a client concatenates the parts'
    /// `questions` and `agents`.
    Snapshot {
        /// This connection's id, as named in `answered.by`.
        client: String,
        questions: Vec<QuestionRecord>,
        agents: Vec<AgentPresence>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
        /// Who this connection is (its device's person and their teams), when it is
        /// someone: what the inbox's "mine" and "team" mean.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        viewer: Option<Viewer>,
    },
    Asked {
        question: QuestionRecord,
    },
    /// Answered or cancelled by a person (`result.status` says which).
    Answered {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        result: AskResult,
    },
    /// Withdrawn by its agent, or timed out (`status` says which); no longer answerable.
    Withdrawn {
        id: String,
        status: Status,
    },
    /// An agent session connected or went away.
    Agent {
        agent: AgentPresence,
    },
    /// A page of history, for the `history` message with this `ref`: final questions
    /// (with their results), most recently finished first; `more` when older ones follow.
    History {
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        records: Vec<QuestionRecord>,
        offset: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
    },
    /// The message with this `ref` was accepted.
    Ack {
        #[serde(rename = "ref")]
        reference: String,
        id: String,
    },
    /// A message was refused (see [`Refused`]).
    Error(Refused),
}

/// [`BrowserEvent`]'s fields, for reading it: the same variants, each read from the
/// object that follows its `type` ([`TaggedMap`]). A field added to one but not the other
/// does not compile; `every_message_round_trips` checks that their names agree.
#[derive(Deserialize)]
#[serde(remote = "BrowserEvent", rename_all = "snake_case")]
enum BrowserEventDef {
    Snapshot {
        client: String,
        questions: Vec<QuestionRecord>,
        agents: Vec<AgentPresence>,
        #[serde(default)]
        more: bool,
        #[serde(default)]
        viewer: Option<Viewer>,
    },
    Asked {
        question: QuestionRecord,
    },
    Answered {
        id: String,
        #[serde(default)]
        by: Option<String>,
        result: AskResult,
    },
    Withdrawn {
        id: String,
        status: Status,
    },
    Agent {
        agent: AgentPresence,
    },
    History {
        #[serde(rename = "ref", default)]
        reference: Option<String>,
        records: Vec<QuestionRecord>,
        offset: usize,
        #[serde(default)]
        more: bool,
    },
    Ack {
        #[serde(rename = "ref")]
        reference: String,
        id: String,
    },
    Error(Refused),
}

/// Reads `{"type": KIND, ...fields}` as an internally tagged enum would, without its cost:
/// serde's derived version buffers every message into its `Content` tree and reads each
/// variant from that (issue 51: 30-50 KB of the page's wasm). When `type` comes first, as
/// every serializer here writes it, the fields are read straight from the input; otherwise
/// the object is read into a map and read again with `type` first.
impl<'de> Deserialize<'de> for BrowserEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Message;
        impl<'de> serde::de::Visitor<'de> for Message {
            type Value = BrowserEvent;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a message with a `type`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<BrowserEvent, A::Error> {
                use serde::de::Error;
                let first: Option<String> = map.next_key()?;
                if first.as_deref() == Some("type") {
                    let kind: String = map.next_value()?;
                    return BrowserEventDef::deserialize(TaggedMap { kind, map });
                }
                let mut rest = Map::new();
                if let Some(key) = first {
                    rest.insert(key, map.next_value()?);
                }
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    rest.insert(key, value);
                }
                let kind = rest.remove("type").ok_or_else(|| A::Error::missing_field("type"))?;
                let mut text = format!("{{\"type\":{kind}");
                for (key, value) in rest {
                    text.push_str(&format!(",{}:{value}", Value::String(key)));
                }
                text.push('}');
                serde_json::from_str(&text).map_err(A::Error::custom)
            }
        }
        deserializer.deserialize_map(Message)
    }
}

/// An object whose `type` was read, as an externally tagged enum: the variant is `kind`,
/// its fields the rest of the object.
struct TaggedMap<A> {
    kind: String,
    map: A,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::Deserializer<'de> for TaggedMap<A> {
    type Error = A::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::EnumAccess<'de> for TaggedMap<A> {
    type Error = A::Error;
    type Variant = Fields<A>;

    fn variant_seed<V: serde::de::DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Fields<A>), A::Error> {
        use serde::de::IntoDeserializer;
        let variant = seed.deserialize(self.kind.into_deserializer())?;
        Ok((variant, Fields(self.map)))
    }
}

/// The rest of a tagged object: a variant's fields.
struct Fields<A>(A);

impl<'de, A: serde::de::MapAccess<'de>> serde::de::VariantAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        // The object's other fields are ignored, as a struct's unknown fields are.
        serde::de::IgnoredAny::deserialize(serde::de::value::MapAccessDeserializer::new(self.0)).map(drop)
    }

    fn newtype_variant_seed<T: serde::de::DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        seed.deserialize(serde::de::value::MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: serde::de::Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }

    fn struct_variant<V: serde::de::Visitor<'de>>(self, _: &'static [&'static str], visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}

impl BrowserEvent {
    /// Parses the previews of the question sets a page draws from this event (a new
    /// question's, a snapshot's: [`Request::parse_previews`]); the bridge does it as it
    /// sends, so the page needs no markdown parser.
    pub fn parse_previews(&mut self) {
        match self {
            BrowserEvent::Asked { question } => question.request.parse_previews(),
            BrowserEvent::Snapshot { questions, .. } => questions.iter_mut().for_each(|q| q.request.parse_previews()),
            _ => {}
        }
    }
}

/// The body of an HTTP answer: `{"answers": ...}` where answers are, in question order,
/// selections (`{"selected": [...], "custom": "..."}`) or typed text (`"PostgreSQL"`),
/// or an object keyed by question text (`{"Which database?": "PostgreSQL"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerBody {
    pub answers: AnswerSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnswerSet {
    InOrder(Vec<AnswerItem>),
    ByQuestion(Map<String, Value>),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnswerItem {
    Text(String),
    Selection(Selection),
}

impl AnswerSet {
    /// The selections, one per question in order. Typed text is read with
    /// [`Selection::from_text`]; a question-keyed object must name every question.
    pub fn selections(&self, questions: &[Question]) -> Result<Vec<Selection>, Invalid> {
        match self {
            AnswerSet::InOrder(items) => Ok(items
                .iter()
                .zip(questions)
                .map(|(item, q)| match item {
                    AnswerItem::Text(t) => Selection::from_text(q, t),
                    AnswerItem::Selection(s) => s.clone(),
                })
                // A wrong count is reported by `resolve`, with the expected number.
                .chain(items.iter().skip(questions.len()).map(|_| Selection::default()))
                .collect()),
            AnswerSet::ByQuestion(map) => {
                let mut errors = Vec::new();
                for key in map.keys().filter(|k| !questions.iter().any(|q| &q.question == *k)) {
                    errors.push(FieldError::new(format!("answers[{key:?}]"), "is not the text of any question asked"));
                }
                let selections = questions
                    .iter()
                    .map(|q| match map.get(&q.question) {
                        Some(Value::String(t)) => Selection::from_text(q, t),
                        Some(Value::Array(items)) => Selection {
                            selected: items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                            ..Selection::default()
                        },
                        Some(other) => {
                            errors.push(FieldError::new(
                                format!("answers[{:?}]", q.question),
                                format!("expected a string or an array of labels, got {}", crate::error::describe(other)),
                            ));
                            Selection::default()
                        }
                        None => {
                            errors
                                .push(FieldError::new(format!("answers[{:?}]", q.question), "is missing; every question needs an answer"));
                            Selection::default()
                        }
                    })
                    .collect();
                if errors.is_empty() {
                    Ok(selections)
                } else {
                    Err(Invalid { errors })
                }
            }
        }
    }
}

/// Reads one text frame from an agent, with a clear error for anything else.
pub fn decode_agent(text: &str) -> Result<AgentMessage, ErrorBody> {
    decode(text, "ask, withdraw")
}

/// Reads one text frame from a browser, with a clear error for anything else.
pub fn decode_browser(text: &str) -> Result<BrowserMessage, ErrorBody> {
    decode(text, "answer, cancel")
}

fn decode<T: serde::de::DeserializeOwned>(text: &str, known: &str) -> Result<T, ErrorBody> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ErrorBody::new(ErrorCode::BadMessage, format!("expected a JSON message, got invalid JSON: {e}")))?;
    let kind = match value.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => {
            return Err(ErrorBody::new(
                ErrorCode::BadMessage,
                format!("type: expected one of {known}, got {}", crate::error::describe(other)),
            ))
        }
        None => return Err(ErrorBody::new(ErrorCode::BadMessage, format!("type: is missing; expected one of {known}"))),
    };
    serde_json::from_value(value).map_err(|e| {
        let msg = e.to_string();
        // Only an unknown `type` is a bad type; an unknown value elsewhere (a format,
        // say) is reported as serde words it.
        if msg.starts_with(&format!("unknown variant `{kind}`")) {
            ErrorBody::new(ErrorCode::BadMessage, format!("type: expected one of {known}, got {kind:?}"))
        } else {
            ErrorBody::new(ErrorCode::BadMessage, format!("{kind} message: {msg}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::resolve;
    use crate::model::{Agent, Choice};
    use serde_json::json;

    fn request() -> Request {
        Request {
            id: Some("q-1".into()),
            questions: vec![Question {
                question: "Which database?".into(),
                header: Some("DB".into()),
                options: vec![
                    Choice { label: "PostgreSQL".into(), description: Some("Relational".into()), preview: None },
                    Choice::new("SQLite"),
                ],
                multi_select: false,
            }],
            agent: Some(Agent { name: "claude-code".into(), session_id: Some("s-1".into()), ..Default::default() }),
            ..Request::default()
        }
    }

    fn record() -> QuestionRecord {
        QuestionRecord {
            id: "q-1".into(),
            request: request(),
            status: Status::Pending,
            created_at: 1_000,
            answered_at: None,
            result: None,
            answered_by: None,
        }
    }

    fn result() -> AskResult {
        let r = request();
        AskResult::answered("q-1", &r, resolve(&r.questions, &[Selection::option("SQLite")]).unwrap(), 2_000)
    }

    /// The bridge parses a page's previews as it sends (issue 51): a new question's and a
    /// snapshot's, which the page draws; nothing else is touched.
    #[test]
    fn browser_events_carry_parsed_previews() {
        let mut with_preview = record();
        with_preview.request.questions[0].options[1].preview = Some("**fast**".into());
        let doc = Some(vec![vec![None, Some(crate::markdown::parse("**fast**"))]]);
        let mut asked = BrowserEvent::Asked { question: with_preview.clone() };
        asked.parse_previews();
        let BrowserEvent::Asked { question } = &asked else { unreachable!() };
        assert_eq!(question.request.preview_docs, doc);
        let mut snapshot = BrowserEvent::Snapshot {
            client: "c".into(),
            questions: vec![with_preview.clone(), record()],
            agents: vec![],
            more: false,
            viewer: None,
        };
        snapshot.parse_previews();
        let BrowserEvent::Snapshot { questions, .. } = &snapshot else { unreachable!() };
        assert_eq!((&questions[0].request.preview_docs, &questions[1].request.preview_docs), (&doc, &None));
        let mut history = BrowserEvent::History { reference: None, records: vec![with_preview], offset: 0, more: false };
        history.parse_previews();
        let BrowserEvent::History { records, .. } = &history else { unreachable!() };
        assert_eq!(records[0].request.preview_docs, None, "history shows no previews");
    }

    #[test]
    fn agent_messages() {
        insta::assert_json_snapshot!(
            "agent_ask",
            AgentMessage::Ask {
                reference: Some("1".into()),
                request: json!({"question": "Proceed?", "choices": ["Yes", "No"]}),
                format: Format::Claude
            }
        );
        insta::assert_json_snapshot!("agent_withdraw", AgentMessage::Withdraw { id: "q-1".into() });
        insta::assert_json_snapshot!(
            "agent_accepted",
            AgentEvent::Accepted { reference: Some("1".into()), id: "q-1".into(), resumed: false, warnings: vec![] }
        );
        insta::assert_json_snapshot!(
            "agent_result",
            AgentEvent::Result { id: "q-1".into(), status: Status::Answered, result: result().to_json(Format::Canonical) }
        );
        insta::assert_json_snapshot!(
            "agent_error",
            AgentEvent::Error(Refused {
                reference: Some("2".into()),
                id: None,
                error: ErrorBody::invalid(Invalid::one("questions[0].question", "must not be empty")),
            })
        );
    }

    #[test]
    fn browser_messages() {
        insta::assert_json_snapshot!(
            "browser_snapshot",
            BrowserEvent::Snapshot {
                client: "c-7".into(),
                questions: vec![record()],
                agents: vec![AgentPresence {
                    session_id: "s-1".into(),
                    name: "claude-code".into(),
                    parent_session_id: None,
                    connected: true
                }],
                more: false,
                viewer: None,
            }
        );
        insta::assert_json_snapshot!("browser_asked", BrowserEvent::Asked { question: record() });
        insta::assert_json_snapshot!(
            "browser_answered",
            BrowserEvent::Answered { id: "q-1".into(), by: Some("c-7".into()), result: result() }
        );
        insta::assert_json_snapshot!("browser_withdrawn", BrowserEvent::Withdrawn { id: "q-1".into(), status: Status::TimedOut });
        insta::assert_json_snapshot!("browser_ack", BrowserEvent::Ack { reference: "r-1".into(), id: "q-1".into() });
        insta::assert_json_snapshot!(
            "browser_answer",
            BrowserMessage::Answer { reference: Some("r-1".into()), id: "q-1".into(), answers: vec![Selection::option("SQLite")] }
        );
        insta::assert_json_snapshot!("browser_cancel", BrowserMessage::Cancel { reference: None, id: "q-1".into(), chat: false });
        insta::assert_json_snapshot!("browser_cancel_chat", BrowserMessage::Cancel { reference: None, id: "q-1".into(), chat: true });
        let asked: BrowserMessage = serde_json::from_str(r#"{"type": "history", "ref": "r-2", "search": "database"}"#).unwrap();
        assert_eq!(asked, BrowserMessage::History { reference: Some("r-2".into()), search: Some("database".into()), offset: 0, limit: 20 });
        let mut answered = record();
        answered.status = Status::Answered;
        answered.result = Some(result());
        insta::assert_json_snapshot!(
            "browser_history",
            BrowserEvent::History { reference: Some("r-2".into()), records: vec![answered], offset: 0, more: true }
        );
    }

    #[test]
    fn every_message_round_trips() {
        let agent = [
            AgentMessage::Withdraw { id: "x".into() },
            AgentMessage::Ask { reference: None, request: json!({"question": "Q"}), format: Format::Pi },
        ];
        for m in agent {
            assert_eq!(decode_agent(&serde_json::to_string(&m).unwrap()).unwrap(), m);
        }
        let browser = [
            BrowserMessage::Cancel { reference: Some("r".into()), id: "x".into(), chat: false },
            BrowserMessage::Cancel { reference: None, id: "x".into(), chat: true },
            BrowserMessage::Answer { reference: None, id: "x".into(), answers: vec![Selection::custom("t")] },
        ];
        for m in browser {
            assert_eq!(decode_browser(&serde_json::to_string(&m).unwrap()).unwrap(), m);
        }
        let presence =
            AgentPresence { session_id: "s-1".into(), name: "pi".into(), parent_session_id: Some("s-0".into()), connected: true };
        let answered = QuestionRecord {
            status: Status::Answered,
            answered_at: Some(2_000),
            result: Some(result()),
            answered_by: Some("c-1".into()),
            ..record()
        };
        let refused = Refused { reference: Some("r".into()), id: Some("q-1".into()), error: ErrorBody::new(ErrorCode::Conflict, "final") };
        let viewer = Viewer { person: "ann".into(), teams: vec!["ops".into()] };
        let events = [
            BrowserEvent::Snapshot {
                client: "c-1".into(),
                questions: vec![record()],
                agents: vec![presence.clone()],
                more: true,
                viewer: Some(viewer),
            },
            BrowserEvent::Snapshot { client: "c-1".into(), questions: vec![], agents: vec![], more: false, viewer: None },
            BrowserEvent::Asked { question: record() },
            BrowserEvent::Answered { id: "q-1".into(), by: Some("c-1".into()), result: result() },
            BrowserEvent::Answered { id: "q-1".into(), by: None, result: result() },
            BrowserEvent::Withdrawn { id: "x".into(), status: Status::Withdrawn },
            BrowserEvent::Agent { agent: presence },
            BrowserEvent::History { reference: Some("r-2".into()), records: vec![answered], offset: 20, more: true },
            BrowserEvent::History { reference: None, records: vec![], offset: 0, more: false },
            BrowserEvent::Ack { reference: "r".into(), id: "q-1".into() },
            BrowserEvent::Error(refused),
        ];
        for e in events {
            let text = serde_json::to_string(&e).unwrap();
            assert_eq!(serde_json::from_str::<BrowserEvent>(&text).unwrap(), e, "{text}");
            // As a value too (the read is the same for any input, not only JSON text).
            assert_eq!(serde_json::from_value::<BrowserEvent>(serde_json::from_str(&text).unwrap()).unwrap(), e, "{text}");
            // With `type` last: the order of an object's keys means nothing.
            let Value::Object(mut fields) = serde_json::from_str::<Value>(&text).unwrap() else { unreachable!() };
            let kind = fields.shift_remove("type").unwrap();
            fields.insert("type".into(), kind);
            let reordered = serde_json::to_string(&fields).unwrap();
            assert!(!reordered.starts_with(r#"{"type""#) || fields.len() == 1, "{reordered}");
            assert_eq!(serde_json::from_str::<BrowserEvent>(&reordered).unwrap(), e, "{reordered}");
        }
    }

    /// A browser event that is not one reads as an error naming what is wrong (the page
    /// skips such a frame), never as some other event.
    #[test]
    fn bad_browser_events_are_errors() {
        let err = |t: &str| serde_json::from_str::<BrowserEvent>(t).unwrap_err().to_string();
        assert!(
            err(r#"{"type":"explode","id":"x"}"#).starts_with("unknown variant `explode`, expected one of `snapshot`"),
            "{}",
            err(r#"{"type":"explode"}"#)
        );
        assert!(err(r#"{"id":"x","type":"explode"}"#).contains("unknown variant `explode`"));
        assert!(err(r#"{"id":"x"}"#).starts_with("missing field `type`"));
        assert!(err(r#"{"type":"ack","id":"x"}"#).starts_with("missing field `ref`"));
        assert!(err(r#"{"type":7}"#).starts_with("invalid type: integer `7`, expected a string"));
        assert!(err(r#"["ack"]"#).starts_with("invalid type: sequence, expected a message with a `type`"));
        assert!(err(r#"{"type":"withdrawn","id":"x","status":"gone"}"#).starts_with("unknown variant `gone`"));
        // Fields it does not know (a newer bridge's) are skipped, as before.
        let ack: BrowserEvent = serde_json::from_str(r#"{"type":"ack","ref":"r","id":"x","new":[1,{"a":2}]}"#).unwrap();
        assert_eq!(ack, BrowserEvent::Ack { reference: "r".into(), id: "x".into() });
        // One answer or several, and nothing else.
        let value = |t: &str| serde_json::from_str::<crate::answer::AnswerValue>(t).map_err(|e| e.to_string());
        assert_eq!(value(r#""a""#), Ok(crate::answer::AnswerValue::One("a".into())));
        assert_eq!(value(r#"["a","b"]"#), Ok(crate::answer::AnswerValue::Many(vec!["a".into(), "b".into()])));
        assert!(value("7").unwrap_err().starts_with("invalid type: integer `7`, expected a string or a list of strings"));
        assert!(value("[7]").unwrap_err().starts_with("invalid type: integer `7`, expected a string"));
    }

    #[test]
    fn bad_frames_get_clear_errors() {
        let msg = |t: &str| decode_browser(t).unwrap_err().message;
        assert!(msg("{nope").starts_with("expected a JSON message, got invalid JSON: key must be a string at line 1 column 2"));
        assert_eq!(msg(r#"{"id":"x"}"#), "type: is missing; expected one of answer, cancel");
        assert_eq!(msg(r#"{"type":"explode"}"#), "type: expected one of answer, cancel, got \"explode\"");
        assert_eq!(msg(r#"{"type":7}"#), "type: expected one of answer, cancel, got the number 7");
        assert_eq!(msg(r#"{"type":"cancel"}"#), "cancel message: missing field `id`");
        assert_eq!(decode_agent(r#"{"type":"ask"}"#).unwrap_err().message, "ask message: missing field `request`");
        let bad_format = decode_agent(r#"{"type":"ask","request":{},"format":"xml"}"#).unwrap_err().message;
        assert!(bad_format.starts_with("ask message: unknown variant `xml`, expected one of"), "{bad_format}");
    }

    #[test]
    fn answer_sets_in_every_spelling() {
        let qs = request().questions;
        let body: AnswerBody = serde_json::from_value(json!({"answers": ["sqlite"]})).unwrap();
        assert_eq!(body.answers.selections(&qs).unwrap(), [Selection::option("SQLite")]);
        let body: AnswerBody = serde_json::from_value(json!({"answers": [{"custom": "DynamoDB"}]})).unwrap();
        assert_eq!(body.answers.selections(&qs).unwrap(), [Selection::custom("DynamoDB")]);
        let body: AnswerBody = serde_json::from_value(json!({"answers": {"Which database?": "PostgreSQL"}})).unwrap();
        assert_eq!(body.answers.selections(&qs).unwrap(), [Selection::option("PostgreSQL")]);
        let body: AnswerBody = serde_json::from_value(json!({"answers": {"Which DB?": "PostgreSQL"}})).unwrap();
        let err = body.answers.selections(&qs).unwrap_err().to_string();
        assert_eq!(err, "answers[\"Which DB?\"]: is not the text of any question asked\nanswers[\"Which database?\"]: is missing; every question needs an answer");
        // Too many answers reach `resolve`, which names the expected count.
        let body: AnswerBody = serde_json::from_value(json!({"answers": ["SQLite", "x"]})).unwrap();
        let sel = body.answers.selections(&qs).unwrap();
        assert_eq!(resolve(&qs, &sel).unwrap_err().to_string(), "answers: expected 1 answer (one per question, in order), got 2");
    }
}
