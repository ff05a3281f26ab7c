//! Keys with roles: every route the router serves × {no key, wrong key, chat key, admin key},
//! with the status each gets. A chat key reaches the chat routes only (the OpenAPI document
//! marks them `x-botcraft-access: chat`, checked against the router in `openapi::tests`); on
//! every admin route it gets 403, whatever the route would do.

use axum::body::Body;
use axum::http::Request;
use http_api::{Access, RouteSpec};
use pretty_assertions::assert_eq;

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

#[tokio::test]
async fn every_route_answers_each_role_as_its_access_says() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
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
        for key in [None, Some("wrong-key"), Some(CHAT_KEY), Some(ADMIN_KEY)] {
            let mut request = Request::builder()
                .method(method)
                .uri(concrete(path))
                .header("content-type", "application/json");
            if let Some(key) = key {
                request = request.header("authorization", format!("Bearer {key}"));
            }
            // An empty object: enough to reach authorisation; handlers may refuse it after.
            let reply = fx.send(request.body(Body::from("{}"))?).await?;
            let status = reply.status.as_u16();
            let role = match key {
                Some(CHAT_KEY) => "chat",
                Some(ADMIN_KEY) => "admin",
                Some(_) => "wrong",
                None => "none",
            };
            let allowed = matches!(
                (access, role),
                (Access::Public, _) | (_, "admin") | (Access::Chat, "chat")
            );
            let expected_refusal = match role {
                "none" | "wrong" => 401,
                _ => 403,
            };
            if allowed {
                assert!(
                    status != 401 && status != 403,
                    "{method} {path} with {role}: {status} {}",
                    reply.body
                );
            } else {
                assert_eq!(
                    status, expected_refusal,
                    "{method} {path} with {role}: {}",
                    reply.body
                );
                assert!(!reply.body.contains(CHAT_KEY) && !reply.body.contains(ADMIN_KEY));
            }
            checked += 1;
        }
        admin_routes += usize::from(access == Access::Admin);
    }
    assert!(
        admin_routes >= 15 && checked >= 80,
        "{admin_routes} admin routes, {checked} cases"
    );
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
