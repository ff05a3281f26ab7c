//! Who may do what on `/mcp`: a table of refusals, each with its status and without a word
//! about another bot's tools.

use mcp_gateway::{BotKeys, KeyPolicy};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};

use super::gateway::forge;
use super::harness::{FakeBackend, FakeBot, Http, Served, names};

const FORGE_KEY: &str = "forge-key";
const OTHER_KEY: &str = "other-key";

fn other() -> FakeBot {
    FakeBot::default()
        .tool("secret-server", "launch", true)
        .instructions("secret-server", "Launch codes.")
}

fn keys() -> KeyPolicy {
    KeyPolicy::Keys(
        BotKeys::parse(&format!(
            "forge={FORGE_KEY},other={OTHER_KEY},ghost=ghost-key"
        ))
        .expect("keys parse"),
    )
}

/// (case, method, key, session, body, status, error code)
type Refusal<'a> = (
    &'a str,
    Method,
    Option<&'a str>,
    Option<&'a str>,
    Option<Value>,
    u16,
    &'a str,
);

/// Words of the other bot that must never reach a forge client.
const SECRETS: [&str; 3] = ["secret-server", "launch", "Launch codes"];

fn assert_no_leak(case: &str, text: &str) {
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "{case}: leaked {secret:?} in {text}"
        );
    }
}

#[tokio::test]
async fn requests_without_a_bot_key_or_with_another_bots_session_are_refused() -> anyhow::Result<()>
{
    let backend = FakeBackend::new([("forge", forge()), ("other", other())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let http = Http::new(&served.url);
    let forge_session = http
        .initialize(Some(FORGE_KEY))
        .await?
        .session
        .unwrap_or_default();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});

    // (case, method, key, session, body, status, error code)
    let cases: Vec<Refusal> = vec![
        (
            "no key",
            Method::POST,
            None,
            None,
            Some(initialize.clone()),
            401,
            "unauthorized",
        ),
        (
            "wrong key",
            Method::POST,
            Some("nope"),
            None,
            Some(initialize.clone()),
            401,
            "unauthorized",
        ),
        (
            "no key on a live session",
            Method::POST,
            None,
            Some(&forge_session),
            Some(list.clone()),
            401,
            "unauthorized",
        ),
        (
            "another bot's key on forge's session: list",
            Method::POST,
            Some(OTHER_KEY),
            Some(&forge_session),
            Some(list.clone()),
            403,
            "forbidden",
        ),
        (
            "another bot's key on forge's session: stream",
            Method::GET,
            Some(OTHER_KEY),
            Some(&forge_session),
            None,
            403,
            "forbidden",
        ),
        (
            "another bot's key on forge's session: delete",
            Method::DELETE,
            Some(OTHER_KEY),
            Some(&forge_session),
            None,
            403,
            "forbidden",
        ),
    ];
    for (case, method, key, session, body, status, code) in cases {
        let reply = http.send(method, key, session, body).await?;
        assert_eq!(
            (reply.status, reply.body["error"]["code"].as_str()),
            (status, Some(code)),
            "{case}: {}",
            reply.text
        );
        assert_no_leak(case, &reply.text);
    }
    // The session survived the refused DELETE.
    let listed = http.list(Some(FORGE_KEY), Some(&forge_session)).await?;
    assert_eq!(
        names(&listed),
        ["forge-bash__fail", "forge-bash__run", "fs__read"]
    );
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn each_key_sees_and_calls_only_its_own_bots_tools() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge()), ("other", other())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let http = Http::new(&served.url);
    let forge_init = http.initialize(Some(FORGE_KEY)).await?;
    assert_no_leak("forge initialize", &forge_init.text);
    let forge_session = forge_init.session.clone();
    let other_session = http.initialize(Some(OTHER_KEY)).await?.session;

    let forge_list = http.list(Some(FORGE_KEY), forge_session.as_deref()).await?;
    assert_no_leak("forge tools/list", &forge_list.text);
    let other_list = http.list(Some(OTHER_KEY), other_session.as_deref()).await?;
    assert_eq!(names(&other_list), ["secret-server__launch"]);

    // A name outside forge's tools gets one answer, whatever it is.
    let cases = [
        ("another bot's tool", "secret-server__launch"),
        ("a tool outside the filter", "fs__write"),
        ("a tool nobody has", "nothing__here"),
    ];
    for (case, name) in cases {
        let reply = http
            .call(Some(FORGE_KEY), forge_session.as_deref(), name, json!({}))
            .await?;
        assert_eq!(reply.status, 200, "{case}");
        assert_eq!(
            reply.body["error"],
            json!({"code": -32602, "message": format!("Unknown tool: {name}")}),
            "{case}"
        );
    }
    let calls = backend.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(
        calls,
        Vec::<(String, String, String)>::new(),
        "no refused call reached the backend"
    );

    // A key whose bot does not exist initializes nothing.
    let ghost = http.initialize(Some("ghost-key")).await?;
    assert_eq!(ghost.body["error"]["code"], -32600, "{}", ghost.text);
    assert_no_leak("ghost", &ghost.text);
    served.stop().await;
    Ok(())
}

