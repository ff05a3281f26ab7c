//! A fake LLM provider: an in-process HTTP server on `127.0.0.1:0` that
//! speaks OpenAI chat completions streaming (`POST /v1/chat/completions`)
//! and Anthropic Messages streaming (`POST /v1/messages`) byte for byte as
//! the providers document them.
//!
//! Each test scripts a queue of [`FakeReply`]s (text, tool calls with their
//! arguments split across deltas, an HTTP error, or a hang); each request
//! takes the next reply, whatever its wire format. Every request is recorded
//! ([`FakeLlm::requests`]); tests wait on readiness signals
//! ([`FakeLlm::wait_for_requests`], [`FakeLlm::wait_for_disconnects`]),
//! never on fixed waits, and can hold a request's reply until they have acted
//! ([`FakeLlm::hold_from`], [`FakeLlm::release`]). Each SSE frame is written
//! in two pieces, so clients see lines split across reads.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use futures::stream;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The send buffer of each connection the fake accepts.
const SEND_BUFFER_BYTES: usize = 64 * 1024;

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// A tool call the fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    pub id: String,
    pub name: String,
    /// The arguments JSON, in the fragments the model streams.
    pub argument_chunks: Vec<String>,
}

impl FakeToolCall {
    pub fn new<I, S>(id: &str, name: &str, argument_chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            argument_chunks: argument_chunks.into_iter().map(Into::into).collect(),
        }
    }
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeReply {
    /// A streamed step: text deltas, then tool calls; then a finish unless
    /// `hang` (the stream then stays open and silent).
    Stream {
        text: Vec<String>,
        /// The text chunks are streamed this many times over (made as they are sent, so a
        /// long answer costs the fake no memory).
        rounds: usize,
        tool_calls: Vec<FakeToolCall>,
        input_tokens: u64,
        output_tokens: u64,
        hang: bool,
    },
    /// A non-2xx answer with this body.
    HttpError { status: u16, body: String },
}

impl FakeReply {
    /// A text answer streamed in these chunks.
    pub fn text<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Stream {
            text: chunks.into_iter().map(Into::into).collect(),
            rounds: 1,
            tool_calls: Vec::new(),
            input_tokens: 10,
            output_tokens: 5,
            hang: false,
        }
    }

    /// A step that calls these tools.
    pub fn tool_calls(calls: impl IntoIterator<Item = FakeToolCall>) -> Self {
        Self::Stream {
            text: Vec::new(),
            rounds: 1,
            tool_calls: calls.into_iter().collect(),
            input_tokens: 10,
            output_tokens: 5,
            hang: false,
        }
    }

    /// A stream that sends nothing after its headers.
    pub fn hang() -> Self {
        Self::text(Vec::<String>::new()).then_hang()
    }

    pub fn http_error(status: u16, body: impl Into<String>) -> Self {
        Self::HttpError {
            status,
            body: body.into(),
        }
    }

    /// Text before the tool calls of a stream reply.
    pub fn with_text<I, S>(mut self, chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Self::Stream { text, .. } = &mut self {
            *text = chunks.into_iter().map(Into::into).collect();
        }
        self
    }

    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        if let Self::Stream {
            input_tokens,
            output_tokens,
            ..
        } = &mut self
        {
            *input_tokens = input;
            *output_tokens = output;
        }
        self
    }

    /// Stream the text chunks `rounds` times over (a long answer: 8 MB is a chunk of 8 KB,
    /// 1,000 rounds).
    pub fn repeated(mut self, times: usize) -> Self {
        if let Self::Stream { rounds, .. } = &mut self {
            *rounds = times;
        }
        self
    }

    /// Stream what is scripted, then stay open without finishing.
    pub fn then_hang(mut self) -> Self {
        if let Self::Stream { hang, .. } = &mut self {
            *hang = true;
        }
        self
    }
}

