//! [`DirectLane`]: requests a client sends on a [`LineTransport`] past rmcp's service loop,
//! and their answers, taken off the wire by the transport's reader before rmcp sees them.
//!
//! Through rmcp, a request crosses a channel to the connection's service loop, which
//! registers it, spawns a task to write it and another wake-up to reap that task, and hands
//! the answer back through a second channel. On the lane, the caller encodes the request
//! into the transport's write queue and writes it itself (coalesced with whatever else is
//! queued), and the reader, which runs inside rmcp's loop, hands the answer straight to the
//! waiting caller. Everything else on the connection (`initialize`, notifications, the
//! server's own requests, cancellations, pings) stays rmcp's.
//!
//! The lane's ids are numbers from [`FIRST_ID`] up: far above rmcp's counter (which starts at
//! 0, one per request) and within the integers a JavaScript server reads exactly. Each
//! request carries a progress token equal to its id, as rmcp gives each of its requests one.
//! A `tools/call` is encoded in one pass (`CallLine`: the JSON value rmcp would write, keys
//! in another order, without its detour through a `serde_json::Value` of the parameters);
//! any other request as rmcp does.
//! An answer is decoded as rmcp decodes it (`crate::decode::AnswerLine`, its envelope scanned
//! once); one that rmcp would
//! not accept as an answer goes to rmcp, as any such line does. When the transport ends
//! (end of input, a read error, the transport dropped), the lane closes: every request
//! waiting on it is told ([`LaneClosed`]), and it takes no more.
//!
//! [`LineTransport`]: crate::LineTransport

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, ClientRequest, ErrorData, GetMeta as _,
    JsonObject, JsonRpcMessage, MetaObject, NumberOrString, ProgressToken, RequestId,
    RequestMetaObject, ServerResult,
};
use serde::Serialize;
use tokio::sync::oneshot;

use crate::transport::Outgoing;

/// The first id the lane gives a request: 2⁴⁰.
pub const FIRST_ID: i64 = 1 << 40;

/// What a request sent on the lane was answered: its result, or the server's JSON-RPC error.
pub type Answer = Result<ServerResult, ErrorData>;

/// The connection ended before the request's answer came, or before it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneClosed;

impl std::fmt::Display for LaneClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the connection is closed")
    }
}

impl std::error::Error for LaneClosed {}

/// Why a request could not be sent on the lane.
#[derive(Debug)]
pub enum LaneSendError {
    /// The connection had ended.
    Closed,
    /// Encoding or writing the request failed (the writer is then closed for everyone).
    Io(io::Error),
}

impl std::fmt::Display for LaneSendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("the connection is closed"),
            Self::Io(error) => write!(f, "cannot send the request: {error}"),
        }
    }
}

impl std::error::Error for LaneSendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Closed => None,
            Self::Io(error) => Some(error),
        }
    }
}

/// A handle on a connection's lane; cloned freely.
#[derive(Clone)]
pub struct DirectLane {
    lane: Arc<Lane>,
}

impl std::fmt::Debug for DirectLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectLane")
            .field("waiting", &self.lane.count.load(Ordering::Relaxed))
            .finish()
    }
}

/// What the lane's handles and the transport's reader share.
pub(crate) struct Lane {
    output: Arc<dyn Outgoing>,
    next: AtomicI64,
    /// How many requests wait (read without the lock, so that a line costs nothing more when
    /// none does).
    count: AtomicUsize,
    waiting: Mutex<Waiting>,
}

struct Waiting {
    open: bool,
    /// Hashed by foldhash: looked up twice per call (SipHash cost more than the lookup).
    answers: HashMap<i64, oneshot::Sender<Answer>, foldhash::fast::RandomState>,
}

