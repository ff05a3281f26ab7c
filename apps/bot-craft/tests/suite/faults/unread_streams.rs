//! Issue 33's unread-streams probe against a real `botcraft serve`: 500 chat streams whose
//! clients never read, each a model answer of 64 MiB (the 8 MB, made longer than the
//! kernel's socket buffers can swallow, so that an answer the fake model finished writing
//! is one BotCraft read, never one a buffer took). Every stream is ended after
//! `BOTCRAFT_WRITE_STALL_SECONDS` and its provider request dropped before the answer was
//! whole (the fake model counts a disconnect for each, none finished); BotCraft's memory,
//! read from `/proc/PID/status`, stays within the documented bound at its peak (`VmHWM`,
//! reset once idle): 640 KiB a stream, most of it hyper's HTTP/1.1 client read buffer toward
//! a model that writes faster than the client reads (the target of 64 MiB for the
//! 500 is missed, as `docs/benchmarks.md` says); and once they ended BotCraft gives its free
//! memory back and is within 16 MiB of idle.
//!
//! The clients shrink their receive buffers to 4 KiB, as a slow phone would, so the kernel
//! holds little on either side and what is measured is BotCraft's own buffering.

use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use test_support::{FakeLlm, FakeReply};
use tokio::io::AsyncWriteExt;

use crate::common::{Api, serve_command, spawn_served};

const KEY: &str = "unread-streams-admin-key";
const STREAMS: usize = 500;
/// 8 KiB chunks, 8,192 rounds: 64 MiB per answer.
const CHUNK: usize = 8 * 1024;
const ROUNDS: usize = 8 * 1024;
/// The documented bound (docs/deployment.md, "Limits"): 640 KiB a stream over idle at the
/// peak.
const PEAK_OVER_IDLE_KIB: u64 = 640 * STREAMS as u64;
/// And back within this much of idle once the streams ended.
const AFTER_OVER_IDLE_KIB: u64 = 16 * 1024;
const STALL_SECONDS: u64 = 5;
const BOUND: Duration = Duration::from_secs(180);

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with(&format!("{field}:")))
        .with_context(|| format!("no {field} in /proc/{pid}/status"))?;
    line.split_whitespace()
        .nth(1)
        .context("no value")?
        .parse()
        .context("not a number")
}

/// Reset the peak (`VmHWM`) to the current size.
fn reset_peak(pid: u32) -> anyhow::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").context("reset VmHWM")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_unread_streams_stay_within_the_bound_and_end_with_their_provider_requests()
-> anyhow::Result<()> {
    let answer = || FakeReply::text(["x".repeat(CHUNK)]).repeated(ROUNDS);
    // One short warm-up answer, then the 500 long ones.
    let llm = FakeLlm::start(
        std::iter::once(FakeReply::text(["warm"])).chain((0..STREAMS).map(|_| answer())),
    )
    .await?;
    let data = tempfile::tempdir()?;
    let mut command = serve_command(data.path(), KEY)?;
    command
        .env("OPENAI_API_KEY", "sk-unread-streams")
        .env("OPENAI_BASE_URL", llm.openai_base_url())
        .env("BOTCRAFT_MAX_CHAT_STREAMS", STREAMS.to_string())
        .env("BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY", STREAMS.to_string())
        .env("BOTCRAFT_WRITE_STALL_SECONDS", STALL_SECONDS.to_string())
        .env("RUST_LOG", "info");
    let mut served = tokio::task::block_in_place(|| spawn_served(command))?;
    let pid = served.child.id();
    let api = Api::new(&served.url, KEY);
    let (status, body) = api
        .send(
            reqwest::Method::POST,
            "/api/bots",
            Some(json!({"name": "reader", "model": "openai:gpt-test"})),
        )
        .await?;
    anyhow::ensure!(status == 201, "create the bot: {status} {body}");
    let chat = json!({"botId": "reader", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "write a lot"}]}]})
    .to_string();
    // A chat read to its end first: what a first turn sets up is part of idle.
    let warm = reqwest::Client::new()
        .post(format!("{}/api/ai/chat", served.url))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(chat.clone())
        .send()
        .await?
        .text()
        .await?;
    anyhow::ensure!(warm.contains("warm"), "{warm}");
    tokio::task::block_in_place(|| -> anyhow::Result<()> {
        served.wait_for_line("chat turn ended")?;
        served.wait_for_line("free memory given back")?;
        Ok(())
    })?;

    let idle = status_kib(pid, "VmRSS")?;
    reset_peak(pid)?;
    let addr: std::net::SocketAddr = served
        .url
        .trim_start_matches("http://")
        .parse()
        .context("the served address")?;
    let request = format!(
        "POST /api/ai/chat HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{chat}",
        chat.len()
    );
    let mut clients = Vec::with_capacity(STREAMS);
    for _ in 0..STREAMS {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(4096)?;
        let mut stream = socket.connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        clients.push(stream);
    }
    // Every turn asked the model; every one stalls on its client, is ended after the stall
    // limit and drops its provider request before the 8 MiB were read.
    tokio::time::timeout(BOUND, llm.wait_for_requests(1 + STREAMS))
        .await
        .context("not every stream reached the model")?;
    tokio::time::timeout(BOUND, llm.wait_for_disconnects(STREAMS))
        .await
        .context("not every provider request was dropped before its answer was whole")?;
    let peak = status_kib(pid, "VmHWM")?;
    // Each turn logs its end; then its buffers are gone.
    tokio::task::block_in_place(|| -> anyhow::Result<()> {
        for seen in 0..STREAMS {
            served
                .wait_for_line("chat turn ended")
                .map_err(|_| anyhow::anyhow!("{seen} of {} turns ended", STREAMS))?;
        }
        Ok(())
    })?;
    drop(clients);
    // The burst over, BotCraft gives its free memory back (and says so).
    tokio::task::block_in_place(|| served.wait_for_line("free memory given back"))?;
    let after = status_kib(pid, "VmRSS")?;
    println!(
        "unread streams: idle {idle} KiB, peak {peak} KiB (+{} KiB), after {after} KiB (+{} KiB), {} streams of {} MiB",
        peak.saturating_sub(idle),
        after.saturating_sub(idle),
        STREAMS,
        (CHUNK * ROUNDS) >> 20
    );
    assert!(
        peak <= idle + PEAK_OVER_IDLE_KIB,
        "peak {peak} KiB over idle {idle} KiB + {PEAK_OVER_IDLE_KIB} KiB"
    );
    assert!(
        after <= idle + AFTER_OVER_IDLE_KIB,
        "after {after} KiB over idle {idle} KiB + {AFTER_OVER_IDLE_KIB} KiB"
    );
    let ended = served
        .lines
        .iter()
        .filter(|line| line.contains("chat turn ended") && line.contains("Aborted"))
        .count();
    assert_eq!(ended, STREAMS, "aborted turns");
    Ok(())
}
