//! One message of a line, decoded as rmcp decodes it, in one pass where the message is a
//! `tools/call` or the answer to one.
//!
//! rmcp decodes a message as an untagged enum: the whole line is buffered, then every kind of
//! message is tried, and inside a request every request type in turn until one accepts it
//! (`tools/call` is the fourteenth); an answer is tried against every result type (a tool's
//! result is the sixteenth). Each miss builds an error. Here a borrowed scan of the envelope
//! (`jsonrpc`, `id`, `method`, `result`, `error`, each kept as its raw text) says what the
//! message is, and a `tools/call` request or the answer to one is decoded as that type
//! directly. Anything else, and anything the fast path is not certain of (an escaped
//! method name, a duplicate key, a result with a key a tool result does not have, a decode
//! that fails), is decoded by rmcp's own decoder: the fast path never decides a message
//! differently, it only skips the tries that could not match (the tests compare both on a
//! table of messages).

use std::collections::HashSet;

use rmcp::model::{
    CallToolRequest, CallToolResult, ClientRequest, JsonRpcMessage, JsonRpcRequest,
    JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::{RoleClient, RoleServer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;

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
}

impl Side for RoleServer {
    fn decode_fast(line: &[u8], _calls: &mut PendingCalls) -> Option<RxJsonRpcMessage<Self>> {
        if !Envelope::of(line)?.is_tool_call() {
            return None;
        }
        let request: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(line).ok()?;
        Some(JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc: request.jsonrpc,
            id: request.id,
            request: ClientRequest::CallToolRequest(request.request),
        }))
    }

    fn sent(_message: &TxJsonRpcMessage<Self>, _calls: &mut PendingCalls) {}
}

impl Side for RoleClient {
    fn decode_fast(line: &[u8], calls: &mut PendingCalls) -> Option<RxJsonRpcMessage<Self>> {
        let envelope = Envelope::of(line)?;
        if envelope.method.present() || calls.is_empty() {
            return None;
        }
        let id: RequestId = serde_json::from_str(envelope.id.0?.get()).ok()?;
        // An answer or an error ends the wait either way.
        if !calls.forget(&id) {
            return None;
        }
        let result = envelope.result.0?;
        if envelope.error.present()
            || !envelope.jsonrpc.is("\"2.0\"")
            || !ToolResultKeys::only(result)
        {
            return None;
        }
        let result: CallToolResult = serde_json::from_str(result.get()).ok()?;
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

impl<'a> Envelope<'a> {
    fn of(line: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(line).ok()
    }

    /// A `tools/call` request, as rmcp tells the kinds apart (a method and an id, neither a
    /// result nor an error).
    fn is_tool_call(&self) -> bool {
        let request = self.id.present() && !self.result.present() && !self.error.present();
        request && self.method.is("\"tools/call\"")
    }
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
}
