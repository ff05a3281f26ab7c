//! One message of a line, decoded as rmcp decodes it, in one pass where the message is a
//! `tools/call` or the answer to one.
//!
//! rmcp decodes a message as an untagged enum: the whole line is buffered, then every kind of
//! message is tried, and inside a request every request type in turn until one accepts it
//! (`tools/call` is the fourteenth); an answer is tried against every result type (a tool's
//! result is the sixteenth). Each miss builds an error. Here a borrowed scan of the envelope
//! (`jsonrpc`, `id`, `method`, `result`, `error`, each kept as its raw text) says what the
//! message is, and a `tools/call` request or the answer to one is decoded as that type
//! directly (a request's parameters, when they are an object holding only keys rmcp reads,
//! without rmcp's two buffering passes over flattened fields). Only a line of few brackets
//! is taken (so no value in it, a skipped one included, nests near serde_json's limit,
//! which rmcp's decoder would hit). Anything else, and anything the fast path is not certain of (an escaped
//! method name, a duplicate key, a result with a key a tool result does not have, a decode
//! that fails), is decoded by rmcp's own decoder: the fast path never decides a message
//! differently, it only skips the tries that could not match (the tests compare both on a
//! table of messages).

use std::collections::HashSet;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientNotification, ClientRequest,
    ErrorData, InputResponses, JsonObject, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest,
    JsonRpcResponse, JsonRpcVersion2_0, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::{RoleClient, RoleServer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;

use crate::served::DirectServing;

/// Ids of `tools/call` requests this side sent and has not had answered, so that their
/// answers are decoded as tool results. Bounded: a peer that never answers cannot grow it
/// (when full it is emptied; those answers then take rmcp's decoder).
#[derive(Debug, Default)]
pub struct PendingCalls {
    ids: HashSet<RequestId>,
}

impl PendingCalls {
    /// Most ids remembered at once.
    pub const LIMIT: usize = 4096;

    fn remember(&mut self, id: RequestId) {
        if self.ids.len() >= Self::LIMIT {
            self.ids.clear();
        }
        self.ids.insert(id);
    }

    fn forget(&mut self, id: &RequestId) -> bool {
        self.ids.remove(id)
    }

    /// How many answers are awaited.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A side of an MCP connection as the transport sees it: what it can decode in one pass.
pub trait Side: ServiceRole {
    /// The message of `line` when the fast path is certain of it; `None` sends the line to
    /// rmcp's decoder.
    fn decode_fast(line: &[u8], calls: &mut PendingCalls) -> Option<RxJsonRpcMessage<Self>>;

    /// Note a message this side sends (a client remembers its `tools/call` ids).
    fn sent(message: &TxJsonRpcMessage<Self>, calls: &mut PendingCalls);

    /// Offer `message` to the connection's [`DirectServing`]: `None` when it took it (a
    /// server's `tools/call`); a client's messages all go to rmcp.
    fn offer(
        message: RxJsonRpcMessage<Self>,
        _serving: &DirectServing,
    ) -> Option<RxJsonRpcMessage<Self>> {
        Some(message)
    }
}

impl Side for RoleServer {
    fn decode_fast(line: &[u8], _calls: &mut PendingCalls) -> Option<RxJsonRpcMessage<Self>> {
        if !shallow(line) {
            return None;
        }
        let envelope = RequestEnvelope::of(line)?;
        if !envelope.is_tool_call() || !envelope.jsonrpc.is("\"2.0\"") {
            return None;
        }
        // The id from its raw text, and the parameters from theirs: rmcp's `JsonRpcRequest`
        // flattens the request, and its `Request` the parameters (to take their `_meta`),
        // each of which buffers what it flattens before decoding it again.
        let id: RequestId = serde_json::from_str(envelope.id.0?.get()).ok()?;
        let request = CallParams::decode(envelope.params.0?)?;
        Some(JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc: JsonRpcVersion2_0,
            id,
            request: ClientRequest::CallToolRequest(request),
        }))
    }

    fn sent(_message: &TxJsonRpcMessage<Self>, _calls: &mut PendingCalls) {}

    fn offer(
        message: RxJsonRpcMessage<Self>,
        serving: &DirectServing,
    ) -> Option<RxJsonRpcMessage<Self>> {
        match message {
            JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc,
                id,
                request: request @ ClientRequest::CallToolRequest(_),
            }) => serving.serve(id, request).map(|(id, request)| {
                JsonRpcMessage::Request(JsonRpcRequest {
                    jsonrpc,
                    id,
                    request,
                })
            }),
            message => {
                if let JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ClientNotification::CancelledNotification(cancelled),
                    ..
                }) = &message
                    && let Some(id) = &cancelled.params.request_id
                {
                    serving.cancel(id);
                }
                Some(message)
            }
        }
    }
}

