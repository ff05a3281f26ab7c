//! `mcp-bench load`: one `tools/call` repeated with K calls in flight, over a raw JSON-RPC
//! client of ours (no SDK on the measuring side, so every path pays the same, small client
//! cost):
//!
//! - **stdio**: the server spawned in its own process group; requests written as lines,
//!   pipelined K deep, answers matched by id;
//! - **streamable HTTP**: one session (`initialize`, `Mcp-Session-Id`), then K workers each
//!   POSTing one call at a time on a kept-alive connection of a shared pool; the answer is
//!   read from a JSON body or from the POST's event stream;
//! - **HTTP+SSE (2024-11-05)**: the event stream opened once, calls POSTed K deep, answers
//!   matched by id as they arrive on the stream.
//!
//! For each K it reports latency percentiles, throughput, and the CPU the measured process
//! trees spent per call (`crate::usage`); peak RSS is read once at the end.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::peer::ServerCommand;
use crate::report::Samples;
use crate::usage;

/// The protocol revision the client offers.
const PROTOCOL: &str = "2025-11-25";

/// What to call, how often, how deep.
pub struct LoadSpec {
    pub label: String,
    /// Called in turn (call `i` calls `tools[i % len]`).
    pub tools: Vec<String>,
    /// HTTP: sessions opened; worker `w` uses session `w % sessions`.
    pub sessions: usize,
    pub arguments: Value,
    pub calls: usize,
    pub warmup: usize,
    pub depths: Vec<usize>,
    /// Process trees measured besides the spawned server's (an HTTP server's pid).
    pub tree_pids: Vec<u32>,
}

/// One depth's figures.
#[derive(Debug)]
pub struct Phase {
    pub depth: usize,
    pub samples: Samples,
    pub elapsed: Duration,
    pub cpu_micros: u64,
}

/// Where the calls go.
pub enum Wire {
    Stdio(ServerCommand),
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    LegacySse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

fn request(id: u64, spec: &LoadSpec) -> Value {
    let tool = &spec.tools[id as usize % spec.tools.len()];
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": spec.arguments},
    })
}

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")},
        },
    })
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A failed call ends the run: a benchmark of errors measures nothing.
fn check(answer: &Value, spec: &LoadSpec) -> anyhow::Result<()> {
    if let Some(error) = answer.get("error") {
        bail!("{}: the call answered an error: {error}", spec.label);
    }
    if answer["result"]["isError"] == Value::Bool(true) {
        bail!("{}: the call failed: {}", spec.label, answer["result"]);
    }
    Ok(())
}

/// A way to run one phase: `calls` calls, `depth` in flight.
trait Phases {
    async fn phase(
        &mut self,
        spec: &LoadSpec,
        depth: usize,
        calls: usize,
    ) -> anyhow::Result<Samples>;
}

/// Run every depth of `spec` over `wire`; the figures, then the peak RSS of the trees (KiB).
pub async fn run(wire: &Wire, spec: &LoadSpec) -> anyhow::Result<(Vec<Phase>, u64)> {
    match wire {
        Wire::Stdio(command) => {
            let mut driver = StdioDriver::spawn(command).await?;
            let mut roots = vec![driver.pid];
            roots.extend(&spec.tree_pids);
            let measured = measured(&mut driver, spec, &roots).await;
            driver.close().await;
            measured
        }
        Wire::Http { url, headers } => {
            let client = reqwest::Client::builder()
                .tcp_nodelay(true)
                .pool_max_idle_per_host(1024)
                .build()?;
            let mut sessions = Vec::new();
            for _ in 0..spec.sessions.max(1) {
                sessions.push(HttpSession::open(&client, url, headers).await?);
            }
            let mut workers = HttpWorkers {
                sessions: Arc::new(sessions),
                next_id: Arc::new(AtomicUsize::new(1)),
            };
            measured(&mut workers, spec, &spec.tree_pids).await
        }
        Wire::LegacySse { url, headers } => {
            let mut stream = SseStream::open(url, headers).await?;
            measured(&mut stream, spec, &spec.tree_pids).await
        }
    }
}

