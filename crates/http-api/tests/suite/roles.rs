//! Keys with roles: every route the router serves × {no key, wrong key, chat, bot, admin,
//! revoked} (configured and stored keys), with the status each gets, each refusal listed in
//! the route's OpenAPI responses. A chat key reaches the chat routes only (the OpenAPI document
//! marks them `x-botcraft-access: chat`, checked against the router in `openapi::tests`); on
//! every admin route it gets 403, whatever the route would do.

use axum::body::Body;
use axum::http::Request;
use http_api::{Access, RouteSpec};
use pretty_assertions::assert_eq;
use store::{ApiKeySpec, KeyRole};

use super::harness::{ADMIN_KEY, CHAT_KEY, Fixture};

/// `path` with each `{param}` filled.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| {
            if part.starts_with('{') {
                "no-such-thing"
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The keys a request may carry in the route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presented {
    None,
    Wrong,
    /// `BOTCRAFT_CHAT_KEYS`.
    ConfiguredChat,
    /// `BOTCRAFT_API_KEY`.
    ConfiguredAdmin,
    StoredChat,
    StoredBot,
    StoredAdmin,
    /// A stored admin key, revoked.
    Revoked,
}

/// The statuses the OpenAPI document lists for `method path`.
fn documented_statuses(method: &str, path: &str) -> Vec<String> {
    let doc: serde_json::Value =
        serde_json::from_str(http_api::openapi::OPENAPI_JSON).expect("the document parses");
    doc["paths"][path][method.to_lowercase()]["responses"]
        .as_object()
        .map(|responses| responses.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn every_route_answers_each_role_as_its_access_says() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    fx.add_bot("helper", "openai:gpt-test", &[]).await?;
    let key = |name: &str, role: KeyRole, bot: Option<&str>| ApiKeySpec {
        name: name.into(),
        role,
        bot: bot.map(str::to_owned),
    };
    let stored_chat = fx
        .store
        .create_api_key(&key("front", KeyRole::Chat, None))
        .await?;
    let stored_bot = fx
        .store
        .create_api_key(&key("desk", KeyRole::Bot, Some("helper")))
        .await?;
    let stored_admin = fx
        .store
        .create_api_key(&key("ops", KeyRole::Admin, None))
        .await?;
    let revoked = fx
        .store
        .create_api_key(&key("old", KeyRole::Admin, None))
        .await?;
    fx.store.revoke_api_key("old").await?;
    let secret = |presented: Presented| match presented {
        Presented::None => None,
        Presented::Wrong => Some("wrong-key".to_owned()),
        Presented::ConfiguredChat => Some(CHAT_KEY.to_owned()),
        Presented::ConfiguredAdmin => Some(ADMIN_KEY.to_owned()),
        Presented::StoredChat => Some(stored_chat.secret.clone()),
        Presented::StoredBot => Some(stored_bot.secret.clone()),
        Presented::StoredAdmin => Some(stored_admin.secret.clone()),
        Presented::Revoked => Some(revoked.secret.clone()),
    };
    let all = [
        Presented::None,
        Presented::Wrong,
        Presented::ConfiguredChat,
        Presented::ConfiguredAdmin,
        Presented::StoredChat,
        Presented::StoredBot,
        Presented::StoredAdmin,
        Presented::Revoked,
    ];
    let (_, routes) = http_api::routes::app_with_routes(fx.state.clone());
    let mut checked = 0;
    let mut admin_routes = 0;
    for RouteSpec {
        method,
        path,
        access,
    } in routes
    {
        if path == "/metrics" {
            continue;
        }
        let documented = documented_statuses(method, path);
        for presented in all {
            let mut request = Request::builder()
                .method(method)
                .uri(concrete(path))
                .header("content-type", "application/json");
            if let Some(key) = secret(presented) {
                request = request.header("authorization", format!("Bearer {key}"));
            }
            // An empty object: enough to reach authorisation; handlers may refuse it after.
            let reply = fx.send(request.body(Body::from("{}"))?).await?;
            let status = reply.status.as_u16();
            let role = match presented {
                Presented::ConfiguredChat | Presented::StoredChat => Some(KeyRole::Chat),
                Presented::ConfiguredAdmin | Presented::StoredAdmin => Some(KeyRole::Admin),
                Presented::StoredBot => Some(KeyRole::Bot),
                Presented::None | Presented::Wrong | Presented::Revoked => None,
            };
            let expected_refusal = match (access, role) {
                (Access::Public, _)
                | (_, Some(KeyRole::Admin))
                | (Access::Chat, Some(KeyRole::Chat)) => None,
                (_, None) => Some(401),
                (_, Some(_)) => Some(403),
            };
            match expected_refusal {
                None => assert!(
                    status != 401 && status != 403,
                    "{method} {path} with {presented:?}: {status} {}",
                    reply.body
                ),
                Some(expected) => {
                    assert_eq!(
                        status, expected,
                        "{method} {path} with {presented:?}: {}",
                        reply.body
                    );
                    assert!(
                        documented.contains(&expected.to_string()),
                        "{method} {path}: {expected} is not in the OpenAPI document ({documented:?})"
                    );
                    let secrets = [
                        CHAT_KEY,
                        ADMIN_KEY,
                        &stored_admin.secret,
                        &stored_chat.secret,
                    ];
                    assert!(secrets.iter().all(|s| !reply.body.contains(s)));
                }
            }
            checked += 1;
        }
        admin_routes += usize::from(access == Access::Admin);
    }
    assert!(
        admin_routes >= 18 && checked >= 200,
        "{admin_routes} admin routes, {checked} cases"
    );
    fx.finish().await;
    Ok(())
}

/// Keys made through `/api/keys`: shown once, listed without their secret, known to
/// `/api/whoami`, and failing on the request after their revocation.
#[tokio::test]
async fn a_key_made_through_the_api_works_until_revoked() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let with = |key: &str, method: &str, uri: &str, body: &str| {
        Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
    };
    let reply = fx
        .send(with(
            ADMIN_KEY,
            "POST",
            "/api/keys",
            r#"{"name": "front", "role": "chat"}"#,
        )?)
        .await?;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let created: serde_json::Value = serde_json::from_str(&reply.body)?;
    let secret = created["secret"].as_str().expect("a secret").to_owned();
    assert_eq!(
        (created["name"].as_str(), created["role"].as_str()),
        (Some("front"), Some("chat"))
    );

    let listed = fx.send(with(ADMIN_KEY, "GET", "/api/keys", "")?).await?;
    assert_eq!(listed.status, 200);
    assert!(listed.body.contains("\"front\"") && !listed.body.contains(&secret));
    assert!(!listed.body.contains("digest"), "{}", listed.body);

    let whoami = fx.send(with(&secret, "GET", "/api/whoami", "")?).await?;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&whoami.body)?,
        serde_json::json!({"role": "chat", "name": "front"})
    );
    assert_eq!(
        fx.send(with(&secret, "GET", "/api/bots", "")?)
            .await?
            .status,
        200
    );
    assert_eq!(
        fx.send(with(&secret, "GET", "/api/keys", "")?)
            .await?
            .status,
        403
    );

    let revoked = fx
        .send(with(ADMIN_KEY, "DELETE", "/api/keys/front", "")?)
        .await?;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(
        fx.send(with(&secret, "GET", "/api/bots", "")?)
            .await?
            .status,
        401
    );

    let cases = [
        (r#"{"name": "front", "role": "chat"}"#, 409),
        (r#"{"name": "b", "role": "bot"}"#, 422),
        (r#"{"name": "b", "role": "bot", "bot": "ghost"}"#, 404),
        (r#"{"name": "b", "role": "root"}"#, 422),
        (r#"{"name": "b", "role": "chat", "extra": 1}"#, 422),
        (r#"{"name": "b", "role": "admin", "bot": "ghost"}"#, 422),
        (r#"{"name": "b", "role": "chat", "bot": "ghost"}"#, 404),
    ];
    for (body, status) in cases {
        let reply = fx.send(with(ADMIN_KEY, "POST", "/api/keys", body)?).await?;
        assert_eq!(reply.status, status, "{body}: {}", reply.body);
    }
    let unknown = fx
        .send(with(ADMIN_KEY, "DELETE", "/api/keys/nobody", "")?)
        .await?;
    assert_eq!(unknown.status, 404);
    fx.finish().await;
    Ok(())
}

/// The chat key does what a chat front end needs: chat, read bots, search tools.
#[tokio::test]
async fn a_chat_key_chats_reads_bots_and_searches_but_never_configures() -> anyhow::Result<()> {
    let fx = Fixture::new([test_support::FakeReply::text(["hello"])]).await?;
    fx.add_bot("helper", "openai:gpt-test", &[]).await?;
    let get = |uri: &str| {
        Request::get(uri)
            .header("authorization", format!("Bearer {CHAT_KEY}"))
            .body(Body::empty())
    };
    for uri in [
        "/api/bots",
        "/api/bots/helper",
        "/api/bots/helper/tools",
        "/api/tools/search?q=echo",
    ] {
        let reply = fx.send(get(uri)?).await?;
        assert_eq!(reply.status, 200, "{uri}: {}", reply.body);
    }
    let chat = Request::post("/api/ai/chat")
        .header("authorization", format!("Bearer {CHAT_KEY}"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Body::from(
            serde_json::json!({"botId": "helper", "messages": [
                {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})
            .to_string(),
        ))?;
    let reply = fx.send(chat).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.body.contains("hello"), "{}", reply.body);
    // Creating a server (any command) is the admin's.
    let create = Request::post("/api/servers")
        .header("authorization", format!("Bearer {CHAT_KEY}"))
        .header("content-type", "application/json")
        .body(Body::from(r#"{"name": "evil", "command": "/bin/sh"}"#))?;
    let reply = fx.send(create).await?;
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(fx.store.server_by_name("evil").await?.is_none());
    fx.finish().await;
    Ok(())
}

/// A chat key made for one bot reaches that bot alone, by name or id: it chats with it, reads
/// it and searches its tools; every other bot answers as a bot that does not exist (the list
/// shows its bot alone). The key follows its bot through a rename and goes with it.
#[tokio::test]
async fn a_chat_key_made_for_one_bot_reaches_that_bot_alone() -> anyhow::Result<()> {
    let fx = Fixture::new([test_support::FakeReply::text(["hello"])]).await?;
    // Each bot's server, its tools listed once (a search reads cached lists).
    let wait = std::time::Duration::from_secs(60);
    let mut servers = Vec::new();
    for name in ["mine", "theirs"] {
        servers.push(fx.add_fake_server(name, |s| s).await?);
        tokio::time::timeout(wait, fx.manager.get_tools(name)).await??;
        tokio::time::timeout(wait, fx.manager.stop_server(name)).await??;
    }
    let helper = fx
        .add_bot("helper", "openai:gpt-test", &[&servers[0]])
        .await?;
    let other = fx
        .add_bot("other", "openai:gpt-test", &[&servers[1]])
        .await?;
    let with = |key: &str, method: &str, uri: &str, body: String| {
        Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(Body::from(body))
    };
    let made = fx
        .send(with(
            ADMIN_KEY,
            "POST",
            "/api/keys",
            r#"{"name": "front", "role": "chat", "bot": "helper"}"#.to_owned(),
        )?)
        .await?;
    assert_eq!(made.status, 201, "{}", made.body);
    let made: serde_json::Value = serde_json::from_str(&made.body)?;
    assert_eq!(made["bot"], "helper");
    let key = made["secret"].as_str().expect("a secret").to_owned();
    let whoami = || async {
        let reply = fx
            .send(with(&key, "GET", "/api/whoami", String::new())?)
            .await?;
        anyhow::Ok((reply.status, reply.body))
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&whoami().await?.1)?,
        serde_json::json!({"role": "chat", "name": "front", "bot": "helper"})
    );
    let listed = fx
        .send(with(&key, "GET", "/api/bots", String::new())?)
        .await?;
    let names: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&listed.body)?
        .iter()
        .filter_map(|bot| bot["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["helper"], "{}", listed.body);
    let chat = |bot: &str| {
        serde_json::json!({"botId": bot, "messages": [
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})
        .to_string()
    };
    // (method, uri, body), each asked for every bot by name and by id, and for one that is not
    // there: the other bot answers exactly as that one does.
    let cases = [
        ("GET", "/api/bots/{}", String::new()),
        ("GET", "/api/bots/{}/tools", String::new()),
        ("GET", "/api/tools/search?q=echo&bot={}", String::new()),
        ("POST", "/api/ai/chat", chat("{}")),
    ];
    for (method, uri, body) in &cases {
        let ask = |bot: &str| {
            let (uri, body) = (uri.replace("{}", bot), body.replace("{}", bot));
            let request = with(&key, method, &uri, body);
            async { anyhow::Ok(fx.send(request?).await?) }
        };
        let ghost = ask("ghost").await?;
        assert_eq!(ghost.status, 404, "{method} {uri}: {}", ghost.body);
        for asked in [other.name.as_str(), other.id.as_str()] {
            let refused = ask(asked).await?;
            assert_eq!(
                (refused.status, refused.body.replace(asked, "ghost")),
                (ghost.status, ghost.body.clone()),
                "{method} {uri} for {asked}"
            );
        }
        // The chat's one reply is spent by the first; the id's chat gets the fake's error.
        for asked in [helper.name.as_str(), helper.id.as_str()] {
            let reply = ask(asked).await?;
            assert_ne!(
                reply.status, 404,
                "{method} {uri} for {asked}: {}",
                reply.body
            );
            if *method == "GET" {
                assert_eq!(
                    reply.status, 200,
                    "{method} {uri} for {asked}: {}",
                    reply.body
                );
            }
        }
    }
    // Searching without naming a bot searches its bot's tools, where an unbound chat key
    // searches every server's.
    let results = |key: &str| {
        let request = with(key, "GET", "/api/tools/search?q=echo", String::new());
        async {
            let reply = fx.send(request?).await?;
            assert_eq!(reply.status, 200, "{}", reply.body);
            let answer: serde_json::Value = serde_json::from_str(&reply.body)?;
            let mut tools: Vec<String> = answer["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|found| found["qualifiedName"].as_str().map(str::to_owned))
                .collect();
            tools.sort();
            anyhow::Ok(tools)
        }
    };
    let bound = results(&key).await?;
    assert!(bound.contains(&"mine__echo".to_owned()), "{bound:?}");
    assert!(
        bound.iter().all(|tool| tool.starts_with("mine__")),
        "{bound:?}"
    );
    let open = results(CHAT_KEY).await?;
    for tool in ["mine__echo", "theirs__echo"] {
        assert!(open.contains(&tool.to_owned()), "{open:?}");
    }
    // An unbound chat key still reaches every bot.
    let reply = fx
        .send(with(CHAT_KEY, "GET", "/api/bots/other", String::new())?)
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);

    // Renamed, the bot keeps its key; deleted, it takes the key with it.
    let mut renamed = store::BotSpec::new("helper2", &helper.model);
    renamed.system_prompt = helper.system_prompt.clone();
    fx.store.update_bot(&helper.id, &renamed).await?;
    let reply = fx
        .send(with(&key, "GET", "/api/bots/helper2", String::new())?)
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(whoami().await?.1.contains("helper2"));
    fx.store.delete_bot(&helper.id).await?;
    assert_eq!(whoami().await?.0, 401);
    fx.finish().await;
    Ok(())
}