impl Lane {
    pub(crate) fn new(output: Arc<dyn Outgoing>) -> Arc<Self> {
        Arc::new(Self {
            output,
            next: AtomicI64::new(FIRST_ID),
            count: AtomicUsize::new(0),
            waiting: Mutex::new(Waiting {
                open: true,
                answers: HashMap::default(),
            }),
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hand `line` to the request it answers, if it answers one waiting on the lane: `true`
    /// when it was taken (rmcp then never sees it).
    pub(crate) fn take(&self, line: &[u8]) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let Some(line) = crate::decode::answer_line(line).filter(|a| a.number >= FIRST_ID) else {
            return false;
        };
        let number = line.number;
        if !self.waiting().answers.contains_key(&number) {
            return false;
        }
        let Some(answer) = line.decode() else {
            return false;
        };
        let sender = {
            let mut waiting = self.waiting();
            let sender = waiting.answers.remove(&number);
            self.count.store(waiting.answers.len(), Ordering::Release);
            sender
        };
        if let Some(sender) = sender {
            // The caller may have stopped waiting (cancelled, timed out): the answer is dropped.
            let _ = sender.send(answer);
        }
        true
    }

    /// The connection ended: every waiting request is told, and no more are taken.
    pub(crate) fn close(&self) {
        let answers = {
            let mut waiting = self.waiting();
            waiting.open = false;
            self.count.store(0, Ordering::Release);
            std::mem::take(&mut waiting.answers)
        };
        drop(answers);
    }

    fn forget(&self, number: i64) {
        let mut waiting = self.waiting();
        if waiting.answers.remove(&number).is_some() {
            self.count.store(waiting.answers.len(), Ordering::Release);
        }
    }
}

impl DirectLane {
    pub(crate) fn new(lane: Arc<Lane>) -> Self {
        Self { lane }
    }

    /// Queue `request` with the lane's next id and a progress token equal to it; it is on
    /// its way once [`Sent::written`] returns (or once any later write on the connection
    /// does), and its answer is [`Sent::answer`]'s.
    pub fn send(&self, request: ClientRequest) -> Result<Sent, LaneSendError> {
        let number = self.lane.next.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::Number(number);
        let progress = ProgressToken(NumberOrString::Number(number));
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiting = self.lane.waiting();
            if !waiting.open {
                return Err(LaneSendError::Closed);
            }
            waiting.answers.insert(number, sender);
            self.lane
                .count
                .store(waiting.answers.len(), Ordering::Release);
        }
        // From here on, dropping `sent` forgets the request.
        let sent = Sent {
            id: id.clone(),
            progress,
            number,
            answer: receiver,
            settled: false,
            lane: Arc::clone(&self.lane),
        };
        let queued = match request {
            ClientRequest::CallToolRequest(mut call) => {
                let params_meta = call.params.meta.take();
                self.lane.output.queue_call(&CallLine {
                    number,
                    method: &call.method,
                    params: CallParams {
                        meta: CallMeta {
                            number,
                            sources: [
                                params_meta.as_ref().map(|m| &m.0.0),
                                call.extensions.get::<MetaObject>().map(|m| &m.0),
                                call.extensions.get::<RequestMetaObject>().map(|m| &m.0.0),
                            ],
                        },
                        rest: &call.params,
                    },
                })
            }
            mut other => {
                other
                    .get_meta_mut()
                    .set_progress_token(ProgressToken(NumberOrString::Number(number)));
                self.lane
                    .output
                    .queue_request(&JsonRpcMessage::request(other, id))
            }
        };
        queued.map_err(LaneSendError::Io)?;
        Ok(sent)
    }

    /// How many requests wait for their answers.
    pub fn waiting(&self) -> usize {
        self.lane.count.load(Ordering::Acquire)
    }
}

/// A `tools/call` as the lane writes it: the JSON value rmcp writes for the same request
/// with the progress token set, but encoded in one pass. rmcp's encoding turns the
/// parameters into a `serde_json::Value` to merge their `_meta` with the request's (a map
/// and a copy of every argument per call); here the parameters are written as they are
/// (without their `_meta`) and the merged `_meta` streamed ([`CallMeta`]).
pub(crate) struct CallLine<'a> {
    number: i64,
    method: &'a CallToolRequestMethod,
    params: CallParams<'a>,
}

