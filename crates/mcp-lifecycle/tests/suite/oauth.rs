//! OAuth through the manager, against test-support's fake authorization server in front of
//! the conformance fixture (`conformance-fixture --http ADDR --oauth SECS`): a server that
//! challenges is `needs-auth`; an authorization (discovery, registration, PKCE, `resource`,
//! `iss`) makes it usable; tokens are sealed in the store and survive a new manager; 20
//! concurrent calls at expiry cause one refresh; a token revoked mid-session is refreshed
//! silently and the call sent again; a refused refresh ends in `needs-auth`,
//! once, with no loop; a server whose URL is changed to another host sends it none of the
//! tokens and needs authorization again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::Value;

use mcp_lifecycle::{
    LifecycleError, McpServerManager, OAuthSettings, PrincipalAuthorization, ReconnectHint,
    ServerState,
};
use store::{BotSpec, McpServerSpec, Transport};
use test_support::Served;

use super::harness::{Fixture, settings, text};

const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
const REDIRECT: &str = "http://127.0.0.1:9/oauth/callback";

fn oauth_settings(key: &str) -> OAuthSettings {
    let key = secrets::SecretKey::from_value(key, "test", secrets::KeySource::Variable)
        .expect("a long enough key");
    OAuthSettings {
        redirect_uri: REDIRECT.to_owned(),
        sealer: key.sealer(),
        client_name: "BotCraft test".to_owned(),
        client_metadata_url: None,
        // The app's words, for the errors to carry.
        reconnect_hint: Some(ReconnectHint(std::sync::Arc::new(|server, principal| {
            format!(": reconnect {server} for {principal:?}")
        }))),
    }
}

/// The fixture behind the fake authorization server, tokens living `secs`: (served, origin).
fn oauth_fixture(secs: u64) -> anyhow::Result<(Served, String)> {
    let (served, url) = test_support::conformance_fixture_over_http(
        test_support::loopback_listener(0)?,
        &["--oauth", &secs.to_string()],
    )?;
    Ok((served, url.trim_end_matches("/mcp").to_owned()))
}

/// Whether `text` holds one of the fake authorization server's tokens (`at-` or `rt-` and 32
/// hex digits) in the clear. Not `contains("at-")`: a sealed record is base64url, in which
/// those three characters turn up by chance (64⁻³ per position, two patterns, a record of
/// about 1,400 characters: about 1 % of runs; one CI run failed so).
fn holds_a_token(text: &str) -> bool {
    ["at-", "rt-"].iter().any(|prefix| {
        text.match_indices(prefix).any(|(at, _)| {
            let rest = &text.as_bytes()[at + prefix.len()..];
            rest.len() >= 32
                && rest[..32]
                    .iter()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        })
    })
}