/// Warm up, then each depth, measuring the trees under `roots`; their peak RSS at the end.
async fn measured(
    driver: &mut impl Phases,
    spec: &LoadSpec,
    roots: &[u32],
) -> anyhow::Result<(Vec<Phase>, u64)> {
    driver.phase(spec, 1, spec.warmup).await?;
    let mut phases = Vec::new();
    for &depth in &spec.depths {
        let cpu = usage::cpu_micros(roots);
        let started = Instant::now();
        let samples = driver.phase(spec, depth, spec.calls).await?;
        phases.push(Phase {
            depth,
            samples,
            elapsed: started.elapsed(),
            cpu_micros: usage::cpu_micros(roots).saturating_sub(cpu),
        });
    }
    Ok((phases, usage::peak_rss_kib(roots)))
}

struct StdioDriver {
    child: tokio::process::Child,
    pid: u32,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl StdioDriver {
    async fn spawn(command: &ServerCommand) -> anyhow::Result<Self> {
        let mut child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            .env_clear()
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawn {}", command.program.display()))?;
        let pid = child.id().context("the server exited at once")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut driver = Self {
            child,
            pid,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        driver.send(&initialize(0)).await?;
        driver.answer_to(0).await?;
        driver.write_line(INITIALIZED.as_bytes()).await?;
        Ok(driver)
    }

    async fn write_line(&mut self, line: &[u8]) -> anyhow::Result<()> {
        self.stdin.write_all(line).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let line = serde_json::to_vec(message)?;
        self.write_line(&line).await
    }

    /// The next answer (a line with an id); notifications and requests of the server are
    /// skipped.
    async fn next_answer(&mut self) -> anyhow::Result<(u64, Value)> {
        loop {
            let line = self
                .lines
                .next_line()
                .await?
                .context("the server closed its stdout")?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("method").is_some() {
                continue;
            }
            if let Some(id) = message.get("id").and_then(Value::as_u64) {
                return Ok((id, message));
            }
        }
    }

    async fn answer_to(&mut self, id: u64) -> anyhow::Result<Value> {
        loop {
            let (got, message) = self.next_answer().await?;
            if got == id {
                return Ok(message);
            }
        }
    }

    async fn issue(
        &mut self,
        spec: &LoadSpec,
        sent: &mut HashMap<u64, Instant>,
    ) -> anyhow::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let line = serde_json::to_vec(&request(id, spec))?;
        sent.insert(id, Instant::now());
        self.write_line(&line).await
    }

    /// Close stdin and let the server exit (a minute: under valgrind it writes its profile
    /// first); its group is killed after.
    async fn close(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .is_err()
        {
            let _ = kill_group(self.pid);
            let _ = self.child.wait().await;
        }
    }
}

impl Phases for StdioDriver {
    /// Pipelined: `depth` requests written, one more each time an answer arrives.
    async fn phase(
        &mut self,
        spec: &LoadSpec,
        depth: usize,
        calls: usize,
    ) -> anyhow::Result<Samples> {
        let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(depth);
        let mut samples = Samples::default();
        let mut issued = 0;
        while issued < calls.min(depth) {
            self.issue(spec, &mut sent).await?;
            issued += 1;
        }
        while samples.len() < calls {
            let (id, answer) = self.next_answer().await?;
            let Some(at) = sent.remove(&id) else {
                continue;
            };
            samples.push(at.elapsed());
            check(&answer, spec)?;
            if issued < calls {
                self.issue(spec, &mut sent).await?;
                issued += 1;
            }
        }
        Ok(samples)
    }
}

/// Kill the process group led by `pid`.
fn kill_group(pid: u32) -> std::io::Result<()> {
    let status = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("kill failed"))
    }
}

fn header_map(headers: &[(String, String)]) -> anyhow::Result<http::HeaderMap> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            http::HeaderName::from_bytes(name.as_bytes())?,
            http::HeaderValue::from_str(value)?,
        );
    }
    Ok(map)
}