impl Serialize for CallLine<'_> {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = out.serialize_map(Some(4))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.number)?;
        map.serialize_entry("method", self.method)?;
        map.serialize_entry("params", &self.params)?;
        map.end()
    }
}

#[derive(Serialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta")]
    meta: CallMeta<'a>,
    /// Without its own `_meta` (taken into `meta`).
    #[serde(flatten)]
    rest: &'a CallToolRequestParams,
}

/// The merged `_meta` of a call, as rmcp merges it: the parameters' entries, the request's
/// legacy `MetaObject` extension's, its `RequestMetaObject`'s, then the progress token; each
/// key once, the later source winning.
struct CallMeta<'a> {
    number: i64,
    sources: [Option<&'a JsonObject>; 3],
}

impl Serialize for CallMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        const TOKEN: &str = "progressToken";
        let mut map = out.serialize_map(None)?;
        for (at, source) in self.sources.iter().enumerate() {
            let later = &self.sources[at + 1..];
            for (key, value) in source.iter().copied().flatten() {
                let overridden = key == TOKEN
                    || later
                        .iter()
                        .any(|source| source.is_some_and(|s| s.contains_key(key)));
                if !overridden {
                    map.serialize_entry(key, value)?;
                }
            }
        }
        map.serialize_entry(TOKEN, &self.number)?;
        map.end()
    }
}

/// A request sent on the lane. Dropped before its answer came (the caller cancelled, or
/// gave up after a timeout), it is forgotten, and a late answer is dropped.
pub struct Sent {
    /// The request's id on the wire (what a `notifications/cancelled` for it names).
    pub id: RequestId,
    /// The progress token it carries.
    pub progress: ProgressToken,
    number: i64,
    answer: oneshot::Receiver<Answer>,
    /// The answer (or the lane's end) came: nothing is left to forget.
    settled: bool,
    lane: Arc<Lane>,
}

impl Sent {
    /// Once the request is written (with whatever else was queued). Safe to drop: the
    /// bytes stay queued, whole, for the next write.
    pub async fn written(&self) -> Result<(), LaneSendError> {
        crate::transport::flush_soon(&*self.lane.output)
            .await
            .map_err(LaneSendError::Io)
    }

