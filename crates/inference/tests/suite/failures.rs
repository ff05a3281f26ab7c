//! Provider failures end the turn with a typed error event: an HTTP error
//! status, a stream that stalls (before or after its first bytes), and a
//! server that cannot be reached.

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
    let base_url = format!("http://{}/v1", listener.local_addr()?);
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

    let TurnEnd::Failed(ProviderError::Connect { provider, url, .. }) = outcome.end else {
        anyhow::bail!("expected a connect error, got {:?}", outcome.end);
    };
    assert_eq!(provider, ProviderKind::OpenAi);
    assert_eq!(url, format!("{base_url}/chat/completions"));
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
