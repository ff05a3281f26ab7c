//! The admin API through the router: servers, bots and bindings CRUD, the process controls,
//! stderr tail, tools and a test call, the importer, the OpenAPI document.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{Fixture, Reply, request};

#[tokio::test]
async fn servers_bots_and_bindings_round_trip() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let binary = test_support::fake_mcp_server_binary()?
        .display()
        .to_string();

    let created = fx
        .send(request(
            "POST",
            "/api/servers",
            Some(&json!({"name": "echoer", "command": binary, "instructions": "Echoes."})),
        ))
        .await?;
    assert_eq!(created.status, 201, "{}", created.body);
    let server = created.json()?;
    assert_eq!(server["timeout"], 30000);
    assert_eq!(server["status"]["state"], "stopped");
    let id = server["id"].as_str().unwrap_or_default().to_owned();

    let by_name = fx.send(request("GET", "/api/servers/echoer", None)).await?;
    assert_eq!(by_name.json()?["id"], id.as_str());

    let updated = fx
        .send(request(
            "PUT",
            &format!("/api/servers/{id}"),
            Some(&json!({"name": "echoer", "command": binary, "timeout": 5000})),
        ))
        .await?;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.json()?["timeout"], 5000);

    let bot = fx
        .send(request(
            "POST",
            "/api/bots",
            Some(&json!({"name": "helper", "model": "openai:gpt-test", "systemPrompt": "Help."})),
        ))
        .await?;
    assert_eq!(bot.status, 201, "{}", bot.body);
    assert_eq!(bot.json()?["stepLimit"], 10);

    let bound = fx
        .send(request(
            "PUT",
            "/api/bots/helper/servers/echoer",
            Some(&json!({"toolFilter": ["echo"]})),
        ))
        .await?;
    assert_eq!(bound.status, 200, "{}", bound.body);
    let bindings = fx
        .send(request("GET", "/api/bots/helper/servers", None))
        .await?
        .json()?;
    assert_eq!(
        bindings,
        json!([{"server": {"id": id, "name": "echoer"}, "enabled": true,
                "toolFilter": ["echo"], "pinnedTools": [], "approval": "never"}])
    );

    // The bot's tools: the native one, and only the filtered MCP tool, qualified.
    let tools = fx
        .send(request("GET", "/api/bots/helper/tools", None))
        .await?
        .json()?;
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    assert_eq!(names(&tools["native"]), ["current_time"]);
    // Listing starts nothing: a server never listed is reported, not started.
    assert_eq!(names(&tools["mcp"]), Vec::<String>::new());
    assert_eq!(tools["unavailable"][0]["server"], "echoer");
    let started = fx
        .send(request("POST", "/api/servers/echoer/start", None))
        .await?;
    assert_eq!(started.status, 200, "{}", started.body);
    let tools = fx
        .send(request("GET", "/api/bots/helper/tools", None))
        .await?
        .json()?;
    assert_eq!(names(&tools["mcp"]), ["echoer__echo"]);
    assert_eq!(tools["mcp"][0]["tool"], "echo");
    assert_eq!(tools["unavailable"], json!([]));

    let unbound = fx
        .send(request("DELETE", "/api/bots/helper/servers/echoer", None))
        .await?;
    assert_eq!(unbound.status, 204);
    let again = fx
        .send(request("DELETE", "/api/bots/helper/servers/echoer", None))
        .await?;
    assert_eq!(
        (again.status.as_u16(), again.error_code()),
        (404, "unknown_binding".into())
    );

    assert_eq!(
        fx.send(request("DELETE", "/api/bots/helper", None))
            .await?
            .status,
        204
    );
    assert_eq!(
        fx.send(request("DELETE", "/api/servers/echoer", None))
            .await?
            .status,
        204
    );
    let listed = fx
        .send(request("GET", "/api/servers", None))
        .await?
        .json()?;
    assert_eq!(listed, json!([]));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn server_controls_logs_tools_and_a_test_call() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    fx.add_fake_server("fake", |s| s.env("FAKE_MCP_STDERR_FLOOD", "3"))
        .await?;

    let started = fx
        .send(request("POST", "/api/servers/fake/start", None))
        .await?;
    assert_eq!(started.status, 200, "{}", started.body);
    let status = started.json()?;
    assert_eq!(status["status"]["state"], "running");
    let first_pid = status["status"]["pid"].clone();
    assert!(first_pid.is_u64());

    let tools = fx
        .send(request("GET", "/api/servers/fake/tools", None))
        .await?
        .json()?;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "env", "sleep", "change_tools"]);

    let called = fx
        .send(request(
            "POST",
            "/api/servers/fake/tools/echo/call",
            Some(&json!({"arguments": {"text": "hi there"}})),
        ))
        .await?
        .json()?;
    assert_eq!(called["content"][0]["text"], "hi there");
    let exposition = fx.state.metrics.encode();
    assert!(
        exposition.contains(
            r#"botcraft_tool_calls_total{server="fake",tool="echo",outcome="ok",path="admin"} 1"#
        ),
        "{exposition}"
    );
    // A tool the server does not list is the caller's mistake: 404, not a server failure.
    let unknown = fx
        .send(request(
            "POST",
            "/api/servers/fake/tools/no_such_tool/call",
            Some(&json!({"arguments": {}})),
        ))
        .await?;
    assert_eq!(
        (unknown.status.as_u16(), unknown.error_code()),
        (404, "unknown_tool".to_owned()),
        "{}",
        unknown.body
    );

    let logs = fx
        .send(request("GET", "/api/servers/fake/logs", None))
        .await?
        .json()?;
    assert_eq!(
        logs["lines"],
        json!(["flood line 1", "flood line 2", "flood line 3"])
    );

    let restarted = fx
        .send(request("POST", "/api/servers/fake/restart", None))
        .await?
        .json()?;
    assert_eq!(restarted["status"]["state"], "running");
    assert_ne!(restarted["status"]["pid"], first_pid);

    let stopped = fx
        .send(request("POST", "/api/servers/fake/stop", None))
        .await?
        .json()?;
    assert_eq!(stopped["status"]["state"], "stopped");
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn import_writes_stdio_and_remote_servers_and_reports_the_rest() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let document = json!({"mcpServers": {
        "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
        "web": {"url": "https://example.invalid/mcp"},
        "socket": {"type": "ws", "url": "wss://example.invalid/mcp"},
    }});
    let reply = fx
        .send(request("POST", "/api/servers/import", Some(&document)))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json()?,
        json!({"created": ["memory", "web"], "updated": [], "skipped": [
            {"name": "socket", "reason": "transport type \"ws\" is not one BotCraft speaks (stdio, http, sse)"}
        ], "notes": []})
    );
    // A registry server.json is told apart by its shape and imported under the name asked.
    let server_json = json!({"server": {"name": "io.example/weather", "description": "Weather", "version": "1.0.0",
        "packages": [{"registryType": "pypi", "identifier": "weather-mcp", "version": "1.0.0", "transport": {"type": "stdio"},
                      "environmentVariables": [{"name": "WEATHER_KEY", "isSecret": true}]}]}});
    let reply = fx
        .send(request(
            "POST",
            "/api/servers/import?name=wx",
            Some(&server_json),
        ))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json()?,
        json!({"created": ["wx"], "updated": [], "skipped": [], "notes": [
            "wx: imported from io.example/weather packages[0]",
            "wx: set WX__WEATHER_KEY in BotCraft's environment and allow it (BOTCRAFT_SERVER_ENV)"
        ]})
    );
    let wx = fx.store.server_by_name("wx").await?.expect("imported");
    assert_eq!(
        (wx.command.as_str(), wx.args.clone()),
        ("uvx", vec!["weather-mcp==1.0.0".to_owned()])
    );
    // The same document again: a registry entry never takes over a server unasked; asked,
    // it replaces the command, env and sandbox (the operator's sandbox named paths the
    // document's env could now point elsewhere).
    let mut confined = wx.spec();
    confined.sandbox = serde_json::from_value(json!({"readWrite": ["${WORKSPACE_ROOT}"]}))?;
    fx.store.update_server(&wx.id, &confined).await?;
    let replaced = fx
        .send(request(
            "POST",
            "/api/servers/import?name=wx&replace=true",
            Some(&server_json),
        ))
        .await?;
    assert_eq!(
        replaced.json()?["updated"],
        json!(["wx"]),
        "{}",
        replaced.body
    );
    let wx_now = fx.store.server_by_name("wx").await?.expect("replaced");
    assert_eq!(
        wx_now.sandbox, wx.sandbox,
        "the sandbox is the default again"
    );
    assert_ne!(wx_now.sandbox, confined.sandbox);
    // Refused, each with why: the same name again without replace=true; a name that reads
    // the same as a variable's prefix (`WX` and `wx`: the document would read wx's variable);
    // an unknown preference; a body that is neither shape.
    let neither = json!({"x": 1});
    let refusals = [
        (
            "/api/servers/import?name=wx",
            &server_json,
            409,
            "server_exists",
        ),
        (
            "/api/servers/import?name=WX",
            &server_json,
            409,
            "variable_shared",
        ),
        (
            "/api/servers/import?prefer=both",
            &server_json,
            400,
            "bad_request",
        ),
        ("/api/servers/import", &neither, 422, "not_mcp_servers"),
    ];
    for (path, body, status, code) in refusals {
        let refused = fx.send(request("POST", path, Some(body))).await?;
        assert_eq!(
            (refused.status.as_u16(), refused.error_code()),
            (status, code.to_owned()),
            "{path}: {}",
            refused.body
        );
    }
    fx.finish().await;
    Ok(())
}

