//! The direct lane: requests past rmcp's service loop on a connection rmcp also uses.

use mcp_wire::lane::Answer;
use mcp_wire::{DirectLane, LaneClosed, LaneSendError, LineTransport};
use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ErrorCode, ErrorData, ServerResult,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{RoleServer, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

use super::echo::Echo;

fn echo_call(text: &str) -> ClientRequest {
    let arguments = json!({ "text": text });
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("echo")
            .with_arguments(arguments.as_object().cloned().expect("an object")),
    ))
}

/// What a client decodes of the echo server's answer with `text`.
fn echoed(text: &str) -> ServerResult {
    decoded(json!({"content": [{"type": "text", "text": text}], "isError": false}))
}

/// A result as rmcp decodes it off the wire.
fn decoded(result: Value) -> ServerResult {
    serde_json::from_value(result).expect("a result")
}

#[tokio::test]
async fn the_lane_and_rmcp_share_one_connection() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move {
        let running = Echo
            .serve(LineTransport::<RoleServer, _, _>::new(
                server_read,
                server_write,
            ))
            .await
            .expect("the server starts");
        let _ = running.waiting().await;
    });
    let (read, write) = tokio::io::split(client_end);
    let mut transport = LineTransport::<RoleClient, _, _>::new(read, write);
    let lane = transport.direct_lane();
    let client = ().serve(transport).await.expect("initialize");

    let on_lane = (0..40).map(|n| {
        let lane = lane.clone();
        async move {
            let mut sent = lane.send(echo_call(&format!("lane {n}"))).expect("queued");
            sent.written().await.expect("written");
            sent.answer().await.expect("answered")
        }
    });
    let through_rmcp = (0..40).map(|n| {
        let peer = client.peer().clone();
        async move {
            let arguments = json!({ "text": format!("rmcp {n}") });
            peer.call_tool(
                CallToolRequestParams::new("echo")
                    .with_arguments(arguments.as_object().cloned().expect("an object")),
            )
            .await
            .expect("answered")
        }
    });
    let (lane_answers, rmcp_answers) = tokio::join!(
        futures::future::join_all(on_lane),
        futures::future::join_all(through_rmcp)
    );
    let expected_lane: Vec<_> = (0..40)
        .map(|n| shown(Ok(Ok(echoed(&format!("lane {n}"))))))
        .collect();
    let lane_answers: Vec<_> = lane_answers.into_iter().map(|a| shown(Ok(a))).collect();
    assert_eq!(lane_answers, expected_lane);
    let expected_rmcp: Vec<_> = (0..40)
        .map(|n| format!("{:?}", echoed(&format!("rmcp {n}"))))
        .collect();
    let rmcp_answers: Vec<_> = rmcp_answers
        .into_iter()
        .map(|answer| format!("{:?}", ServerResult::CallToolResult(answer)))
        .collect();
    assert_eq!(rmcp_answers, expected_rmcp);
    assert_eq!(lane.waiting(), 0);

    client.cancel().await.expect("closed");
    serving.await.expect("the server ends with its input");
}

/// An answer, whole, variant named (rmcp's results do not implement `PartialEq`).
fn shown(answer: Result<Answer, LaneClosed>) -> String {
    format!("{answer:?}")
}

/// A server played by the test, line by line, behind an rmcp client with a lane.
struct Scripted {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    client: RunningService<RoleClient, ()>,
    lane: DirectLane,
}

impl Scripted {
    async fn start() -> Self {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(client_end);
        let mut transport = LineTransport::<RoleClient, _, _>::new(read, write);
        let lane = transport.direct_lane();
        let (server_read, mut write) = tokio::io::split(server_end);
        let mut lines = BufReader::new(server_read).lines();
        let (client, ()) = tokio::join!(().serve(transport), async {
            let initialize = read_message(&mut lines).await;
            assert_eq!(initialize["method"], "initialize");
            let result = json!({"jsonrpc": "2.0", "id": initialize["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"}}});
            write_message(&mut write, result).await;
            let initialized = read_message(&mut lines).await;
            assert_eq!(initialized["method"], "notifications/initialized");
        });
        Self {
            lines,
            write,
            client: client.expect("initialize"),
            lane,
        }
    }

    async fn read(&mut self) -> Value {
        read_message(&mut self.lines).await
    }

    async fn answer(&mut self, message: Value) {
        write_message(&mut self.write, message).await;
    }

    /// A call sent on the lane, answered by a task of its own.
    fn call(&self) -> tokio::task::JoinHandle<Result<Answer, LaneClosed>> {
        let lane = self.lane.clone();
        tokio::spawn(async move {
            let mut sent = lane.send(echo_call("x")).expect("queued");
            sent.written().await.expect("written");
            sent.answer().await
        })
    }
}

