//! `LineTransport` against rmcp's own `AsyncRwTransport`: the same script of lines, the same
//! answers; writes coalesced; an rmcp client over it.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use mcp_wire::LineTransport;
use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, JsonRpcMessage, RequestId, ServerResult};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleClient, RoleServer, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, ReadBuf};

use super::echo::Echo;

#[derive(Clone, Copy, Debug)]
enum Framing {
    Ours,
    /// Ours, with `tools/call` served past rmcp's loop once initialized.
    Direct,
    Rmcp,
}

fn call(id: &str, text: &str) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": text}}})
    )
}

/// What an echo server over `framing` answers to each entry of `script`, answers of one
/// entry sorted by id.
async fn transcript(framing: Framing, max_line: usize, script: &[Vec<u8>]) -> Vec<Vec<Value>> {
    transcript_served(framing, max_line, script).await.0
}

/// [`transcript`], and how many calls were served past rmcp's loop.
async fn transcript_served(
    framing: Framing,
    max_line: usize,
    script: &[Vec<u8>],
) -> (Vec<Vec<Value>>, u64) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let served = Arc::new(Mutex::new(None::<mcp_wire::DirectServing>));
    let served_directly = Arc::clone(&served);
    let serving = tokio::spawn(async move {
        let served = match framing {
            Framing::Ours => {
                Echo.serve(
                    LineTransport::<RoleServer, _, _>::new(server_read, server_write)
                        .with_max_line_length(max_line),
                )
                .await
            }
            Framing::Direct => {
                let mut transport =
                    LineTransport::<RoleServer, _, _>::new(server_read, server_write)
                        .with_max_line_length(max_line);
                let direct = transport.direct_serving();
                let served = Echo.serve(transport).await;
                if let Ok(running) = &served {
                    direct.install(Echo, running.peer().clone());
                }
                *served_directly.lock().expect("lock") = Some(direct);
                served
            }
            Framing::Rmcp => {
                Echo.serve(
                    AsyncRwTransport::new_server(server_read, server_write)
                        .with_max_line_length(max_line),
                )
                .await
            }
        };
        if let Ok(running) = served {
            let _ = running.waiting().await;
        }
    });
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    write
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .expect("write");
    let answer = lines.next_line().await.expect("read").expect("an answer");
    let mut all = vec![vec![serde_json::from_str(&answer).expect("json")]];
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("write");
    for (n, entry) in script.iter().enumerate() {
        write.write_all(entry).await.expect("write");
        let sentinel = format!("sentinel-{n}");
        let ping = json!({"jsonrpc": "2.0", "id": sentinel, "method": "ping"});
        write
            .write_all(format!("{ping}\n").as_bytes())
            .await
            .expect("write");
        let mut answers: Vec<Value> = Vec::new();
        loop {
            let line = lines.next_line().await.expect("read").expect("an answer");
            let value: Value = serde_json::from_str(&line).expect("json");
            if value["id"] == json!(sentinel) {
                break;
            }
            answers.push(value);
        }
        answers.sort_by_key(|answer| answer["id"].to_string());
        all.push(answers);
    }
    write.shutdown().await.expect("input closed");
    serving.await.expect("the server ends when its input does");
    let directly = served
        .lock()
        .expect("lock")
        .as_ref()
        .map_or(0, mcp_wire::DirectServing::served);
    (all, directly)
}

fn one(line: impl Into<Vec<u8>>) -> Vec<u8> {
    line.into()
}

#[tokio::test]
async fn the_same_script_gets_the_same_answers_as_over_rmcps_transport() {
    let pipelined: String = (0..50)
        .map(|n| call(&format!("p{n:02}"), &n.to_string()))
        .collect();
    let script = vec![
        one(call("plain", "hi")),
        one(call("crlf", "carriage").replace('\n', "\r\n")),
        one(format!("\u{feff}{}", call("bom", "marked"))),
        one("\n\r\n"),
        one("not json at all\n"),
        one("{\"jsonrpc\":\"2.0\",\"id\":5}\n"),
        one("{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{}}\n"),
        one(call("long", &"x".repeat(5000))),
        one(pipelined),
        one(
            "{\"jsonrpc\":\"2.0\",\"id\":\"esc\",\"method\":\"tools\\/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"escaped\"}}}\n",
        ),
        one("{\"jsonrpc\":\"2.0\",\"id\":\"unknown\",\"method\":\"foo/bar\"}\n"),
        one(
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n",
        ),
        one(call("after", "still here")),
    ];
    let ours = transcript(Framing::Ours, 4096, &script).await;
    let theirs = transcript(Framing::Rmcp, 4096, &script).await;
    assert_eq!(ours, theirs);
    let (direct, served_directly) = transcript_served(Framing::Direct, 4096, &script).await;
    assert_eq!(direct, theirs);
    // Every call that reached a handler was served past rmcp's loop: the 50 pipelined, the
    // plain, CRLF, marked, escaped and last ones (the long one is over this run's limit).
    assert_eq!(served_directly, 55);

    // And what that is, so that both breaking the same way fails too.
    let texts = |answers: &[Value]| -> Vec<String> {
        answers
            .iter()
            .map(
                |answer| match answer["result"]["content"][0]["text"].as_str() {
                    Some(text) => text.to_owned(),
                    None => format!("error {}", answer["error"]["code"]),
                },
            )
            .collect()
    };
    let counts: Vec<usize> = ours.iter().map(Vec::len).collect();
    assert_eq!(counts, [1, 1, 1, 1, 0, 0, 1, 0, 0, 50, 1, 1, 1, 1]);
    assert_eq!(texts(&ours[1]), ["hi"]);
    assert_eq!(texts(&ours[2]), ["carriage"]);
    assert_eq!(texts(&ours[3]), ["marked"]);
    assert_eq!(ours[6][0]["error"]["message"], "Invalid request");
    assert_eq!(ours[6][0]["id"], Value::Null);
    let pipelined: Vec<String> = (0..50).map(|n| n.to_string()).collect();
    assert_eq!(texts(&ours[9]), pipelined);
    assert_eq!(texts(&ours[10]), ["escaped"]);
    assert_eq!(texts(&ours[13]), ["still here"]);
}