/// The server `name` as stored.
async fn stored_server(fx: &Fixture, name: &str) -> anyhow::Result<store::McpServer> {
    fx.store
        .server_by_name(name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no server {name}"))
}

/// `PUT /api/servers/NAME` with `body`.
async fn put_server(fx: &Fixture, name: &str, body: &Value) -> anyhow::Result<Reply> {
    fx.send(request("PUT", &format!("/api/servers/{name}"), Some(body)))
        .await
}

/// A remote server through the API: its literal header values are never read back, a
/// `${VAR}` reference is; writing the hidden value back keeps the stored one; its status says
/// the transport and the URL without the query.
#[tokio::test]
async fn a_remote_server_round_trips_with_its_header_values_hidden() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let created = fx
        .send(request(
            "POST",
            "/api/servers",
            Some(&json!({
                "name": "hosted",
                "transport": "streamable-http",
                "url": "https://mcp.example.invalid/mcp?team=core",
                "headers": {"Authorization": "Bearer lit3ral-t0ken", "X-Key": "${HOSTED_KEY}"},
            })),
        ))
        .await?;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(!created.body.contains("lit3ral-t0ken"), "{}", created.body);
    let server = created.json()?;
    assert_eq!(
        (
            server["command"].clone(),
            server["headers"].clone(),
            server["status"]["transport"].clone(),
            server["status"]["url"].clone(),
            server["status"]["pid"].clone(),
        ),
        (
            json!(""),
            json!({"Authorization": "[hidden]", "X-Key": "${HOSTED_KEY}"}),
            json!("streamable-http"),
            json!("https://mcp.example.invalid/mcp?…"),
            Value::Null,
        )
    );
    let mut edited = server.clone();
    edited["timeout"] = json!(7000);
    let updated = put_server(&fx, "hosted", &edited).await?;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let stored = stored_server(&fx, "hosted").await?;
    assert_eq!(
        (stored.timeout, stored.headers.get("Authorization").cloned()),
        (7000, Some("Bearer lit3ral-t0ken".to_owned()))
    );
    // Moved to another host with the hidden value sent back: refused, so the stored
    // credential never goes to the new URL; given again, it is taken.
    let mut moved = edited.clone();
    moved["url"] = json!("https://attacker.example.invalid/mcp");
    let refused = put_server(&fx, "hosted", &moved).await?;
    assert_eq!(
        (refused.status.as_u16(), refused.error_code()),
        (422, "header_value_needed".into()),
        "{}",
        refused.body
    );
    moved["headers"]["Authorization"] = json!("Bearer another-t0ken");
    let taken = put_server(&fx, "hosted", &moved).await?;
    assert_eq!(taken.status, 200, "{}", taken.body);
    let stored = stored_server(&fx, "hosted").await?;
    assert_eq!(
        (
            stored.url.as_deref(),
            stored.headers.get("Authorization").map(String::as_str)
        ),
        (
            Some("https://attacker.example.invalid/mcp"),
            Some("Bearer another-t0ken")
        )
    );
    let invalid = fx
        .send(request(
            "POST",
            "/api/servers",
            Some(&json!({"name": "bad", "transport": "sse", "url": "https://u:p@example.invalid/sse"})),
        ))
        .await?;
    assert_eq!(
        (invalid.status.as_u16(), invalid.error_code()),
        (422, "invalid".into())
    );
    fx.finish().await;
    Ok(())
}