/// A request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub wire: Wire,
    pub path: String,
    /// `authorization`, `x-api-key` and `anthropic-version`, when present.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<FakeReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    disconnects: Mutex<usize>,
    changed: Notify,
    /// Requests from this number on (counted from 1) wait for [`FakeLlm::release`] before
    /// taking their reply; `usize::MAX` is none.
    held_from: Mutex<usize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running fake. The server stops when this is dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeLlm {
    /// Starts the server with these replies queued.
    pub async fn start(replies: impl IntoIterator<Item = FakeReply>) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            held_from: Mutex::new(usize::MAX),
            ..Shared::default()
        });
        lock(&shared.replies).extend(replies);
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .route("/v1/messages", post(handle))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // A fixed send buffer, as a server far away has in effect: a long answer waits in
        // the fake, not in kernel buffers, when its client stops reading.
        let listener = listener.tap_io(|stream| {
            let _ = socket2::SockRef::from(&*stream).set_send_buffer_size(SEND_BUFFER_BYTES);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            addr,
            shared,
            server,
        })
    }

    /// The base URL an OpenAI client takes (`…/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL an Anthropic client takes (no `/v1`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues more replies.
    pub fn push(&self, reply: FakeReply) {
        lock(&self.shared.replies).push_back(reply);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Replies not taken yet.
    pub fn remaining_replies(&self) -> usize {
        lock(&self.shared.replies).len()
    }

    /// Requests from the `nth` on (counted from 1) are recorded but wait for
    /// [`FakeLlm::release`] before taking their reply: a test acts between two steps of a
    /// turn (after [`FakeLlm::wait_for_requests`]`(nth)`), with no race.
    pub fn hold_from(&self, nth: usize) {
        *lock(&self.shared.held_from) = nth;
    }

    /// Held requests take their replies, and no more are held.
    pub fn release(&self) {
        *lock(&self.shared.held_from) = usize::MAX;
        self.shared.changed.notify_waiters();
    }

    /// Waits until at least `count` requests arrived.
    pub async fn wait_for_requests(&self, count: usize) {
        self.wait_until(|shared| lock(&shared.requests).len() >= count)
            .await;
    }

    /// Waits until at least `count` streamed responses were dropped before
    /// they finished (the client went away).
    pub async fn wait_for_disconnects(&self, count: usize) {
        self.wait_until(|shared| *lock(&shared.disconnects) >= count)
            .await;
    }

    async fn wait_until(&self, done: impl Fn(&Shared) -> bool) {
        loop {
            let changed = self.shared.changed.notified();
            if done(&self.shared) {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let wire = if uri.path().ends_with("/chat/completions") {
        Wire::OpenAi
    } else {
        Wire::Anthropic
    };
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_owned();
    let recorded_headers = ["authorization", "x-api-key", "anthropic-version"]
        .into_iter()
        .filter_map(|name| {
            let value = headers.get(name)?.to_str().ok()?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect();
    let index = {
        let mut requests = lock(&shared.requests);
        requests.push(RecordedRequest {
            wire,
            path: uri.path().to_owned(),
            headers: recorded_headers,
            body,
        });
        requests.len()
    };
    shared.changed.notify_waiters();
    loop {
        let released = shared.changed.notified();
        if index < *lock(&shared.held_from) {
            break;
        }
        released.await;
    }
    let reply = lock(&shared.replies).pop_front();
    match reply {
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "fake LLM: no scripted reply left",
        )
            .into_response(),
        Some(FakeReply::HttpError { status, body }) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Some(FakeReply::Stream {
            text,
            rounds,
            tool_calls,
            input_tokens,
            output_tokens,
            hang,
        }) => {
            let script = Script {
                id: index,
                model,
                text,
                rounds,
                tool_calls,
                input_tokens,
                output_tokens,
                hang,
            };
            let frames = match wire {
                Wire::OpenAi => openai_frames(&script),
                Wire::Anthropic => anthropic_frames(&script),
            };
            stream_response(frames, hang, shared)
        }
    }
}

struct Script {
    id: usize,
    model: String,
    text: Vec<String>,
    rounds: usize,
    tool_calls: Vec<FakeToolCall>,
    input_tokens: u64,
    output_tokens: u64,
    hang: bool,
}

/// Counts a disconnect when the body is dropped before its end.
struct DisconnectGuard {
    shared: Arc<Shared>,
    finished: bool,
}

impl DisconnectGuard {
    fn complete(&mut self) {
        self.finished = true;
    }
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.finished {
            *lock(&self.shared.disconnects) += 1;
            self.shared.changed.notify_waiters();
        }
    }
}

/// A reply's frames: `head`, then `text` `rounds` times over, then `tail`.
struct Frames {
    head: Vec<String>,
    text: Vec<String>,
    rounds: usize,
    tail: Vec<String>,
}

impl Frames {
    /// Every frame in order, made as it is taken.
    fn into_iter(self) -> impl Iterator<Item = String> + Send {
        let Self {
            head,
            text,
            rounds,
            tail,
        } = self;
        let text = std::iter::repeat_n(text, rounds).flatten();
        head.into_iter().chain(text).chain(tail)
    }
}

fn stream_response(frames: Frames, hang: bool, shared: Arc<Shared>) -> Response {
    // Each frame goes out in two writes, cut mid-line.
    let pieces = frames.into_iter().flat_map(|frame| {
        let mut cut = frame.len() / 2;
        while !frame.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = frame.split_at(cut);
        [head.to_owned(), tail.to_owned()]
    });
    let guard = DisconnectGuard {
        shared,
        finished: false,
    };
    let body = stream::unfold((pieces, guard), move |(mut pieces, mut guard)| async move {
        match pieces.next() {
            Some(piece) => Some((Ok::<_, Infallible>(piece), (pieces, guard))),
            None if hang => std::future::pending().await,
            None => {
                guard.complete();
                None
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn data(json: &Value) -> String {
    format!("data: {json}\n\n")
}

fn openai_chunk(script: &Script, delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": format!("chatcmpl-fake{}", script.id),
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": script.model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null,
    })
}

fn openai_frames(script: &Script) -> Frames {
    let head = vec![data(&openai_chunk(
        script,
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    ))];
    let text = script
        .text
        .iter()
        .map(|text| data(&openai_chunk(script, json!({"content": text}), Value::Null)))
        .collect();
    let mut frames = Vec::new();
    let done = |tail| Frames {
        head,
        text,
        rounds: script.rounds,
        tail,
    };
    for (index, call) in script.tool_calls.iter().enumerate() {
        frames.push(data(&openai_chunk(
            script,
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        )));
        for fragment in &call.argument_chunks {
            frames.push(data(&openai_chunk(
                script,
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            )));
        }
    }
    if script.hang {
        return done(frames);
    }
    let reason = if script.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    frames.push(data(&openai_chunk(script, json!({}), json!(reason))));
    let mut usage = openai_chunk(script, json!({}), Value::Null);
    usage["choices"] = json!([]);
    usage["usage"] = json!({
        "prompt_tokens": script.input_tokens,
        "completion_tokens": script.output_tokens,
        "total_tokens": script.input_tokens + script.output_tokens,
    });
    frames.push(data(&usage));
    frames.push("data: [DONE]\n\n".to_owned());
    done(frames)
}

fn event(name: &str, json: &Value) -> String {
    format!("event: {name}\ndata: {json}\n\n")
}

fn anthropic_frames(script: &Script) -> Frames {
    let mut head = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_fake{}", script.id), "type": "message", "role": "assistant",
            "content": [], "model": script.model, "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": script.input_tokens, "output_tokens": 1},
        }}),
    )];
    let mut index = 0;
    let mut text = Vec::new();
    let mut frames = Vec::new();
    if !script.text.is_empty() {
        head.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
        ));
        head.push(event("ping", &json!({"type": "ping"})));
        for chunk in &script.text {
            text.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": chunk}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &script.tool_calls {
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        ));
        frames.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ));
        for fragment in &call.argument_chunks {
            frames.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let done = |tail| Frames {
        head,
        text,
        rounds: script.rounds,
        tail,
    };
    if script.hang {
        return done(frames);
    }
    let reason = if script.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    frames.push(event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": script.output_tokens}}),
    ));
    frames.push(event("message_stop", &json!({"type": "message_stop"})));
    done(frames)
}