#[tokio::test]
async fn a_line_larger_than_the_read_buffer_is_read_whole() {
    let big = "é".repeat(300_000);
    let script = vec![one(call("big", &big)), one(call("next", "small"))];
    let ours = transcript(Framing::Ours, mcp_wire::DEFAULT_MAX_LINE_LENGTH, &script).await;
    assert_eq!(ours[1][0]["result"]["content"][0]["text"], json!(big));
    assert_eq!(ours[2][0]["result"]["content"][0]["text"], "small");
    let theirs = transcript(Framing::Rmcp, mcp_wire::DEFAULT_MAX_LINE_LENGTH, &script).await;
    assert_eq!(ours, theirs);
}

/// A writer that records its writes, or fails every one (`broken`).
#[derive(Clone, Default)]
struct Recorder {
    broken: bool,
    writes: Arc<AtomicUsize>,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl AsyncWrite for Recorder {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.broken {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.bytes.lock().expect("lock").extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A reader that hands out one chunk per read, as a pipe does when its writer is slow.
struct Chunked(std::collections::VecDeque<Vec<u8>>);

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(chunk) = self.0.pop_front() {
            buf.put_slice(&chunk);
        }
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_line_split_across_reads_is_one_message() {
    let first = call("split", "in two parts");
    let second = call("next", "whole");
    let (head, tail) = first.as_bytes().split_at(20);
    let reader = Chunked(
        [head.to_vec(), [tail, second.as_bytes()].concat()]
            .into_iter()
            .collect(),
    );
    let mut transport = LineTransport::<RoleServer, _, _>::new(reader, Recorder::default());
    let mut ids = Vec::new();
    while let Some(message) = transport.receive().await {
        ids.push(serde_json::to_value(&message).expect("json")["id"].clone());
    }
    assert_eq!(ids, [json!("split"), json!("next")]);
}

#[tokio::test]
async fn messages_sent_together_go_out_in_one_write_in_order() {
    let writer = Recorder::default();
    let mut transport = LineTransport::<RoleServer, _, _>::new(tokio::io::empty(), writer.clone());
    let mut sends = Vec::new();
    for n in 0..10 {
        sends.push(transport.send(JsonRpcMessage::response(
            ServerResult::empty(()),
            RequestId::Number(n),
        )));
    }
    for send in sends {
        send.await.expect("sent");
    }
    assert_eq!(writer.writes.load(Ordering::SeqCst), 1);
    let written = String::from_utf8(writer.bytes.lock().expect("lock").clone()).expect("utf-8");
    let ids: Vec<Value> = written
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("json")["id"].clone())
        .collect();
    assert_eq!(ids, (0..10).map(|n| json!(n)).collect::<Vec<_>>());

    transport.close().await.expect("closed");
    let after = transport
        .send(JsonRpcMessage::response(
            ServerResult::empty(()),
            RequestId::Number(10),
        ))
        .await
        .expect_err("a closed transport sends nothing");
    assert_eq!(after.kind(), std::io::ErrorKind::NotConnected);
}

#[tokio::test]
async fn every_send_of_a_failed_write_fails() {
    let mut transport = LineTransport::<RoleServer, _, _>::new(
        tokio::io::empty(),
        Recorder {
            broken: true,
            ..Recorder::default()
        },
    );
    let mut sends = Vec::new();
    for n in 0..3 {
        sends.push(transport.send(JsonRpcMessage::response(
            ServerResult::empty(()),
            RequestId::Number(n),
        )));
    }
    let mut kinds = Vec::new();
    for send in sends {
        kinds.push(send.await.map_err(|error| error.kind()));
    }
    assert_eq!(
        kinds,
        [
            Err(std::io::ErrorKind::BrokenPipe),
            Err(std::io::ErrorKind::NotConnected),
            Err(std::io::ErrorKind::NotConnected),
        ]
    );
}

#[tokio::test]
async fn a_peer_that_does_not_read_cannot_grow_the_queue() {
    let mut transport =
        LineTransport::<RoleServer, _, _>::new(tokio::io::empty(), Recorder::default())
            .with_max_queued(100);
    let message = |n: i64| JsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(n));
    // Queued, not yet written (no send has been awaited): 40-odd bytes each.
    let first = transport.send(message(1));
    let second = transport.send(message(2));
    let refused = transport
        .send(message(3))
        .await
        .expect_err("over the limit");
    assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
    first.await.expect("sent");
    second.await.expect("sent");
    // Written, the queue is empty again, and one message of any size is taken.
    let big = JsonRpcMessage::response(
        ServerResult::CallToolResult(rmcp::model::CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("x".repeat(1000)),
        ])),
        RequestId::Number(4),
    );
    transport.send(big).await.expect("one message always goes");
}