/// A stdio server's environment values that read as credentials (by their names, or a URL
/// carrying credentials) are not read back; the others and `${VAR}` references are. Written
/// back hidden, the stored values stay, unless the command changed.
#[tokio::test]
async fn a_servers_credential_like_env_values_are_hidden() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let env = json!({
        "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_lit3ral",
        "OPENAI_API_KEY": "sk-lit3ral",
        "GITLAB_PAT": "glpat-lit3ral",
        "DB": "postgres://app:pw-lit3ral@db/app",
        "DB_ELSEWHERE": "postgres://app:pw-lit3ral@${DB_HOST}/app",
        "FROM_HOST_KEY": "${HOST_KEY}",
        "PATH_PREFIX": "/opt/tools",
        "LOG_LEVEL": "debug",
    });
    let created = fx
        .send(request(
            "POST",
            "/api/servers",
            Some(&json!({"name": "local", "command": "mcp-local", "env": env})),
        ))
        .await?;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(!created.body.contains("lit3ral"), "{}", created.body);
    let server = created.json()?;
    assert_eq!(
        server["env"],
        json!({
            "GITHUB_PERSONAL_ACCESS_TOKEN": "[hidden]",
            "OPENAI_API_KEY": "[hidden]",
            "GITLAB_PAT": "[hidden]",
            "DB": "[hidden]",
            "DB_ELSEWHERE": "[hidden]",
            "FROM_HOST_KEY": "${HOST_KEY}",
            "PATH_PREFIX": "/opt/tools",
            "LOG_LEVEL": "debug",
        })
    );
    let listed = fx.send(request("GET", "/api/servers", None)).await?;
    assert!(!listed.body.contains("lit3ral"), "{}", listed.body);

    let mut edited = server.clone();
    edited["env"]["LOG_LEVEL"] = json!("info");
    let updated = put_server(&fx, "local", &edited).await?;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let stored = stored_server(&fx, "local").await?;
    assert_eq!(
        serde_json::to_value(&stored.env)?,
        json!({
            "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_lit3ral",
            "OPENAI_API_KEY": "sk-lit3ral",
            "GITLAB_PAT": "glpat-lit3ral",
            "DB": "postgres://app:pw-lit3ral@db/app",
            "DB_ELSEWHERE": "postgres://app:pw-lit3ral@${DB_HOST}/app",
            "FROM_HOST_KEY": "${HOST_KEY}",
            "PATH_PREFIX": "/opt/tools",
            "LOG_LEVEL": "info",
        })
    );
    // Another program with the hidden values sent back (another command, the same command
    // told to run something else, or looser confinement): refused.
    for (field, value) in [
        ("command", json!("sh")),
        (
            "args",
            json!(["-c", "echo $GITHUB_PERSONAL_ACCESS_TOKEN >&2"]),
        ),
        ("sandbox", json!({"enabled": false})),
    ] {
        let mut relaunched = edited.clone();
        relaunched[field] = value;
        let refused = put_server(&fx, "local", &relaunched).await?;
        assert_eq!(
            (refused.status.as_u16(), refused.error_code()),
            (422, "env_value_needed".into()),
            "{field}: {}",
            refused.body
        );
    }
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn openapi_document_is_served_with_the_key() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let doc = fx
        .send(request("GET", "/api/openapi.json", None))
        .await?
        .json()?;
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/ai/chat"]["post"].is_object());
    fx.finish().await;
    Ok(())
}