/// One streamable HTTP session (connections come from the shared pool of `client`).
struct HttpSession {
    client: reqwest::Client,
    url: String,
    headers: http::HeaderMap,
}

impl HttpSession {
    async fn open(
        client: &reqwest::Client,
        url: &str,
        headers: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let client = client.clone();
        let mut headers = header_map(headers)?;
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json, text/event-stream"),
        );
        let response = client
            .post(url)
            .headers(headers.clone())
            .json(&initialize(0))
            .send()
            .await
            .with_context(|| format!("POST {url}"))?
            .error_for_status()?;
        if let Some(session) = response.headers().get("mcp-session-id").cloned() {
            headers.insert("mcp-session-id", session);
        }
        answer_in(response, 0).await?;
        headers.insert(
            "mcp-protocol-version",
            http::HeaderValue::from_static(PROTOCOL),
        );
        client
            .post(url)
            .headers(headers.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(INITIALIZED)
            .send()
            .await?
            .error_for_status()?;
        Ok(Self {
            client,
            url: url.to_owned(),
            headers,
        })
    }
}

/// The sessions a phase's workers share, and the next request id.
struct HttpWorkers {
    sessions: Arc<Vec<HttpSession>>,
    next_id: Arc<AtomicUsize>,
}

impl Phases for HttpWorkers {
    async fn phase(
        &mut self,
        spec: &LoadSpec,
        depth: usize,
        calls: usize,
    ) -> anyhow::Result<Samples> {
        workers(
            self.sessions.clone(),
            self.next_id.clone(),
            spec,
            depth,
            calls,
        )
        .await
    }
}

/// `calls` calls by `depth` workers over `sessions` (worker `w` on session `w % len`), each
/// worker one call at a time.
async fn workers(
    sessions: Arc<Vec<HttpSession>>,
    next_id: Arc<AtomicUsize>,
    spec: &LoadSpec,
    depth: usize,
    calls: usize,
) -> anyhow::Result<Samples> {
    let left = Arc::new(AtomicUsize::new(calls));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..depth.max(1) {
        let (sessions, left, next_id) = (sessions.clone(), left.clone(), next_id.clone());
        let bodies: Vec<Value> = (0..spec.tools.len() as u64)
            .map(|i| request(i, spec))
            .collect();
        let label = spec.label.clone();
        tasks.spawn(async move {
            let session = &sessions[worker % sessions.len()];
            let mut samples = Vec::new();
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                {
                    let id = next_id.fetch_add(1, Ordering::Relaxed) as u64;
                    let mut body = bodies[id as usize % bodies.len()].clone();
                    body["id"] = json!(id);
                    let started = Instant::now();
                    let response = session
                        .client
                        .post(&session.url)
                        .headers(session.headers.clone())
                        .json(&body)
                        .send()
                        .await?
                        .error_for_status()?;
                    let answer = answer_in(response, id).await?;
                    samples.push(started.elapsed());
                    if answer.get("error").is_some() || answer["result"]["isError"] == true {
                        bail!("{label}: the call failed: {answer}");
                    }
                }
            }
            Ok::<_, anyhow::Error>(samples)
        });
    }
    let mut all = Samples::default();
    while let Some(done) = tasks.join_next().await {
        for sample in done?? {
            all.push(sample);
        }
    }
    Ok(all)
}

/// The answer to `id` in a POST's response: its JSON body, or the event of its stream that
/// carries it.
async fn answer_in(response: reqwest::Response, id: u64) -> anyhow::Result<Value> {
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return Ok(response.json().await?);
    }
    let mut response = response;
    let mut buffer = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        buffer.extend_from_slice(&chunk);
        if let Some(answer) = events(&buffer).into_iter().find(|m| m["id"] == json!(id)) {
            return Ok(answer);
        }
    }
    bail!("the response ended without the answer to request {id}")
}

/// The JSON messages in the `data:` lines of an event stream (complete lines only).
fn events(buffer: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(buffer);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim_start()).ok())
        .collect()
}