#[test]
fn a_token_in_the_clear_is_seen_and_chance_base64_is_not() {
    let token = format!("at-{}", "0123456789abcdef".repeat(2));
    let cases = [
        (format!(r#"{{"access_token":"{token}"}}"#), true),
        (format!("rt-{}", "a".repeat(32)), true),
        ("v1.TgoPMfrt-RWaFDDat-x".to_owned(), false),
        (format!("rt-{}", "a".repeat(31)), false),
    ];
    for (text, expected) in cases {
        assert_eq!(holds_a_token(&text), expected, "{text}");
    }
}

async fn counters(origin: &str) -> anyhow::Result<Value> {
    Ok(reqwest::get(format!("{origin}/admin/state"))
        .await?
        .json()
        .await?)
}

async fn admin(origin: &str, path: &str) -> anyhow::Result<()> {
    let answer = reqwest::Client::new()
        .post(format!("{origin}{path}"))
        .send()
        .await?;
    anyhow::ensure!(answer.status().is_success(), "{path}: {}", answer.status());
    Ok(())
}

/// Approve `authorization_url` as the person at the login page would: the redirect's query.
async fn approve(origin: &str, authorization_url: &str) -> anyhow::Result<HashMap<String, String>> {
    approve_as(origin, authorization_url, "tester").await
}

/// [`approve`], signed in as `user`.
async fn approve_as(
    origin: &str,
    authorization_url: &str,
    user: &str,
) -> anyhow::Result<HashMap<String, String>> {
    let url = reqwest::Url::parse(authorization_url)?;
    let query = url.query().unwrap_or_default().to_owned();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let page = browser.get(authorization_url).send().await?.text().await?;
    anyhow::ensure!(page.contains("Approve"), "no login page: {page}");
    let answer = browser
        .post(format!("{origin}/authorize/approve"))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body({
            let mut form = reqwest::Url::parse("http://form/")?;
            form.query_pairs_mut()
                .append_pair("request", &query)
                .append_pair("user", user);
            form.query().unwrap_or_default().to_owned()
        })
        .send()
        .await?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| anyhow::anyhow!("no redirect ({})", answer.status()))?;
    anyhow::ensure!(location.starts_with(REDIRECT), "{location}");
    Ok(reqwest::Url::parse(location)?
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect())
}

fn query_of(url: &str) -> HashMap<String, String> {
    reqwest::Url::parse(url)
        .map(|url| {
            url.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

async fn authorize(manager: &McpServerManager, origin: &str) -> anyhow::Result<()> {
    authorize_as(manager, origin, None, "tester").await
}

/// Authorize "hosted" signed in as `user`: the server's account, or `bot`'s own.
async fn authorize_as(
    manager: &McpServerManager,
    origin: &str,
    bot: Option<&str>,
    user: &str,
) -> anyhow::Result<()> {
    let url = manager.oauth_start_for("hosted", bot).await?;
    let redirect = approve_as(origin, &url, user).await?;
    let name = manager
        .oauth_complete(
            &redirect["code"],
            &redirect["state"],
            redirect.get("iss").map(String::as_str),
        )
        .await?;
    assert_eq!(name, "hosted");
    Ok(())
}

fn state_of(manager: &McpServerManager) -> Option<ServerState> {
    manager
        .get_all_statuses()
        .into_iter()
        .find(|status| status.name == "hosted")
        .map(|status| status.state)
}

async fn oauth_fx(origin: &str, key: &str) -> anyhow::Result<Fixture> {
    let fx = Fixture::with(|settings| settings.oauth = Some(oauth_settings(key))).await?;
    fx.add_spec(
        McpServerSpec::remote("hosted", Transport::StreamableHttp, format!("{origin}/mcp"))
            .init_timeout(10_000)
            .timeout(10_000),
    )
    .await?;
    Ok(fx)
}

#[tokio::test]
async fn a_challenging_server_needs_auth_until_authorized_and_its_tokens_are_sealed()
-> anyhow::Result<()> {
    let (_served, origin) = oauth_fixture(3600)?;
    let fx = oauth_fx(&origin, "first key of enough length").await?;

    let refused = fx
        .manager
        .call_tool("hosted", "test_simple_text", None)
        .await;
    let Err(error @ LifecycleError::NeedsAuth { .. }) = &refused else {
        panic!("expected needs-auth, got {refused:?}");
    };
    let message = error.to_string();
    assert!(
        message.contains("needs authorization")
            && message.contains(": reconnect hosted for None, then try again"),
        "{message}"
    );
    assert_eq!(state_of(&fx.manager), Some(ServerState::NeedsAuth));
    // Asked again: the same answer at once, and no new attempt at the server.
    let before = counters(&origin).await?["unauthorized"].clone();
    assert!(matches!(
        fx.manager.get_tools("hosted").await,
        Err(LifecycleError::NeedsAuth { .. })
    ));
    assert_eq!(counters(&origin).await?["unauthorized"], before);

    let url = fx.manager.oauth_start("hosted").await?;
    let query = query_of(&url);
    assert_eq!(
        query.get("code_challenge_method").map(String::as_str),
        Some("S256")
    );
    assert_eq!(query.get("resource"), Some(&format!("{origin}/mcp")));
    assert_eq!(
        query.get("redirect_uri").map(String::as_str),
        Some(REDIRECT)
    );
    let redirect = approve(&origin, &url).await?;
    // A forged issuer is refused and does not spend the flow.
    let forged = fx
        .manager
        .oauth_complete(
            &redirect["code"],
            &redirect["state"],
            Some("http://evil.example"),
        )
        .await;
    assert!(
        matches!(forged, Err(LifecycleError::OAuth { .. })),
        "{forged:?}"
    );
    fx.manager
        .oauth_complete(
            &redirect["code"],
            &redirect["state"],
            redirect.get("iss").map(String::as_str),
        )
        .await?;
    // A state is used once.
    let replay = fx
        .manager
        .oauth_complete(&redirect["code"], &redirect["state"], None)
        .await;
    assert!(
        matches!(replay, Err(LifecycleError::OAuthUnknownState)),
        "{replay:?}"
    );

    let result = fx
        .manager
        .call_tool("hosted", "test_simple_text", None)
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);
    assert_eq!(state_of(&fx.manager), Some(ServerState::Running));
    let state = counters(&origin).await?;
    assert_eq!(
        (
            state["registrations"].as_u64(),
            state["code_exchanges"].as_u64()
        ),
        (Some(1), Some(1)),
        "{state}"
    );

    // Sealed in the store: no token in the clear.
    let server = fx.store.server_by_name("hosted").await?.expect("stored");
    let sealed = fx.store.oauth_record(&server.id).await?.expect("a record");
    assert!(
        sealed.starts_with("v1.") && !holds_a_token(&sealed),
        "{sealed}"
    );
    let status = fx
        .manager
        .oauth_status("hosted")
        .await?
        .expect("an OAuth server");
    assert!(status.authorized);

    // A new manager over the same store and key connects with the stored token; another key
    // cannot read it and needs authorization again.
    let again = McpServerManager::new(server_records::records(fx.store.clone()), {
        let mut s = settings(fx.dir.path());
        s.oauth = Some(oauth_settings("first key of enough length"));
        s
    });
    again.load_configs().await?;
    assert_eq!(
        text(&again.call_tool("hosted", "test_simple_text", None).await?),
        SIMPLE_TEXT
    );
    assert_eq!(counters(&origin).await?["code_exchanges"], 1);
    again.stop_all().await;
    let other_key = McpServerManager::new(server_records::records(fx.store.clone()), {
        let mut s = settings(fx.dir.path());
        s.oauth = Some(oauth_settings("another key of enough length"));
        s
    });
    other_key.load_configs().await?;
    let unreadable = other_key.get_tools("hosted").await;
    assert!(
        matches!(unreadable, Err(LifecycleError::NeedsAuth { .. })),
        "{unreadable:?}"
    );
    other_key.stop_all().await;
    fx.manager.stop_all().await;
    Ok(())
}

/// A redirect with `error` ends its own flow only: a `state` no flow has is refused, and a
/// refused flow cannot be completed afterwards.
#[tokio::test]
async fn a_refused_authorization_ends_its_flow_and_an_unknown_state_is_refused()
-> anyhow::Result<()> {
    let (_served, origin) = oauth_fixture(3600)?;
    let fx = oauth_fx(&origin, "first key of enough length").await?;
    let url = fx.manager.oauth_start("hosted").await?;
    let state = query_of(&url)
        .get("state")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no state in {url}"))?;
    let forged = fx.manager.oauth_refused("not-a-flow").await;
    assert!(
        matches!(forged, Err(LifecycleError::OAuthUnknownState)),
        "{forged:?}"
    );
    assert_eq!(fx.manager.oauth_refused(&state).await?, "hosted");
    let again = fx.manager.oauth_refused(&state).await;
    assert!(
        matches!(again, Err(LifecycleError::OAuthUnknownState)),
        "{again:?}"
    );
    let completed = fx.manager.oauth_complete("any-code", &state, None).await;
    assert!(
        matches!(completed, Err(LifecycleError::OAuthUnknownState)),
        "{completed:?}"
    );
    Ok(())
}

/// The MCP authorization spec has a client verify PKCE in the authorization server's
/// metadata: absent `code_challenge_methods_supported`, or one without `S256`, is refused
/// before anything is registered or sent to a browser; with S256 listed (among others) the
/// flow starts with an S256 challenge.
#[tokio::test]
async fn an_authorization_server_without_s256_pkce_is_refused_before_registration()
-> anyhow::Result<()> {
    let cases: [(&str, Option<&str>); 4] = [
        (
            "/admin/pkce-methods",
            Some("code_challenge_methods_supported"),
        ),
        ("/admin/pkce-methods?methods=plain", Some("lists no S256")),
        ("/admin/pkce-methods?methods=", Some("lists no S256")),
        ("/admin/pkce-methods?methods=plain,S256", None),
    ];
    for (setting, refused) in cases {
        let (_served, origin) = oauth_fixture(3600)?;
        admin(&origin, setting).await?;
        let fx = oauth_fx(&origin, "first key of enough length").await?;
        let started = fx.manager.oauth_start("hosted").await;
        let registrations = counters(&origin).await?["registrations"].as_u64();
        match refused {
            Some(words) => {
                let Err(error @ LifecycleError::OAuth { .. }) = &started else {
                    panic!("{setting}: expected a refusal, got {started:?}");
                };
                let message = error.to_string();
                assert!(
                    message.contains(words) && message.contains("PKCE"),
                    "{setting}: {message}"
                );
                assert_eq!(registrations, Some(0), "{setting}");
            }
            None => {
                let url = started?;
                assert_eq!(
                    query_of(&url)
                        .get("code_challenge_method")
                        .map(String::as_str),
                    Some("S256"),
                    "{setting}"
                );
                assert_eq!(registrations, Some(1), "{setting}");
            }
        }
        fx.manager.stop_all().await;
    }
    Ok(())
}

#[tokio::test]
async fn twenty_calls_at_expiry_refresh_once_and_a_refused_refresh_needs_auth_once()
-> anyhow::Result<()> {
    let (_served, origin) = oauth_fixture(3600)?;
    let fx = oauth_fx(&origin, "a key of enough length here").await?;
    assert!(fx.manager.get_tools("hosted").await.is_err());
    authorize(&fx.manager, &origin).await?;
    fx.manager.start_server("hosted").await?;
    let refreshes = |state: &Value| state["refreshes"].as_u64().unwrap_or_default();
    let before = refreshes(&counters(&origin).await?);

    // An access token revoked mid-session: the 401 is answered by one silent refresh and the
    // call is sent again on the same connection. The token it gets is valid at the server
    // but told to the client as expiring at once (`expires_in: 0`): the next calls are at
    // expiry, with no clock to wait for.
    admin(&origin, "/admin/lifetime?secs=3600&advertised=0").await?;
    admin(&origin, "/admin/revoke-access").await?;
    assert_eq!(
        text(
            &fx.manager
                .call_tool("hosted", "test_simple_text", None)
                .await?
        ),
        SIMPLE_TEXT
    );
    assert_eq!(refreshes(&counters(&origin).await?), before + 1);
    assert_eq!(state_of(&fx.manager), Some(ServerState::Running));

    // 20 calls at once with that token: one refresh (the next token is told as it is).
    admin(&origin, "/admin/lifetime?secs=3600").await?;
    let manager = Arc::clone(&fx.manager);
    let calls = (0..20).map(|_| {
        let manager = Arc::clone(&manager);
        async move { manager.call_tool("hosted", "test_simple_text", None).await }
    });
    for result in futures::future::join_all(calls).await {
        assert_eq!(text(&result?), SIMPLE_TEXT);
    }
    let state = counters(&origin).await?;
    assert_eq!(refreshes(&state), before + 2, "{state}");

    // The authorization server forgets every token: the next call's 401 leads to one refresh
    // attempt, refused; the server is needs-auth, and stays so without asking again.
    admin(&origin, "/admin/revoke-refresh").await?;
    admin(&origin, "/admin/revoke-access").await?;
    let refused = fx
        .manager
        .call_tool("hosted", "test_simple_text", None)
        .await;
    assert!(
        matches!(refused, Err(LifecycleError::NeedsAuth { .. })),
        "{refused:?}"
    );
    assert_eq!(state_of(&fx.manager), Some(ServerState::NeedsAuth));
    for _ in 0..3 {
        let again = fx
            .manager
            .call_tool("hosted", "test_simple_text", None)
            .await;
        assert!(
            matches!(again, Err(LifecycleError::NeedsAuth { .. })),
            "{again:?}"
        );
    }
    let after = counters(&origin).await?;
    assert_eq!(after["refused_refreshes"], 1, "{after}");
    // Authorized again, it works.
    authorize(&fx.manager, &origin).await?;
    assert_eq!(
        text(
            &fx.manager
                .call_tool("hosted", "test_simple_text", None)
                .await?
        ),
        SIMPLE_TEXT
    );
    fx.manager.stop_all().await;
    Ok(())
}

/// How many `/mcp` requests the fake authorization server let through for `user`.
/// The calls the authorization server saw with the team's token and with Bob's.
async fn team_and_bob(origin: &str) -> anyhow::Result<(u64, u64)> {
    Ok((
        calls_of(origin, "team").await?,
        calls_of(origin, "bob").await?,
    ))
}

async fn calls_of(origin: &str, user: &str) -> anyhow::Result<u64> {
    Ok(counters(origin).await?["calls_by_user"][user]
        .as_u64()
        .unwrap_or(0))
}

#[tokio::test]
async fn a_bot_with_its_own_account_calls_on_its_own_connection_and_the_others_keep_the_servers()
-> anyhow::Result<()> {
    let (_served, origin) = oauth_fixture(3600)?;
    let fx = oauth_fx(&origin, "per-bot key of enough length").await?;
    let alice = fx.store.create_bot(&BotSpec::new("alice", "m")).await?;
    let bob = fx.store.create_bot(&BotSpec::new("bob", "m")).await?;
    let call = |bot: &str| {
        let bot = bot.to_owned();
        let manager = Arc::clone(&fx.manager);
        async move {
            manager
                .call_tool_as("hosted", Some(&bot), "test_simple_text", None)
                .await
        }
    };

    // The server's account ("team") serves every bot.
    authorize_as(&fx.manager, &origin, None, "team").await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    assert_eq!(calls_of(&origin, "bob").await?, 0);
    assert!(calls_of(&origin, "team").await? > 0);
    assert_eq!(
        fx.manager.principal_authorizations("hosted").await?,
        Vec::new()
    );

    // Bob gets an account of his own: his calls use it, Alice's still use the team's.
    authorize_as(&fx.manager, &origin, Some(&bob.id), "bob").await?;
    let team_before = calls_of(&origin, "team").await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    let bob_calls = calls_of(&origin, "bob").await?;
    assert!(bob_calls > 0, "bob's call used bob's token");
    assert_eq!(calls_of(&origin, "team").await?, team_before);
    assert_eq!(text(&call(&alice.id).await?), SIMPLE_TEXT);
    assert_eq!(calls_of(&origin, "team").await?, team_before + 1);
    assert_eq!(calls_of(&origin, "bob").await?, bob_calls);
    // The server's own calls (no bot) use the team's too.
    assert_eq!(
        text(
            &fx.manager
                .call_tool("hosted", "test_simple_text", None)
                .await?
        ),
        SIMPLE_TEXT
    );
    assert_eq!(calls_of(&origin, "team").await?, team_before + 2);
    let scopes = vec!["mcp:tools".to_owned(), "offline_access".to_owned()];
    assert_eq!(
        fx.manager.principal_authorizations("hosted").await?,
        vec![PrincipalAuthorization {
            principal: bob.id.clone(),
            authorized: true,
            scopes: scopes.clone(),
            state: ServerState::Running,
            last_error: None,
        }]
    );
    // Sealed apart from the server's, with no token in the clear.
    let server = fx.store.server_by_name("hosted").await?.expect("stored");
    let sealed = fx
        .store
        .bot_oauth_record(&server.id, &bob.id)
        .await?
        .expect("bob's record");
    assert!(
        sealed.starts_with("v1.") && !holds_a_token(&sealed),
        "{sealed}"
    );
    assert_ne!(fx.store.oauth_record(&server.id).await?, Some(sealed));

    // Bob's account is revoked: Bob's connection needs authorization (his own, named in the
    // error), with no fall-back to the team's account; Alice is not affected.
    admin(&origin, "/admin/revoke-user?user=bob").await?;
    let refused = call(&bob.id).await;
    let Err(
        error @ LifecycleError::NeedsAuth {
            principal: Some(named),
            ..
        },
    ) = &refused
    else {
        panic!("expected bob's needs-auth, got {refused:?}");
    };
    assert_eq!(named, &bob.id);
    assert!(
        error
            .to_string()
            .contains(&format!(": reconnect hosted for Some({:?})", bob.id)),
        "{error}"
    );
    assert_eq!(state_of(&fx.manager), Some(ServerState::Running));
    assert_eq!(text(&call(&alice.id).await?), SIMPLE_TEXT);
    let team_now = calls_of(&origin, "team").await?;
    assert!(matches!(
        call(&bob.id).await,
        Err(LifecycleError::NeedsAuth {
            principal: Some(_),
            ..
        })
    ));
    assert_eq!(calls_of(&origin, "team").await?, team_now, "no fall-back");
    let listed = fx.manager.principal_authorizations("hosted").await?;
    assert_eq!(
        listed
            .iter()
            .map(|found| (found.principal.as_str(), found.authorized, found.state))
            .collect::<Vec<_>>(),
        vec![(bob.id.as_str(), false, ServerState::NeedsAuth)]
    );

    // Connected again for Bob, then his own authorization removed: back on the team's.
    authorize_as(&fx.manager, &origin, Some(&bob.id), "bob").await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    fx.manager
        .oauth_sign_out_for("hosted", Some(&bob.id))
        .await?;
    assert_eq!(
        fx.manager.principal_authorizations("hosted").await?,
        Vec::new()
    );
    let before = team_and_bob(&origin).await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    assert_eq!(
        team_and_bob(&origin).await?,
        (before.0 + 1, before.1),
        "on the team's"
    );

    // Connected again for Bob, then signed out through another replica (his record deleted
    // in the store, the change heard here): back on the team's here too, not `needs-auth`.
    authorize_as(&fx.manager, &origin, Some(&bob.id), "bob").await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    fx.store
        .delete_bot_oauth_record(&server.id, &bob.id)
        .await?;
    fx.manager.oauth_records_changed(Some(&server.id)).await;
    let before = team_and_bob(&origin).await?;
    assert_eq!(text(&call(&bob.id).await?), SIMPLE_TEXT);
    assert_eq!(
        team_and_bob(&origin).await?,
        (before.0 + 1, before.1),
        "on the team's"
    );
    fx.manager.stop_all().await;
    Ok(())
}

/// A tool call on the chat path (`call_tool`) or the relay's (`forward`, what `/mcp` and
/// `/mcp/{server}` take): its text, or the error.
async fn call_on(fx: &Fixture, relay: bool) -> Result<String, LifecycleError> {
    if !relay {
        return fx
            .manager
            .call_tool("hosted", "test_simple_text", None)
            .await
            .map(|result| text(&result));
    }
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        rmcp::model::CallToolRequestParams::new("test_simple_text"),
    ));
    match fx
        .manager
        .forward(
            "hosted",
            request,
            mcp_lifecycle::ForwardFor::default(),
            tokio_util::sync::CancellationToken::new(),
        )
        .await?
    {
        rmcp::model::ServerResult::CallToolResult(result) => Ok(text(&result)),
        other => panic!("not a tool result: {other:?}"),
    }
}

#[tokio::test]
async fn chat_and_the_relay_meet_a_dropped_session_then_a_401_alike() -> anyhow::Result<()> {
    let mut seen = Vec::new();
    for relay in [false, true] {
        let fixture = |port: u16| {
            test_support::conformance_fixture_over_http(
                test_support::loopback_listener(port)?,
                &["--oauth", "3600"],
            )
        };
        let (mut served, url) = fixture(0)?;
        let port = test_support::loopback_port(&url)?;
        let origin = url.trim_end_matches("/mcp").to_owned();
        let fx = oauth_fx(&origin, "a key of enough length for the test").await?;
        authorize(&fx.manager, &origin).await?;
        assert_eq!(call_on(&fx, relay).await?, SIMPLE_TEXT, "relay {relay}");
        // The server restarts: its sessions and the tokens it issued are gone. The next call
        // meets the lost session (reconnects), then a 401: the server needs authorization.
        served.kill();
        let (_served, _) = fixture(port)?;
        let error = call_on(&fx, relay).await.err();
        seen.push((
            matches!(error, Some(LifecycleError::NeedsAuth { .. })),
            state_of(&fx.manager),
        ));
        fx.manager.stop_all().await;
    }
    assert_eq!(
        seen,
        [
            (true, Some(ServerState::NeedsAuth)),
            (true, Some(ServerState::NeedsAuth))
        ],
        "chat, then the relay"
    );
    Ok(())
}

/// What a listener standing for another host saw: each request line, and whether any request
/// carried an `Authorization` header or one of the fake authorization server's tokens.
#[derive(Debug, Default)]
struct Seen {
    requests: Vec<String>,
    authorization: bool,
    token: bool,
}

/// A listener on another port of 127.0.0.1, where a changed URL points: it records every
/// request ([`Seen`]); `/mcp` answers `401` with a `Bearer` challenge, everything else `404`.
/// So its OAuth discovery finds no metadata and ends in rmcp's legacy endpoints, which have
/// no issuer: the connect-time issuer check has nothing to compare and lets a stored token
/// through. Returns (its `/mcp` URL, what it saw, its task).
async fn other_host() -> anyhow::Result<(String, Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let task = tokio::spawn({
        let seen = Arc::clone(&seen);
        async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, Arc::clone(&seen)));
            }
        }
    });
    Ok((url, seen, task))
}