/// `GET /api/servers/{server}/resource?uri=…` reads a resource through the manager: a blob
/// comes back decoded under its MIME type, as an attachment with `nosniff`; a URI the
/// server does not know, a missing query and an unknown server are the caller's mistakes.
#[tokio::test]
async fn a_resource_is_read_as_bytes_through_the_api() -> anyhow::Result<()> {
    use base64::Engine;
    let fixture = Fixture::new([]).await?;
    let binary = test_support::conformance_fixture_binary()?;
    fixture
        .store
        .create_server(&store::McpServerSpec::new(
            "fixture",
            binary.display().to_string(),
        ))
        .await?;
    fixture.manager.load_configs().await?;
    let path = chat_tools::executor::resource_path("fixture", "test://static-binary");
    assert_eq!(
        path,
        "/api/servers/fixture/resource?uri=test%3A%2F%2Fstatic-binary"
    );
    let read = fixture.send(request("GET", &path, None)).await?;
    assert_eq!(read.status, 200, "{}", read.body);
    let header = |name: &str| {
        read.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(
        (
            header("content-type"),
            header("content-disposition"),
            header("x-content-type-options"),
            header("content-security-policy"),
            header("cross-origin-resource-policy"),
        ),
        (
            Some("image/png".to_owned()),
            Some("attachment".to_owned()),
            Some("nosniff".to_owned()),
            Some("sandbox; default-src 'none'".to_owned()),
            Some("same-origin".to_owned()),
        )
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(test_support::conformance_fixture::PNG_1X1)?;
    assert_eq!(read.bytes, png);
    let text = fixture
        .send(request(
            "GET",
            &chat_tools::executor::resource_path("fixture", "test://static-text"),
            None,
        ))
        .await?;
    assert_eq!(text.status, 200);
    assert_eq!(
        text.body,
        "This is the content of the static text resource."
    );
    let cases = [
        (
            "/api/servers/fixture/resource?uri=test%3A%2F%2Fnone",
            404,
            "unknown_resource",
        ),
        ("/api/servers/fixture/resource", 400, "bad_query"),
        ("/api/servers/nobody/resource?uri=x", 404, "unknown_server"),
    ];
    for (path, status, code) in cases {
        let reply = fixture.send(request("GET", path, None)).await?;
        assert_eq!(
            (reply.status.as_u16(), reply.error_code()),
            (status, code.to_owned()),
            "{path}"
        );
    }
    fixture.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_server_added_through_the_api_has_its_tools_listed_in_the_background()
-> anyhow::Result<()> {
    let fx = super::harness::Fixture::with_options(
        [],
        super::harness::Options {
            listing: true,
            ..super::harness::Options::default()
        },
    )
    .await?;
    let mut events = fx.manager.subscribe();
    let binary = test_support::fake_mcp_server_binary()?
        .display()
        .to_string();
    let created = fx
        .send(request(
            "POST",
            "/api/servers",
            Some(&json!({"name": "echoer", "command": binary})),
        ))
        .await?;
    assert_eq!(created.status, 201, "{}", created.body);
    let event = tokio::time::timeout(std::time::Duration::from_secs(20), events.recv())
        .await
        .map_err(|_| anyhow::anyhow!("echoer was not listed within 20 s"))??;
    assert_eq!((event.server.as_str(), event.tool_count), ("echoer", 4));
    // Started for its listing, stopped again: a lazy server stays stopped.
    let mut states = fx.manager.watch_state("echoer")?;
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        states.wait_for(|state| *state == mcp_lifecycle::ServerState::Stopped),
    )
    .await??;
    let health = fx.send(request("GET", "/api/health", None)).await?.json()?;
    assert_eq!(
        (
            &health["toolsNotListed"],
            &health["mcpServers"]["echoer"]["toolsListed"]
        ),
        (&json!(0), &json!(true))
    );
    let refreshed = fx
        .send(request("POST", "/api/servers/echoer/tools/refresh", None))
        .await?;
    assert_eq!(refreshed.json()?, json!({"name": "echoer", "toolCount": 4}));
    fx.finish().await;
    Ok(())
}

/// `/oauth/callback` with an `error` and no flow under way: anyone can link a browser there,
/// so the page says nothing of the link's own text, and it sends the headers of a page that
/// loads nothing and is never framed.
#[tokio::test]
async fn an_oauth_refusal_for_no_flow_under_way_shows_none_of_the_links_text() -> anyhow::Result<()>
{
    let fx = Fixture::new([]).await?;
    for path in [
        "/oauth/callback?error=access_denied&error_description=Your+key+expired.+Re-enter+it+at+https://login.example",
        "/oauth/callback?error=access_denied&state=no-such-flow&error_description=Your+key+expired",
    ] {
        let reply = fx.send(request("GET", path, None)).await?;
        assert_eq!(reply.status, 400, "{path}");
        assert!(
            reply.body.contains("names no authorization under way")
                && !reply.body.contains("expired")
                && !reply.body.contains("access_denied"),
            "{}",
            reply.body
        );
        let header = |name: &str| {
            reply
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            header("content-security-policy").contains("frame-ancestors 'none'"),
            "{:?}",
            reply.headers
        );
        assert_eq!(header("x-content-type-options"), "nosniff");
    }
    fx.finish().await;
    Ok(())
}
