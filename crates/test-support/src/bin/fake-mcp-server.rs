//! A fake stdio MCP server with fault modes, for testing hosts. Hand-written JSON-RPC (no SDK),
//! so it can misbehave in ways a conforming server never would. Driven by env vars:
//!
//! | variable | effect |
//! |---|---|
//! | `FAKE_MCP_LOG=FILE` | append one line per event: `start PID`, every received method, `client NAME VERSION` on initialize, `meta JSON` for a `tools/call` with `_meta`, `exit` |
//! | `FAKE_MCP_START_DELAY_MS=N` | sleep N ms before reading stdin (slow start) |
//! | `FAKE_MCP_EXIT_AT_START=CODE` | exit with CODE before reading stdin |
//! | `FAKE_MCP_NO_INITIALIZE=1` | never answer `initialize` |
//! | `FAKE_MCP_IGNORE_PING=1` | never answer `ping` |
//! | `FAKE_MCP_HANG_AFTER_INIT=1` | answer nothing after the handshake (a wedged server) |
//! | `FAKE_MCP_HANG_AFTER_TOOLS_LIST=1` | answer nothing once a full `tools/list` was answered |
//! | `FAKE_MCP_CRASH_AFTER_CALLS=N` | exit 3 on receiving the N-th `tools/call` |
//! | `FAKE_MCP_GARBAGE_STDOUT=1` | write non-JSON lines to stdout before each answer |
//! | `FAKE_MCP_STDERR_FLOOD=N` | write `flood line I` for I in 1..=N to stderr at start |
//! | `FAKE_MCP_GRANDCHILD_PID_FILE=FILE` | start `setsid sleep 3600` (own session, like Chromium) and write its pid |
//! | `FAKE_MCP_TOOLS=a,b` | extra tool names (each echoes its arguments) |
//! | `FAKE_MCP_TOOLS_FILE=FILE` | extra tools as defined in FILE: a JSON object with a `tools` list (a captured `tools/list`), each echoing its arguments |
//! | `FAKE_MCP_PAGE_SIZE=N` | answer `tools/list` in pages of N |
//! | `FAKE_MCP_ENDLESS_PAGES=1` | answer every `tools/list` with the tools and a new `nextCursor` (a list without end) |
//!
//! Tools: `echo {text}` → text; `env {name}` → the variable's value or `<unset>`;
//! `sleep {ms}` → logs `sleeping` (`notifications/message`: a test's signal that the call
//! arrived), then answers after ms (on a thread: other requests are still served);
//! `change_tools` → adds tool `added`, then sends `notifications/tools/list_changed`;
//! `picture` (only when named in `FAKE_MCP_TOOLS`) → a text and a 1×1 PNG image content.

use std::io::{BufRead, Write};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// A 1×1 PNG, base64: what the `picture` tool shows.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

type Out = Arc<Mutex<std::io::Stdout>>;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn num(name: &str) -> Option<u64> {
    var(name).and_then(|v| v.parse().ok())
}

fn log(event: &str) {
    if let Some(path) = var("FAKE_MCP_LOG")
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(file, "{event}");
    }
}