/// Read one request (its head, then the body its `Content-Length` announces), record it,
/// answer it and close.
async fn answer(mut stream: tokio::net::TcpStream, seen: Arc<Mutex<Seen>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = Vec::new();
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    while request.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
    let line = head.lines().next().unwrap_or_default().to_owned();
    let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
    {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.authorization |= headers.iter().any(|(name, _)| name == "authorization");
        seen.token |= holds_a_token(&String::from_utf8_lossy(&request));
        seen.requests.push(line);
    }
    let response = if path == "/mcp" {
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"mcp\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    };
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Import an `mcpServers` document pointing "hosted" at `url` (it keeps its id), and have
/// the manager read it.
async fn import_hosted(fx: &Fixture, url: &str) -> anyhow::Result<()> {
    let document = serde_json::json!({"mcpServers": {"hosted": {"url": url}}});
    let plan = store::parse_mcp_servers(&document.to_string())?;
    let report = fx.store.import_servers(&plan).await?;
    assert_eq!(report.updated, vec!["hosted".to_owned()], "{report:?}");
    fx.manager.load_configs().await?;
    Ok(())
}

#[tokio::test]
async fn a_url_changed_to_another_host_gets_none_of_the_tokens_and_needs_authorization_again()
-> anyhow::Result<()> {
    let (_served, origin) = oauth_fixture(3600)?;
    let fx = oauth_fx(&origin, "a key of enough length for moved URLs").await?;
    let bob = fx.store.create_bot(&BotSpec::new("bob", "m")).await?;
    let call_as = |bot: Option<&str>| {
        let bot = bot.map(str::to_owned);
        let manager = Arc::clone(&fx.manager);
        async move {
            manager
                .call_tool_as("hosted", bot.as_deref(), "test_simple_text", None)
                .await
        }
    };
    // The server's account and Bob's own, both in use.
    authorize_as(&fx.manager, &origin, None, "team").await?;
    authorize_as(&fx.manager, &origin, Some(&bob.id), "bob").await?;
    assert_eq!(text(&call_as(None).await?), SIMPLE_TEXT);
    assert_eq!(text(&call_as(Some(bob.id.as_str())).await?), SIMPLE_TEXT);
    let bob_calls = calls_of(&origin, "bob").await?;
    assert!(bob_calls > 0);

    // A shared document is imported: "hosted" (same id) now points at another host.
    let (moved, seen, listener) = other_host().await?;
    import_hosted(&fx, &moved).await?;
    let restarted = fx.manager.restart_server("hosted").await;
    assert!(
        matches!(
            restarted,
            Err(LifecycleError::NeedsAuth {
                principal: None,
                ..
            })
        ),
        "{restarted:?}"
    );
    assert_eq!(state_of(&fx.manager), Some(ServerState::NeedsAuth));
    let bobs = call_as(Some(bob.id.as_str())).await;
    assert!(
        matches!(bobs, Err(LifecycleError::NeedsAuth { .. })),
        "{bobs:?}"
    );
    let status = fx.manager.oauth_status("hosted").await?;
    assert!(
        status.as_ref().is_none_or(|status| !status.authorized),
        "{status:?}"
    );
    {
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            seen.requests
                .iter()
                .any(|line| line.starts_with("POST /mcp ")),
            "the other host was asked: {seen:?}"
        );
        assert!(
            !seen.authorization && !seen.token,
            "no token reached the other host: {seen:?}"
        );
    }

    // The URL put back: the records, kept, are used again (no new authorization).
    import_hosted(&fx, &format!("{origin}/mcp")).await?;
    fx.manager.restart_server("hosted").await?;
    assert_eq!(text(&call_as(None).await?), SIMPLE_TEXT);
    assert_eq!(text(&call_as(Some(bob.id.as_str())).await?), SIMPLE_TEXT);
    assert!(
        calls_of(&origin, "bob").await? > bob_calls,
        "bob's own account"
    );
    assert_eq!(counters(&origin).await?["code_exchanges"], 2);
    listener.abort();
    fx.manager.stop_all().await;
    Ok(())
}