async fn read_message(lines: &mut Lines<BufReader<ReadHalf<DuplexStream>>>) -> Value {
    let line = lines.next_line().await.expect("read").expect("a line");
    serde_json::from_str(&line).expect("json")
}

async fn write_message(write: &mut WriteHalf<DuplexStream>, message: Value) {
    write
        .write_all(format!("{message}\n").as_bytes())
        .await
        .expect("write");
}

#[tokio::test]
async fn answers_of_every_kind_come_back_as_rmcp_would_decode_them() {
    let mut server = Scripted::start().await;
    let answers = [
        json!({"content": [{"type": "text", "text": "hi"}], "isError": true}),
        json!({}),
        json!({"tools": []}),
    ];
    for result in answers {
        let expected = Ok(decoded(result.clone()));
        let sending = server.call();
        let request = server.read().await;
        assert_eq!(request["method"], "tools/call");
        assert_eq!(
            request["params"]["_meta"]["progressToken"], request["id"],
            "the progress token is the request's id"
        );
        assert!(request["id"].as_i64().expect("a number") >= mcp_wire::lane::FIRST_ID);
        server
            .answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
        assert_eq!(shown(sending.await.expect("joined")), shown(Ok(expected)));
    }

    let sending = server.call();
    let request = server.read().await;
    server
        .answer(json!({"jsonrpc": "2.0", "id": request["id"],
                       "error": {"code": -32602, "message": "no such tool", "data": {"tool": "x"}}}))
        .await;
    let refused = ErrorData::new(
        ErrorCode(-32602),
        "no such tool",
        Some(json!({"tool": "x"})),
    );
    assert_eq!(
        shown(sending.await.expect("joined")),
        shown(Ok(Err(refused)))
    );

    // An id sent back as a string of the number answers the number, as rmcp takes it.
    let sending = server.call();
    let request = server.read().await;
    let as_string = request["id"].as_i64().expect("a number").to_string();
    server
        .answer(
            json!({"jsonrpc": "2.0", "id": as_string, "result": {"content": [], "isError": false}}),
        )
        .await;
    assert_eq!(
        shown(sending.await.expect("joined")),
        shown(Ok(Ok(decoded(json!({"content": [], "isError": false})))))
    );
}

#[tokio::test]
async fn a_request_given_up_is_forgotten_and_its_late_answer_dropped() {
    let mut server = Scripted::start().await;
    let lane = server.lane.clone();
    let sent = lane.send(echo_call("late")).expect("queued");
    sent.written().await.expect("written");
    let request = server.read().await;
    assert_eq!(lane.waiting(), 1);
    drop(sent);
    assert_eq!(lane.waiting(), 0);
    // The late answer goes to rmcp, which knows no such request and drops it; the
    // connection goes on.
    server
        .answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}))
        .await;
    let sending = server.call();
    let request = server.read().await;
    server
        .answer(json!({"jsonrpc": "2.0", "id": request["id"],
                       "result": {"content": [{"type": "text", "text": "on time"}], "isError": false}}))
        .await;
    assert_eq!(
        shown(sending.await.expect("joined")),
        shown(Ok(Ok(echoed("on time"))))
    );
}

#[tokio::test]
async fn a_connection_that_ends_tells_its_waiting_requests_and_takes_no_more() {
    let mut server = Scripted::start().await;
    let waiting = server.call();
    let request = server.read().await;
    assert_eq!(request["method"], "tools/call");
    let Scripted {
        lines,
        write,
        client,
        lane,
    } = server;
    drop((lines, write));
    assert!(matches!(waiting.await.expect("joined"), Err(LaneClosed)));
    assert!(matches!(
        lane.send(echo_call("after")).map(|_| ()),
        Err(LaneSendError::Closed)
    ));
    let _ = client.cancel().await;
}