impl Side for RoleClient {
    fn decode_fast(line: &[u8], calls: &mut PendingCalls) -> Option<RxJsonRpcMessage<Self>> {
        if !shallow(line) {
            return None;
        }
        let envelope = Envelope::of(line)?;
        if envelope.method.present() || calls.is_empty() {
            return None;
        }
        let id: RequestId = serde_json::from_str(envelope.id.0?.get()).ok()?;
        // An answer or an error ends the wait either way.
        if !calls.forget(&id) {
            return None;
        }
        if envelope.error.present() || !envelope.jsonrpc.is("\"2.0\"") {
            return None;
        }
        let result = tool_result(envelope.result.0?)?;
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id,
            result: ServerResult::CallToolResult(result),
        }))
    }

    fn sent(message: &TxJsonRpcMessage<Self>, calls: &mut PendingCalls) {
        if let JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CallToolRequest(_),
            ..
        }) = message
        {
            calls.remember(id.clone());
        }
    }
}

/// An answer (a message with an id and no method) whose id is a number, its envelope scanned
/// once: what the [`crate::lane`] looks its requests up by, then decodes.
pub(crate) struct AnswerLine<'a> {
    line: &'a [u8],
    envelope: Envelope<'a>,
    /// The id: an integer, or a string of one (which rmcp also takes for the number).
    pub(crate) number: i64,
}

/// `line` as an answer with a numbered id; `None` for anything else.
pub(crate) fn answer_line(line: &[u8]) -> Option<AnswerLine<'_>> {
    let envelope = Envelope::of(line)?;
    if envelope.method.present() {
        return None;
    }
    let id = envelope.id.0?.get();
    // rmcp takes an id sent back as a string of the number for the number's answer.
    let digits = id
        .strip_prefix('"')
        .and_then(|id| id.strip_suffix('"'))
        .unwrap_or(id);
    let number = match digits.parse() {
        Ok(number) => number,
        // Another spelling rmcp reads as the number (`7.0`, `7e0`, an escaped string of
        // digits): as rmcp reads it.
        Err(_) => match serde_json::from_str::<RequestId>(id).ok()? {
            RequestId::Number(number) => number,
            RequestId::String(text) => text.parse().ok()?,
        },
    };
    Some(AnswerLine {
        line,
        envelope,
        number,
    })
}

impl AnswerLine<'_> {
    /// The answer to a request the client sent, decoded as rmcp decodes it: a tool's result
    /// in one pass where [`RoleClient::decode_fast`] would take it, else by rmcp's decoder.
    /// `None` when the line is no answer rmcp would accept (it then goes to rmcp, which
    /// handles it as it handles any such line).
    pub(crate) fn decode(&self) -> Option<Result<ServerResult, ErrorData>> {
        let envelope = &self.envelope;
        if let Some(result) = envelope.result.0
            && shallow(self.line)
            && !envelope.error.present()
            && envelope.jsonrpc.is("\"2.0\"")
            && let Some(result) = tool_result(result)
        {
            return Some(Ok(ServerResult::CallToolResult(result)));
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(self.line).ok()? {
            JsonRpcMessage::Response(response) => Some(Ok(response.result)),
            JsonRpcMessage::Error(error) => Some(Err(error.error)),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        }
    }
}