/// An HTTP+SSE (2024-11-05) connection: the stream read by a task that hands each message's
/// id on as it arrives.
struct SseStream {
    client: reqwest::Client,
    post_url: reqwest::Url,
    headers: http::HeaderMap,
    answers: mpsc::UnboundedReceiver<(u64, Value, Instant)>,
    next_id: u64,
}

impl SseStream {
    async fn open(url: &str, headers: &[(String, String)]) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256)
            .build()?;
        let headers = header_map(headers)?;
        let mut response = client
            .get(url)
            .headers(headers.clone())
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .with_context(|| format!("GET {url}"))?
            .error_for_status()?;
        let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
        let (answers_tx, answers) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut endpoint_tx = Some(endpoint_tx);
            let mut pending = String::new();
            let mut event = String::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find('\n') {
                    let line: String = pending.drain(..=end).collect();
                    let line = line.trim_end_matches(['\n', '\r']);
                    if let Some(name) = line.strip_prefix("event:") {
                        event = name.trim().to_owned();
                    } else if let Some(data) = line.strip_prefix("data:") {
                        let data = data.trim_start();
                        if event == "endpoint" {
                            if let Some(tx) = endpoint_tx.take() {
                                let _ = tx.send(data.to_owned());
                            }
                        } else if let Ok(message) = serde_json::from_str::<Value>(data)
                            && let Some(id) = message.get("id").and_then(Value::as_u64)
                            && answers_tx.send((id, message, Instant::now())).is_err()
                        {
                            return;
                        }
                    } else if line.is_empty() {
                        event.clear();
                    }
                }
            }
        });
        let endpoint = tokio::time::timeout(Duration::from_secs(10), endpoint_rx)
            .await
            .context("no `endpoint` event within 10 s")??;
        let post_url = reqwest::Url::parse(url)?.join(&endpoint)?;
        let mut stream = Self {
            client,
            post_url,
            headers,
            answers,
            next_id: 1,
        };
        stream.post(initialize(0)).await?;
        stream.answer().await?;
        stream.post(serde_json::from_str(INITIALIZED)?).await?;
        Ok(stream)
    }

    async fn post(&self, message: Value) -> anyhow::Result<()> {
        self.client
            .post(self.post_url.clone())
            .headers(self.headers.clone())
            .json(&message)
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    async fn answer(&mut self) -> anyhow::Result<(u64, Value, Instant)> {
        tokio::time::timeout(Duration::from_secs(60), self.answers.recv())
            .await
            .context("no answer within 60 s")?
            .context("the event stream ended")
    }
}

impl Phases for SseStream {
    /// Pipelined: `depth` POSTs out, one more each time an answer arrives on the stream.
    async fn phase(
        &mut self,
        spec: &LoadSpec,
        depth: usize,
        calls: usize,
    ) -> anyhow::Result<Samples> {
        let mut sent: HashMap<u64, Instant> = HashMap::new();
        let mut samples = Samples::default();
        let mut issued = 0;
        let mut posts = tokio::task::JoinSet::new();
        let mut issue = |this: &mut Self, sent: &mut HashMap<u64, Instant>| {
            let id = this.next_id;
            this.next_id += 1;
            sent.insert(id, Instant::now());
            let request = this
                .client
                .post(this.post_url.clone())
                .headers(this.headers.clone())
                .json(&request(id, spec));
            posts.spawn(async move { request.send().await?.error_for_status() });
        };
        while issued < calls.min(depth) {
            issue(self, &mut sent);
            issued += 1;
        }
        while samples.len() < calls {
            let (id, answer, at) = self.answer().await?;
            let Some(started) = sent.remove(&id) else {
                continue;
            };
            samples.push(at.duration_since(started));
            check(&answer, spec)?;
            if issued < calls {
                issue(self, &mut sent);
                issued += 1;
            }
        }
        while let Some(posted) = posts.join_next().await {
            posted??;
        }
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_reads_complete_data_lines() {
        let stream = b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\ndata: {\"par";
        assert_eq!(
            events(stream),
            vec![json!({"jsonrpc": "2.0", "id": 3, "result": {}})]
        );
    }
}
