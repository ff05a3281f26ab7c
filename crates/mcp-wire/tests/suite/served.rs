//! Calls served past rmcp's loop: cancelled as rmcp cancels them.

use std::sync::Arc;

use mcp_wire::{DirectServing, LineTransport};
use pretty_assertions::assert_eq;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::Notify;

/// A tool that waits until its call is cancelled, then answers anyway.
#[derive(Clone, Default)]
struct Patient {
    started: Arc<Notify>,
    cancelled: Arc<Notify>,
}

impl ServerHandler for Patient {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.started.notify_one();
        context.ct.cancelled().await;
        self.cancelled.notify_one();
        Ok(CallToolResult::success(vec![ContentBlock::text("too late")]).into())
    }
}

struct Client {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("write");
    }

    async fn read(&mut self) -> Value {
        let line = self.lines.next_line().await.expect("read").expect("a line");
        serde_json::from_str(&line).expect("json")
    }
}

/// `server` served with direct serving installed, and a client that initialized.
async fn start<S: ServerHandler + Clone>(
    server: S,
) -> (Client, DirectServing, tokio::task::JoinHandle<()>) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let mut transport = LineTransport::<RoleServer, _, _>::new(read, write);
    let direct = transport.direct_serving();
    let installing = direct.clone();
    let serving = tokio::spawn(async move {
        let running = server.clone().serve(transport).await.expect("initialized");
        installing.install(server, running.peer().clone());
        let _ = running.waiting().await;
    });
    let (read, write) = tokio::io::split(client_end);
    let mut client = Client {
        lines: BufReader::new(read).lines(),
        write,
    };
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
    assert_eq!(client.read().await["id"], 0);
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    // A ping answered says the server is installed (its loop runs after `serve` returned).
    client
        .send(json!({"jsonrpc": "2.0", "id": "ready", "method": "ping"}))
        .await;
    assert_eq!(client.read().await["id"], "ready");
    (client, direct, serving)
}

fn call(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "wait", "arguments": {}}})
}

#[tokio::test]
async fn a_cancelled_call_is_told_and_not_answered() {
    let server = Patient::default();
    let (mut client, direct, serving) = start(server.clone()).await;
    client.send(call("slow")).await;
    server.started.notified().await;
    assert_eq!((direct.served(), direct.running()), (1, 1));
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "slow", "reason": "changed my mind"}}),
        )
        .await;
    server.cancelled.notified().await;
    client
        .send(json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
        .await;
    // The next line is the ping's answer: the cancelled call's answer was never written.
    assert_eq!(
        client.read().await,
        json!({"jsonrpc": "2.0", "id": "after", "result": {}})
    );
    assert_eq!(direct.running(), 0);

    drop(client);
    serving.await.expect("the server ends with its input");
}

#[tokio::test(start_paused = true)]
async fn calls_still_running_when_the_input_ends_have_rmcps_5_s_then_are_cancelled() {
    let server = Patient::default();
    let (mut client, direct, serving) = start(server.clone()).await;
    client.send(call("left running")).await;
    server.started.notified().await;
    assert_eq!(direct.running(), 1);
    let ended = tokio::time::Instant::now();
    drop(client);
    server.cancelled.notified().await;
    assert!(ended.elapsed() >= std::time::Duration::from_secs(5));
    serving.await.expect("the server ends with its input");
    assert_eq!((direct.served(), direct.running()), (1, 0));
}

/// A tool that answers once the test lets it.
#[derive(Clone, Default)]
struct Gated {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

impl ServerHandler for Gated {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.started.notify_one();
        self.release.notified().await;
        Ok(
            CallToolResult::success(vec![ContentBlock::text("answered after the input ended")])
                .into(),
        )
    }
}

#[tokio::test]
async fn a_call_running_when_the_input_ends_is_still_answered() {
    let server = Gated::default();
    let (mut client, direct, serving) = start(server.clone()).await;
    client.send(call("last")).await;
    server.started.notified().await;
    // The client closes its side for writing and keeps reading, as `printf … | server` does.
    client.write.shutdown().await.expect("half-closed");
    server.release.notify_one();
    let answer = client.read().await;
    assert_eq!(answer["id"], "last");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "answered after the input ended"
    );
    serving.await.expect("the server ends with its input");
    assert_eq!((direct.served(), direct.running()), (1, 0));
}

/// A tool whose first call waits until it is cancelled, and whose other calls wait until
/// released.
#[derive(Clone, Default)]
struct Reused {
    started: Arc<Notify>,
    ended: Arc<Notify>,
    release: Arc<Notify>,
}

impl ServerHandler for Reused {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let first = request
            .arguments
            .is_some_and(|arguments| arguments.contains_key("first"));
        if first {
            self.started.notify_one();
            context.ct.cancelled().await;
            self.ended.notify_one();
            return Ok(CallToolResult::success(vec![ContentBlock::text("first")]).into());
        }
        self.release.notified().await;
        Ok(CallToolResult::success(vec![ContentBlock::text("second")]).into())
    }
}

#[tokio::test]
async fn an_id_used_again_after_its_cancel_names_the_new_call() {
    let server = Reused::default();
    let (mut client, direct, serving) = start(server.clone()).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call",
                     "params": {"name": "wait", "arguments": {"first": true}}}))
        .await;
    server.started.notified().await;
    // The cancel and the new call under the same id in one write: both are read before the
    // cancelled call's task ends.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "x"}});
    client
        .write
        .write_all(format!("{cancel}\n{}\n", call("x")).as_bytes())
        .await
        .expect("write");
    server.ended.notified().await;
    server.release.notify_one();
    // The new call is answered (and the cancelled one is not); a bound, not a wait: the
    // answer comes at once, or never.
    let answer = tokio::time::timeout(std::time::Duration::from_secs(10), client.read())
        .await
        .expect("the new call is answered");
    assert_eq!(
        (&answer["id"], &answer["result"]["content"][0]["text"]),
        (&json!("x"), &json!("second")),
        "{answer}"
    );
    assert_eq!((direct.served(), direct.running()), (2, 0));
    drop(client);
    serving.await.expect("the server ends with its input");
}