/// A key of the envelope: whether it was there (an explicit `null` counts, as it does for
/// rmcp), and its raw text.
#[derive(Default, Clone, Copy)]
struct Seen<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Seen<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(deserializer).map(|raw| Seen(Some(raw)))
    }
}

impl Seen<'_> {
    fn present(self) -> bool {
        self.0.is_some()
    }

    /// Whether the raw text is exactly `json` (an escaped spelling is not: that message
    /// goes to rmcp's decoder).
    fn is(self, json: &str) -> bool {
        self.0.is_some_and(|raw| raw.get() == json)
    }
}

/// The keys that say what a JSON-RPC message is. A duplicate of one of them fails the scan,
/// and the line goes to rmcp's decoder.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Seen<'a>,
    #[serde(default, borrow)]
    id: Seen<'a>,
    #[serde(default, borrow)]
    method: Seen<'a>,
    #[serde(default, borrow)]
    result: Seen<'a>,
    #[serde(default, borrow)]
    error: Seen<'a>,
}

/// [`Envelope`]'s keys and a request's parameters: what a server's side scans. A duplicate
/// `params` fails the scan too (rmcp refuses such a request). Not the scan of answers, where
/// rmcp ignores `params`, duplicated or not.
#[derive(Deserialize)]
struct RequestEnvelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Seen<'a>,
    #[serde(default, borrow)]
    id: Seen<'a>,
    #[serde(default, borrow)]
    method: Seen<'a>,
    #[serde(default, borrow)]
    result: Seen<'a>,
    #[serde(default, borrow)]
    error: Seen<'a>,
    #[serde(default, borrow)]
    params: Seen<'a>,
}

impl<'a> RequestEnvelope<'a> {
    fn of(line: &'a [u8]) -> Option<Self> {
        serde_json::from_str(text_of(line)?).ok()
    }

    /// A `tools/call` request, as rmcp tells the kinds apart (a method and an id, neither a
    /// result nor an error).
    fn is_tool_call(&self) -> bool {
        let request = self.id.present() && !self.result.present() && !self.error.present();
        request && self.method.is("\"tools/call\"")
    }
}

/// Fewer opening brackets than this in a line, and no value in it nests anywhere near
/// serde_json's limit (128 levels from the line's root, as rmcp's decoder counts them),
/// including in the keys the fast path's scans skip (serde_json counts no depth for a value
/// it ignores): rmcp's decoder would refuse such a line for nothing the fast path misses. A
/// line with more goes to rmcp's decoder. Counting bytes is a vectorised pass.
const SHALLOW: usize = 100;

fn shallow(line: &[u8]) -> bool {
    line.iter().filter(|&&b| b == b'[' || b == b'{').count() < SHALLOW
}

impl CallParams {
    /// From the parameters' own raw text (of a [`shallow`] line).
    fn decode(raw: &RawValue) -> Option<CallToolRequest> {
        let ObjectOnly(decoded): ParamsMap = serde_json::from_str(raw.get()).ok()?;
        Some(decoded.into_request())
    }

    fn into_request(self) -> CallToolRequest {
        let decoded = self;
        let mut params = CallToolRequestParams::new(decoded.name);
        params.arguments = decoded.arguments;
        params.input_responses = decoded.input_responses;
        params.request_state = decoded.request_state;
        let mut request = CallToolRequest::new(params);
        if let Some(meta) = decoded.meta {
            request.extensions.insert(RequestMetaObject::from(meta));
        }
        request
    }
}

/// `T` decoded from a JSON object only: serde's derived struct decoding also takes an array
/// (the fields in order), which rmcp refuses for what is decoded so here (a call's
/// parameters, which flatten in rmcp; a tool result and its content blocks, which are tagged
/// or flatten).
pub(crate) struct ObjectOnly<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Object(std::marker::PhantomData))
            .map(ObjectOnly)
    }
}

