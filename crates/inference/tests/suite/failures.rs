//! Provider failures end the turn with a typed error event: an HTTP error
//! status, a stream that stalls (before or after its first bytes), and a
//! server that cannot be reached (its URL shown without credentials), and a redirect (not
//! followed: it would carry the key elsewhere).

use std::time::Duration;

use inference::providers::{OpenAiSettings, ProviderKind};
use inference::{
    ChatTurn, Message, ProviderError, ProviderSettings, Providers, TurnEnd, TurnEvent,
};
use pretty_assertions::assert_eq;
use test_support::{FakeLlm, FakeReply, Wire};

use super::harness::{WIRES, bounded, model, provider, run};

fn kind(wire: Wire) -> ProviderKind {
    match wire {
        Wire::OpenAi => ProviderKind::OpenAi,
        Wire::Anthropic => ProviderKind::Anthropic,
    }
}

#[tokio::test]
async fn provider_http_error_ends_the_turn_with_status_and_body() -> anyhow::Result<()> {
    for wire in WIRES {
        let body = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
        let fake = FakeLlm::start([FakeReply::http_error(500, body)]).await?;
        let turn = ChatTurn::new(provider(&fake, wire, Duration::from_secs(30))?, model(wire))
            .with_messages(vec![Message::user("Hi")]);

        let (events, outcome) = run(turn).await?;

        let error = ProviderError::Http {
            provider: kind(wire),
            status: 500,
            body_excerpt: body.into(),
        };
        assert_eq!(
            events,
            vec![
                TurnEvent::StepStarted { step: 0 },
                TurnEvent::Failed {
                    error: error.clone()
                },
            ],
            "{wire:?}"
        );
        assert_eq!(outcome.end, TurnEnd::Failed(error), "{wire:?}");
        assert_eq!(outcome.messages, vec![], "{wire:?}");
    }
    Ok(())
}

#[tokio::test]
async fn stalled_stream_ends_the_turn_after_the_idle_timeout() -> anyhow::Result<()> {
    let idle = Duration::from_secs(1);
    for wire in WIRES {
        let fake =
            FakeLlm::start([FakeReply::text(["Hel"]).then_hang(), FakeReply::hang()]).await?;
        let stalled = ProviderError::Stalled {
            provider: kind(wire),
            idle,
        };

        let mid_stream = ChatTurn::new(provider(&fake, wire, idle)?, model(wire))
            .with_messages(vec![Message::user("Hi")]);
        let (events, outcome) = run(mid_stream).await?;
        assert_eq!(
            events,
            vec![
                TurnEvent::StepStarted { step: 0 },
                TurnEvent::TextDelta("Hel".into()),
                TurnEvent::Failed {
                    error: stalled.clone()
                },
            ],
            "{wire:?}"
        );
        assert_eq!(outcome.end, TurnEnd::Failed(stalled.clone()), "{wire:?}");

        let silent = ChatTurn::new(provider(&fake, wire, idle)?, model(wire))
            .with_messages(vec![Message::user("Hi")]);
        let (events, _) = run(silent).await?;
        assert_eq!(
            events,
            vec![
                TurnEvent::StepStarted { step: 0 },
                TurnEvent::Failed {
                    error: stalled.clone()
                },
            ],
            "{wire:?}"
        );
        // Both stalled responses were dropped by the client.
        bounded(
            "the fake to see both clients go",
            fake.wait_for_disconnects(2),
        )
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn unreachable_provider_is_a_connect_error() -> anyhow::Result<()> {
    // A port that was just free: nothing listens there any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // Credentials in the base URL's user information are never shown.
    let base_url = format!("http://user:s3cret-pw@{addr}/v1");
    drop(listener);
    let providers = Providers::new(ProviderSettings {
        openai: OpenAiSettings {
            api_key: None,
            base_url: Some(base_url.clone()),
        },
        ..ProviderSettings::default()
    })?;
    let selected = providers.for_bot("local", "openai:llama")?;
    let turn =
        ChatTurn::new(selected.provider, selected.model).with_messages(vec![Message::user("Hi")]);

    let (events, outcome) = run(turn).await?;

    let shown = format!("{events:?} {:?}", outcome.end);
    assert!(!shown.contains("s3cret-pw"), "{shown}");
    if let TurnEnd::Failed(error) = &outcome.end {
        assert!(!error.to_string().contains("s3cret-pw"), "{error}");
    }
    let TurnEnd::Failed(ProviderError::Connect { provider, url, .. }) = outcome.end else {
        anyhow::bail!("expected a connect error, got {:?}", outcome.end);
    };
    assert_eq!(provider, ProviderKind::OpenAi);
    assert_eq!(url, format!("http://…@{addr}/v1/chat/completions"));
    assert!(
        matches!(
            events.last(),
            Some(TurnEvent::Failed {
                error: ProviderError::Connect { .. }
            })
        ),
        "{events:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_redirect_is_not_followed_with_the_key() -> anyhow::Result<()> {
    // What a redirect would reach: a provider that answers, and records what it got.
    let elsewhere = FakeLlm::start([FakeReply::text(["Hello"])]).await?;
    let target = format!("{}/v1/messages", elsewhere.anthropic_base_url());
    let redirector = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}", redirector.local_addr()?);
    let answering = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let (mut stream, _) = redirector.accept().await?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await?;
            head.push(byte[0]);
        }
        let answer = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(answer.as_bytes()).await?;
        anyhow::Ok(())
    });
    let providers = Providers::new(ProviderSettings {
        anthropic: inference::providers::AnthropicSettings {
            api_key: Some("sk-ant-not-for-elsewhere".to_owned()),
            base_url: Some(base_url),
        },
        ..ProviderSettings::default()
    })?;
    let selected = providers.for_bot("local", "anthropic:claude-test")?;
    let turn =
        ChatTurn::new(selected.provider, selected.model).with_messages(vec![Message::user("Hi")]);

    let (_, outcome) = run(turn).await?;
    bounded("the redirector to answer", answering).await???;

    let TurnEnd::Failed(ProviderError::Http { status, .. }) = outcome.end else {
        anyhow::bail!(
            "expected the redirect as an HTTP error, got {:?}",
            outcome.end
        );
    };
    assert_eq!(status, 307);
    assert_eq!(elsewhere.requests().len(), 0, "the key went elsewhere");
    Ok(())
}