/// Bot keys of the store (`botcraft keys create --role bot`): each names its bot; admin and
/// chat keys are not bot keys; a revoked key fails on its next request, a live session
/// included.
#[tokio::test]
async fn stored_bot_keys_name_their_bot_until_revoked() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = store::Store::connect(&store::sqlite_url(&dir.path().join("keys.db"))).await?;
    store.create_bot(&store::BotSpec::new("forge", "m")).await?;
    let spec = |name: &str, role: store::KeyRole, bot: Option<&str>| store::ApiKeySpec {
        name: name.into(),
        role,
        bot: bot.map(str::to_owned),
    };
    let bot_key = store
        .create_api_key(&spec("desk", store::KeyRole::Bot, Some("forge")))
        .await?
        .secret;
    let admin_key = store
        .create_api_key(&spec("ops", store::KeyRole::Admin, None))
        .await?
        .secret;
    let chat_key = store
        .create_api_key(&spec("front", store::KeyRole::Chat, None))
        .await?
        .secret;

    let backend = FakeBackend::new([("forge", forge()), ("other", other())]);
    let config = mcp_gateway::GatewayConfig {
        key_store: Some(store.clone()),
        ..mcp_gateway::GatewayConfig::default()
    };
    let app = mcp_gateway::mcp_router(backend, keys(), &config);
    let served = Served::serve(app, 0, config.shutdown.clone()).await?;
    let http = Http::new(&served.url);

    let session = http.initialize(Some(&bot_key)).await?.session;
    let listed = http.list(Some(&bot_key), session.as_deref()).await?;
    assert_eq!(
        names(&listed),
        ["forge-bash__fail", "forge-bash__run", "fs__read"]
    );
    // The configured keys still work beside the stored ones.
    assert_eq!(http.initialize(Some(FORGE_KEY)).await?.status, 200);
    for (case, key) in [("admin key", &admin_key), ("chat key", &chat_key)] {
        let reply = http.initialize(Some(key)).await?;
        assert_eq!(reply.status, 401, "{case}: {}", reply.text);
    }

    store.revoke_api_key("desk").await?;
    let after = http.list(Some(&bot_key), session.as_deref()).await?;
    assert_eq!(after.status, 401, "{}", after.text);
    assert_no_leak("revoked", &after.text);
    served.stop().await;
    store.close().await;
    Ok(())
}