/// A call's parameters, from a JSON object only.
type ParamsMap = ObjectOnly<CallParams>;

/// An answer's `result` (of a [`shallow`] line) as a tool result, when rmcp's decoder would
/// take it as one: the text-only shape directly ([`crate::text_result`]), else a result with
/// `content` and no key a tool result does not have ([`ToolResultKeys`]) by rmcp's
/// `CallToolResult` decoder.
fn tool_result(raw: &RawValue) -> Option<CallToolResult> {
    if let Some(result) = crate::text_result::text_only(raw) {
        return Some(result);
    }
    if !ToolResultKeys::only(raw) {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

/// A `tools/call`'s parameters, every key rmcp's `CallToolRequestParams` reads, and only
/// those: parameters with any other key (one a later rmcp might read) go to rmcp's decoder.
/// Decoded as rmcp decodes them: `_meta` becomes the request's `RequestMetaObject`
/// extension, the rest its parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CallParams {
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
    name: std::borrow::Cow<'static, str>,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

impl<'a> Envelope<'a> {
    fn of(line: &'a [u8]) -> Option<Self> {
        serde_json::from_str(text_of(line)?).ok()
    }
}

/// `line` as text, its UTF-8 checked once in one pass, so that the scan and the decodings
/// from the raw texts it keeps check nothing again. Decoded from bytes, serde_json checks
/// each string and raw value it keeps, on its own, and not the strings it skips: a line
/// with a byte that is not UTF-8 in a key the scan skips passed it, where rmcp's decoder
/// (which buffers every string) refuses the whole line. A line that is not UTF-8 is no
/// message the fast path is certain of: it goes to rmcp's decoder, which decides.
fn text_of(line: &[u8]) -> Option<&str> {
    std::str::from_utf8(line).ok()
}

/// Whether a result object has `content` and no key a tool result does not have: then no
/// result type rmcp tries before `CallToolResult` accepts it (each of those requires a key
/// of its own: `tools`, `contents`, `messages`, `action`, `task`…), and decoding it as a tool
/// result directly is what rmcp's decoder does.
struct ToolResultKeys;

impl ToolResultKeys {
    const KNOWN: [&'static str; 5] = [
        "content",
        "structuredContent",
        "isError",
        "_meta",
        "resultType",
    ];

    fn only(result: &RawValue) -> bool {
        let mut deserializer = serde_json::Deserializer::from_str(result.get());
        deserializer
            .deserialize_map(ToolResultKeys)
            .unwrap_or(false)
    }
}

impl<'de> Visitor<'de> for ToolResultKeys {
    type Value = bool;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a tool result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut content = false;
        while let Some(key) = map.next_key_seed(KeyOf)? {
            match key {
                Some(0) => content = true,
                Some(_) => {}
                None => return Ok(false),
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(content)
    }
}

/// The index of a key in [`ToolResultKeys::KNOWN`], compared in place.
struct KeyOf;

impl<'de> DeserializeSeed<'de> for KeyOf {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyOf {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(ToolResultKeys::KNOWN.iter().position(|known| *known == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_calls_are_bounded() {
        let mut calls = PendingCalls::default();
        for n in 0..PendingCalls::LIMIT as i64 {
            calls.remember(RequestId::Number(n));
        }
        assert_eq!(calls.len(), PendingCalls::LIMIT);
        calls.remember(RequestId::Number(-1));
        assert_eq!(calls.len(), 1);
        assert!(calls.forget(&RequestId::Number(-1)));
        assert!(calls.is_empty());
    }

    /// The lane's scan of an answer: a byte that is not UTF-8 anywhere in the line, a
    /// skipped key's string included, leaves the line to rmcp's decoder.
    #[test]
    fn an_answer_not_utf8_is_not_the_lanes() {
        let good: &[u8] =
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]},\"x\":\"cafe\"}";
        assert_eq!(answer_line(good).map(|answer| answer.number), Some(7));
        let bad: &[u8] =
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]},\"x\":\"caf\xe9\"}";
        assert!(answer_line(bad).is_none());
    }

    /// The id of an answer, in every spelling rmcp reads as a number (rmcp matches them to
    /// the request of that number), and none other.
    #[test]
    fn an_answers_id_is_read_as_rmcp_reads_it() {
        let cases = [
            ("7", Some(7)),
            ("\"7\"", Some(7)),
            ("7.0", Some(7)),
            ("7e0", Some(7)),
            ("1.099511627776e12", Some(1_099_511_627_776)),
            ("\"\\u0037\"", Some(7)),
            ("-3", Some(-3)),
            ("7.5", None),
            ("\"seven\"", None),
            ("null", None),
            ("[7]", None),
        ];
        for (id, number) in cases {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
            assert_eq!(
                answer_line(line.as_bytes()).map(|answer| answer.number),
                number,
                "{id}"
            );
            // rmcp reads the same id as that number, or as something else.
            let rmcps = serde_json::from_str::<RequestId>(id)
                .ok()
                .and_then(|id| match id {
                    RequestId::Number(n) => Some(n),
                    RequestId::String(text) => text.parse().ok(),
                });
            assert_eq!(rmcps, number, "rmcp, {id}");
        }
    }

    #[test]
    fn tool_result_keys() {
        let cases = [
            (r#"{"content":[]}"#, true),
            (
                r#"{"content":[],"structuredContent":null,"isError":true,"_meta":{},"resultType":"complete"}"#,
                true,
            ),
            (r#"{"structuredContent":{}}"#, false),
            (r#"{"content":[],"tools":[]}"#, false),
            (r#"{"cont\u0065nt":[]}"#, true),
            (r#"[]"#, false),
        ];
        for (json, expected) in cases {
            let raw: &RawValue = serde_json::from_str(json).expect("json");
            assert_eq!(ToolResultKeys::only(raw), expected, "{json}");
        }
    }

    /// An answer, whole, variant named (rmcp's results do not implement `PartialEq`).
    fn shown(answer: Option<Result<ServerResult, ErrorData>>) -> String {
        format!("{answer:?}")
    }

    /// The lane's decoding of an answer is rmcp's: a table of answers, each decoded both ways.
    #[test]
    fn answers_are_decoded_as_rmcp_decodes_them() {
        let results = [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[],"isError":true,"structuredContent":{"a":1},"_meta":{"k":"v"}}"#,
            r#"{}"#,
            r#"{"tools":[]}"#,
            r#"{"content":[],"tools":[]}"#,
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"contents":[{"uri":"file:///a","text":"x"}]}"#,
            r#"{"content":"not a list"}"#,
        ];
        for result in results {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1099511627776,"result":{result}}}"#);
            let rmcp = match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&line) {
                Ok(JsonRpcMessage::Response(response)) => Some(Ok(response.result)),
                Ok(JsonRpcMessage::Error(error)) => Some(Err(error.error)),
                Ok(_) | Err(_) => None,
            };
            let answer = answer_line(line.as_bytes()).expect("an answer");
            assert_eq!(shown(answer.decode()), shown(rmcp), "{line}");
            assert_eq!(answer.number, 1 << 40);
        }
        let refused = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#;
        assert_eq!(
            shown(answer_line(refused.as_bytes()).and_then(|a| a.decode())),
            shown(Some(Err(ErrorData::new(
                rmcp::model::ErrorCode(-32601),
                "nope",
                None
            ))))
        );
        let not_answers = [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":"s","result":{}}"#,
        ];
        let as_string = r#"{"jsonrpc":"2.0","id":"1099511627777","result":{"content":[]}}"#;
        let number = answer_line(as_string.as_bytes()).map(|a| a.number);
        assert_eq!(number, Some((1 << 40) + 1));
        for line in not_answers {
            assert!(answer_line(line.as_bytes()).is_none(), "{line}");
        }
    }
}