#[tokio::test]
async fn an_rmcp_client_over_it_calls_tools_concurrently() {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        if let Ok(running) = Echo
            .serve(AsyncRwTransport::new_server(server_read, server_write))
            .await
        {
            let _ = running.waiting().await;
        }
    });
    let (read, write) = tokio::io::split(client_io);
    let client =
        ().serve(LineTransport::<RoleClient, _, _>::new(read, write))
            .await
            .expect("initialized");
    let calls = (0..50).map(|n| {
        let peer = client.peer().clone();
        tokio::spawn(async move {
            let mut arguments = serde_json::Map::new();
            arguments.insert("text".into(), json!(format!("call {n}")));
            let result = peer
                .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
                .await
                .expect("answered");
            serde_json::to_value(&result.content).expect("json")[0]["text"].clone()
        })
    });
    let calls: Vec<_> = calls.collect();
    let mut texts = Vec::new();
    for call in calls {
        texts.push(call.await.expect("joined"));
    }
    let expected: Vec<Value> = (0..50).map(|n| json!(format!("call {n}"))).collect();
    assert_eq!(texts, expected);
    client.cancel().await.expect("closed");
}

/// A writer that takes at most 10 bytes a write and is not ready every other time, as a
/// pipe whose reader is slow.
#[derive(Clone, Default)]
struct Trickle {
    ready: Arc<std::sync::atomic::AtomicBool>,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl AsyncWrite for Trickle {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if !self.ready.swap(false, Ordering::SeqCst) {
            self.ready.store(true, Ordering::SeqCst);
            context.waker().wake_by_ref();
            return Poll::Pending;
        }
        let taken = buf.len().min(10);
        self.bytes
            .lock()
            .expect("lock")
            .extend_from_slice(&buf[..taken]);
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_send_dropped_halfway_leaves_its_message_whole_for_the_next_write() {
    let writer = Trickle::default();
    let mut transport = LineTransport::<RoleServer, _, _>::new(tokio::io::empty(), writer.clone());
    let message = |n: i64| {
        JsonRpcMessage::response(
            ServerResult::empty(()),
            RequestId::String(format!("request number {n}").into()),
        )
    };
    let mut first = Box::pin(transport.send(message(1)));
    for _ in 0..3 {
        assert!(futures::poll!(first.as_mut()).is_pending());
    }
    let cut = writer.bytes.lock().expect("lock").len();
    assert!(cut > 0, "the first message was partly written");
    drop(first);
    transport.send(message(2)).await.expect("sent");
    let written = String::from_utf8(writer.bytes.lock().expect("lock").clone()).expect("utf-8");
    let ids: Vec<Value> = written
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("whole lines")["id"].clone())
        .collect();
    assert_eq!(ids, [json!("request number 1"), json!("request number 2")]);
}

#[tokio::test(start_paused = true)]
async fn closing_gives_up_on_a_peer_that_reads_nothing() {
    // The peer holds its end open and never reads: 64 bytes fit, the answer does not.
    let (ours, _peer) = tokio::io::duplex(64);
    let (read, write) = tokio::io::split(ours);
    let mut transport = LineTransport::<RoleServer, _, _>::new(read, write);
    let big = JsonRpcMessage::response(
        ServerResult::CallToolResult(rmcp::model::CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("x".repeat(1000)),
        ])),
        RequestId::Number(1),
    );
    // Queued; its write waits for the peer (the send's future is not awaited).
    drop(transport.send(big));
    let started = tokio::time::Instant::now();
    let closed = transport
        .close()
        .await
        .expect_err("nothing could be written");
    assert_eq!(closed.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(5));
}