fn send(out: &Out, message: &Value) {
    if let Ok(mut out) = out.lock() {
        if var("FAKE_MCP_GARBAGE_STDOUT").is_some() {
            let _ = writeln!(out, "this is not JSON {{ at all");
        }
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }
}

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("fake tool {name}"),
        "inputSchema": {"type": "object"}
    })
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn main() {
    log(&format!("start {}", std::process::id()));
    if let Some(lines) = num("FAKE_MCP_STDERR_FLOOD") {
        let mut err = std::io::stderr().lock();
        for i in 1..=lines {
            let _ = writeln!(err, "flood line {i}");
        }
    }
    if let Some(path) = var("FAKE_MCP_GRANDCHILD_PID_FILE") {
        match Command::new("setsid").args(["sleep", "3600"]).spawn() {
            Ok(child) => {
                let _ = std::fs::write(&path, child.id().to_string());
            }
            Err(error) => eprintln!("cannot start the grandchild: {error}"),
        }
    }
    if let Some(ms) = num("FAKE_MCP_START_DELAY_MS") {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if let Some(code) = num("FAKE_MCP_EXIT_AT_START") {
        eprintln!("fake server exiting at start with {code}");
        std::process::exit(i32::try_from(code).unwrap_or(1));
    }

    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let mut tools: Vec<String> = vec![
        "echo".into(),
        "env".into(),
        "sleep".into(),
        "change_tools".into(),
    ];
    if let Some(extra) = var("FAKE_MCP_TOOLS") {
        tools.extend(extra.split(',').map(str::to_owned));
    }
    let defined: Vec<Value> = var("FAKE_MCP_TOOLS_FILE")
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let file: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
            file["tools"].as_array().cloned().unwrap_or_default()
        })
        .unwrap_or_default();
    for definition in &defined {
        if let Some(name) = definition["name"].as_str() {
            tools.push(name.to_owned());
        }
    }
    let tool = |name: &str| {
        defined
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_else(|| tool(name))
    };
    let page_size = num("FAKE_MCP_PAGE_SIZE").map(|n| n.max(1) as usize);
    let mut calls = 0u64;
    let mut initialized = false;
    let mut listed = false;

    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("<response>");
        log(method);
        let Some(id) = message.get("id").cloned() else {
            continue; // a notification
        };
        if initialized && var("FAKE_MCP_HANG_AFTER_INIT").is_some() {
            continue;
        }
        if listed && var("FAKE_MCP_HANG_AFTER_TOOLS_LIST").is_some() {
            continue;
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => {
                if var("FAKE_MCP_NO_INITIALIZE").is_some() {
                    continue;
                }
                initialized = true;
                log(&format!(
                    "client {} {}",
                    params["clientInfo"]["name"].as_str().unwrap_or("?"),
                    params["protocolVersion"].as_str().unwrap_or("?")
                ));
                let version = params
                    .get("protocolVersion")
                    .cloned()
                    .unwrap_or(json!("2025-11-25"));
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "fake-mcp-server", "version": "0.0.0"}
                })
            }
            "ping" => {
                if var("FAKE_MCP_IGNORE_PING").is_some() {
                    continue;
                }
                json!({})
            }
            "tools/list" => {
                let start: usize = params
                    .get("cursor")
                    .and_then(Value::as_str)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let end = page_size.map_or(tools.len(), |size| (start + size).min(tools.len()));
                let page: Vec<Value> = tools[start.min(end)..end].iter().map(|t| tool(t)).collect();
                if var("FAKE_MCP_ENDLESS_PAGES").is_some() {
                    let all: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
                    json!({"tools": all, "nextCursor": (start + 1).to_string()})
                } else if end < tools.len() {
                    json!({"tools": page, "nextCursor": end.to_string()})
                } else {
                    listed = true;
                    json!({"tools": page})
                }
            }
            "tools/call" => {
                calls += 1;
                if num("FAKE_MCP_CRASH_AFTER_CALLS") == Some(calls) {
                    log("exit");
                    eprintln!("fake server crashing on call {calls}");
                    std::process::exit(3);
                }
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = params.get("arguments").cloned().unwrap_or(json!({}));
                if let Some(meta) = params.get("_meta") {
                    log(&format!("meta {meta}"));
                }
                match name {
                    "echo" => text_result(args.get("text").and_then(Value::as_str).unwrap_or("")),
                    "env" => {
                        let var_name = args.get("name").and_then(Value::as_str).unwrap_or("");
                        let value = std::env::var(var_name).unwrap_or_else(|_| "<unset>".into());
                        text_result(&value)
                    }
                    "sleep" => {
                        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "method": "notifications/message",
                                    "params": {"level": "info", "data": "sleeping"}}),
                        );
                        let out = Arc::clone(&out);
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(ms));
                            send(
                                &out,
                                &json!({"jsonrpc": "2.0", "id": id, "result": text_result("slept")}),
                            );
                        });
                        continue;
                    }
                    "change_tools" => {
                        tools.push("added".into());
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "id": id, "result": text_result("changed")}),
                        );
                        send(
                            &out,
                            &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                        );
                        continue;
                    }
                    "picture" if tools.iter().any(|t| t == "picture") => json!({"content": [
                        {"type": "text", "text": "a picture"},
                        {"type": "image", "mimeType": "image/png", "data": PIXEL_PNG}
                    ]}),
                    other if tools.iter().any(|t| t == other) => text_result(&args.to_string()),
                    other => json!({
                        "content": [{"type": "text", "text": format!("unknown tool {other}")}],
                        "isError": true
                    }),
                }
            }
            other => {
                let error =
                    json!({"code": -32601, "message": format!("method not found: {other}")});
                send(&out, &json!({"jsonrpc": "2.0", "id": id, "error": error}));
                continue;
            }
        };
        send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    log("exit");
}
