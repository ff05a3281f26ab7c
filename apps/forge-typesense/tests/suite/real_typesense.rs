//! One real Typesense 0.24.1 for the whole test binary, started on first use.
//!
//! The binary comes from TYPESENSE_BIN (`scripts/typesense-setup.sh` prints
//! it); without it these tests fail, they never skip. The server listens on
//! free ports of 127.0.0.1 and keeps its data under CARGO_TARGET_TMPDIR. It
//! runs under a small `sh` watchdog in its own process group: the watchdog
//! reads its stdin, a pipe whose write end only this test process holds, so
//! when the test process exits (however it exits) the read returns and the
//! watchdog kills Typesense and removes the data. Once ready, the fixture
//! repository is indexed into [`SEARCH_COLLECTION`] by `forge-typesense index`.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{BIN, env_with, fixture_repo};

pub const ADMIN_KEY: &str = "test-admin-key-d41d8cd9";
/// The collection holding the indexed fixture repository.
pub const SEARCH_COLLECTION: &str = "knowledge";

/// Kills its child when its stdin reaches end of file, then removes `$1`.
const WATCHDOG: &str = r#"data="$1"; shift
"$@" >"$data.log" 2>&1 </dev/null &
child=$!
read -r _ignored || true
kill -KILL "$child" 2>/dev/null
wait "$child" 2>/dev/null
rm -rf "$data" "$data.log""#;

pub struct RealTypesense {
    pub url: String,
    /// A key that may only search, as the MCP server is given in production.
    pub search_key: String,
    /// Held, never written: its closing tells the watchdog to stop Typesense.
    _watchdog: Mutex<Child>,
}

static SERVER: OnceLock<RealTypesense> = OnceLock::new();

/// The shared server, started (and the fixture indexed) on first use.
pub fn shared() -> &'static RealTypesense {
    SERVER.get_or_init(|| {
        // Its own thread: blocking calls and a runtime of its own are fine
        // there, whatever runtime the calling test runs on.
        std::thread::spawn(start)
            .join()
            .unwrap_or_else(|_| panic!("starting the real Typesense failed; see the message above"))
    })
}

fn typesense_bin() -> PathBuf {
    let Some(bin) = std::env::var_os("TYPESENSE_BIN").filter(|v| !v.is_empty()) else {
        panic!(
            "TYPESENSE_BIN is not set. These tests run a real Typesense 0.24.1:\n    \
             export TYPESENSE_BIN=\"$(scripts/typesense-setup.sh)\"\nthen run them again."
        );
    };
    let bin = PathBuf::from(bin);
    assert!(
        bin.is_file(),
        "TYPESENSE_BIN={} is not a file; run scripts/typesense-setup.sh",
        bin.display()
    );
    bin
}

/// Data folders of earlier runs whose test process is gone.
fn remove_stale_data(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("typesense-")
            .and_then(|rest| rest.trim_end_matches(".log").parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn start() -> RealTypesense {
    let bin = typesense_bin();
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_data(parent);
    let data = parent.join(format!("typesense-{}", std::process::id()));
    let _ = fs::remove_dir_all(&data);
    fs::create_dir_all(&data).expect("create the Typesense data folder");
    let (api_port, peering_port) = (
        test_support::free_port().expect("a free port on 127.0.0.1"),
        test_support::free_port().expect("a free port on 127.0.0.1"),
    );
    let watchdog = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg("typesense-watchdog")
        .arg(&data)
        .arg(&bin)
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--api-key={ADMIN_KEY}"))
        .arg("--listen-address=127.0.0.1")
        .arg(format!("--api-port={api_port}"))
        .arg("--peering-address=127.0.0.1")
        .arg(format!("--peering-port={peering_port}"))
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn the Typesense watchdog");
    let url = format!("http://127.0.0.1:{api_port}");
    let log = data.with_extension("log");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let search_key = runtime.block_on(async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("http client");
        wait_until_healthy(&http, &url, &log).await;
        let created: Value = http
            .post(format!("{url}/keys"))
            .header("X-TYPESENSE-API-KEY", ADMIN_KEY)
            .json(&json!({
                "description": "search only",
                "actions": ["documents:search"],
                "collections": ["*"]
            }))
            .send()
            .await
            .expect("create a search key")
            .json()
            .await
            .expect("key JSON");
        created["value"]
            .as_str()
            .expect("the new key's value")
            .to_owned()
    });

    let output = Command::new(BIN)
        .arg("index")
        .env_clear()
        .envs(env_with(&[
            ("TYPESENSE_URL", &url),
            ("TYPESENSE_API_KEY", ADMIN_KEY),
            ("TYPESENSE_COLLECTION", SEARCH_COLLECTION),
            ("REPO_PATH", &fixture_repo().display().to_string()),
        ]))
        .output()
        .expect("run forge-typesense index");
    assert!(
        output.status.success(),
        "indexing the fixture failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    RealTypesense {
        url,
        search_key,
        _watchdog: Mutex::new(watchdog),
    }
}

/// Poll `GET /health` until `{"ok":true}`, for at most 60 s.
async fn wait_until_healthy(http: &reqwest::Client, url: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(response) = http.get(format!("{url}/health")).send().await
            && let Ok(body) = response.json::<Value>().await
            && body == json!({"ok": true})
        {
            return;
        }
        if Instant::now() > deadline {
            panic!(
                "Typesense at {url} was not healthy within 60 s. Its log:\n{}",
                fs::read_to_string(log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Admin requests the tests make directly.
pub async fn admin(method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let server = shared();
    let http = reqwest::Client::new();
    let mut request = http
        .request(method, format!("{}{path}", server.url))
        .header("X-TYPESENSE-API-KEY", ADMIN_KEY);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("admin request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("admin body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