    /// The server's answer; [`LaneClosed`] when the connection ended first.
    pub async fn answer(&mut self) -> Result<Answer, LaneClosed> {
        let answer = (&mut self.answer).await.map_err(|_| LaneClosed);
        self.settled = true;
        answer
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        if !self.settled {
            self.lane.forget(self.number);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use pretty_assertions::assert_eq;
    use rmcp::model::{CallToolRequest, ListToolsRequest, PaginatedRequestParams};
    use serde_json::{Value, json};

    use super::*;

    /// The lines queued, one JSON value each.
    #[derive(Default)]
    struct Captured(Mutex<Vec<u8>>);

    impl Outgoing for Captured {
        fn queue_request(&self, message: &rmcp::model::ClientJsonRpcMessage) -> io::Result<()> {
            let mut bytes = self.0.lock().expect("lock");
            serde_json::to_writer(&mut *bytes, message)?;
            bytes.push(b'\n');
            Ok(())
        }

        fn queue_answer(&self, _: &rmcp::model::ServerJsonRpcMessage) -> io::Result<()> {
            unreachable!("a lane only sends requests")
        }

        fn queue_call(&self, call: &CallLine<'_>) -> io::Result<()> {
            let mut bytes = self.0.lock().expect("lock");
            serde_json::to_writer(&mut *bytes, call)?;
            bytes.push(b'\n');
            Ok(())
        }

        fn flush_queued(
            &self,
            _: bool,
        ) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
            Box::pin(std::future::ready(Ok(())))
        }

        fn flush_now(&self) -> crate::transport::FlushNow {
            crate::transport::FlushNow::Wait { taken: false }
        }
    }

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn call(
        arguments: Option<Value>,
        params_meta: Option<Value>,
        request_meta: Option<Value>,
        state: Option<&str>,
    ) -> ClientRequest {
        call_with_legacy(arguments, params_meta, request_meta, state, None)
    }

    fn call_with_legacy(
        arguments: Option<Value>,
        params_meta: Option<Value>,
        request_meta: Option<Value>,
        state: Option<&str>,
        legacy_meta: Option<Value>,
    ) -> ClientRequest {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = arguments.map(object);
        params.meta = params_meta.map(|m| RequestMetaObject(MetaObject(object(m))));
        params.request_state = state.map(str::to_owned);
        let mut request = CallToolRequest::new(params);
        if let Some(meta) = request_meta {
            request
                .extensions
                .insert(RequestMetaObject(MetaObject(object(meta))));
        }
        if let Some(meta) = legacy_meta {
            request.extensions.insert(MetaObject(object(meta)));
        }
        ClientRequest::CallToolRequest(request)
    }

    /// What rmcp writes for `request` sent with id and progress token `number`.
    fn rmcp_line(mut request: ClientRequest, number: i64) -> Value {
        request
            .get_meta_mut()
            .set_progress_token(ProgressToken(NumberOrString::Number(number)));
        let message: rmcp::model::ClientJsonRpcMessage =
            JsonRpcMessage::request(request, RequestId::Number(number));
        serde_json::to_value(message).expect("rmcp encodes it")
    }

    /// A `tools/call` goes out as rmcp would write it, whatever `_meta` the parameters and
    /// the request carry (the request's entries win, the progress token wins over both);
    /// any other request goes through rmcp's own encoding.
    #[test]
    fn a_call_is_written_as_rmcp_writes_it() {
        let cases = [
            call(Some(json!({"text": "hello"})), None, None, None),
            call(None, None, None, None),
            call(
                Some(json!({"n": [1, 2.5, null, {"deep": "é\n\""}]})),
                Some(json!({"a": 1, "progressToken": "theirs", "k": "params"})),
                None,
                Some("opaque"),
            ),
            call(
                Some(json!({})),
                None,
                Some(
                    json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "progressToken": 7}),
                ),
                None,
            ),
            call(
                Some(json!({"x": true})),
                Some(json!({"k": "params", "only": "params"})),
                Some(json!({"k": "request", "also": "request"})),
                None,
            ),
            call_with_legacy(
                None,
                Some(json!({"k": "params", "p": 1, "l": "params"})),
                Some(json!({"k": "request", "r": 2})),
                None,
                Some(json!({"k": "legacy", "l": "legacy", "progressToken": "old"})),
            ),
            call_with_legacy(None, None, None, None, Some(json!({"only": "legacy"}))),
            ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
                PaginatedRequestParams::default(),
            )),
        ];
        let captured = Arc::new(Captured::default());
        let lane = DirectLane::new(Lane::new(captured.clone()));
        let mut sent = Vec::new();
        for request in cases.iter().cloned() {
            sent.push(lane.send(request).expect("sent"));
        }
        let bytes = captured.0.lock().expect("lock").clone();
        let written: Vec<Value> = bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                let value: Value = serde_json::from_slice(line).expect("a JSON line");
                // Written again compactly, a line is as long unless a key was written twice
                // (parsing keeps the last).
                let again = serde_json::to_vec(&value).expect("encode");
                assert_eq!(again.len(), line.len(), "no key twice: {value}");
                value
            })
            .collect();
        let expected: Vec<Value> = cases
            .into_iter()
            .zip(FIRST_ID..)
            .map(|(request, number)| rmcp_line(request, number))
            .collect();
        assert_eq!(written, expected);
        assert_eq!(
            written[3]["params"]["_meta"],
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "progressToken": FIRST_ID + 3})
        );
    }
}