/// A session opened with a stored key ends when the key is revoked: its standing event
/// stream closes (the key check on each request alone would leave it open, fed by server
/// events); a session opened with a live key stays.
#[tokio::test]
async fn the_sessions_of_a_revoked_key_are_closed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = store::Store::connect(&store::sqlite_url(&dir.path().join("keys.db"))).await?;
    store.create_bot(&store::BotSpec::new("forge", "m")).await?;
    let key = |name: &str| store::ApiKeySpec {
        name: name.into(),
        role: store::KeyRole::Bot,
        bot: Some("forge".into()),
    };
    let revoked = store.create_api_key(&key("desk")).await?.secret;
    let kept = store.create_api_key(&key("laptop")).await?.secret;
    let backend = FakeBackend::new([("forge", forge())]);
    let config = mcp_gateway::GatewayConfig {
        key_store: Some(store.clone()),
        key_recheck: std::time::Duration::from_millis(50),
        ..mcp_gateway::GatewayConfig::default()
    };
    let app = mcp_gateway::mcp_router(backend, keys(), &config);
    let served = Served::serve(app, 0, config.shutdown.clone()).await?;
    let http = Http::new(&served.url);
    let open = |key: &str| {
        let key = key.to_owned();
        let http = &http;
        async move {
            let session = http
                .initialize(Some(&key))
                .await?
                .session
                .ok_or_else(|| anyhow::anyhow!("no session"))?;
            let stream = http
                .client
                .get(&http.url)
                .header("accept", "text/event-stream")
                .header("authorization", format!("Bearer {key}"))
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "2025-11-25")
                .send()
                .await?;
            anyhow::ensure!(stream.status() == 200, "GET answered {}", stream.status());
            anyhow::Ok((session, stream))
        }
    };
    let (_, mut revoked_stream) = open(&revoked).await?;
    let (kept_session, _kept_stream) = open(&kept).await?;

    store.revoke_api_key("desk").await?;
    // Ended, cleanly or cut: either way the stream is gone.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while revoked_stream.chunk().await?.is_some() {}
        anyhow::Ok(())
    })
    .await;
    assert!(
        ended.is_ok(),
        "the revoked key's stream is still open: {ended:?}"
    );
    let listed = http.list(Some(&kept), Some(&kept_session)).await?;
    assert_eq!(listed.status, 200, "{}", listed.text);
    served.stop().await;
    store.close().await;
    Ok(())
}

/// Sessions are bounded per bot: opening one past the limit closes the least recently used
/// (its next request is 404, as for any closed session); the others keep working.
#[tokio::test]
async fn a_bot_holds_at_most_its_session_limit() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge()), ("other", other())]);
    let config = mcp_gateway::GatewayConfig {
        max_sessions_per_bot: 3,
        ..mcp_gateway::GatewayConfig::default()
    };
    let app = mcp_gateway::mcp_router(backend, keys(), &config);
    let served = Served::serve(app, 0, config.shutdown.clone()).await?;
    let http = Http::new(&served.url);
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(
            http.initialize(Some(FORGE_KEY))
                .await?
                .session
                .unwrap_or_default(),
        );
    }
    // The first is used again, so the second is now the least recently used.
    assert_eq!(
        http.list(Some(FORGE_KEY), Some(&sessions[0])).await?.status,
        200
    );
    let other = http
        .initialize(Some(OTHER_KEY))
        .await?
        .session
        .unwrap_or_default();
    let fourth = http
        .initialize(Some(FORGE_KEY))
        .await?
        .session
        .unwrap_or_default();
    let statuses = [
        http.list(Some(FORGE_KEY), Some(&sessions[0])).await?.status,
        http.list(Some(FORGE_KEY), Some(&sessions[1])).await?.status,
        http.list(Some(FORGE_KEY), Some(&sessions[2])).await?.status,
        http.list(Some(FORGE_KEY), Some(&fourth)).await?.status,
        http.list(Some(OTHER_KEY), Some(&other)).await?.status,
    ];
    assert_eq!(statuses, [200, 404, 200, 200, 200]);
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_face_is_read_from_the_path_the_client_sent() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend, keys(), 0).await?;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    // (below `/mcp`, status, error code)
    let cases: [(&str, u16, Option<&str>); 6] = [
        ("", 200, None),
        ("/", 200, None),
        ("/fs", 200, None),
        // The mount cuts `/mcp/` off these; the face is read from what was sent.
        ("//fs", 404, Some("not_found")),
        ("//", 404, Some("not_found")),
        ("/fs/deeper", 404, Some("not_found")),
    ];
    let mut seen = Vec::new();
    for (below, _, _) in cases {
        let reply = Http::new(&format!("{}{below}", served.url))
            .post(Some(FORGE_KEY), None, initialize.clone())
            .await?;
        let code = reply.body["error"]["code"].as_str().map(str::to_owned);
        seen.push((below, reply.status, code));
    }
    let expected: Vec<_> = cases
        .iter()
        .map(|(below, status, code)| (*below, *status, code.map(str::to_owned)))
        .collect();
    assert_eq!(seen, expected);
    served.stop().await;
    Ok(())
}
