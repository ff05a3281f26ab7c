//! `"Bot"` writes and reads.

use pretty_assertions::assert_eq;
use store::{ApprovalPolicy, Bot, BotSpec, StoreError, ToolLoadingMode, ValidationError};

use super::harness::{START_MS, TestDb};

async fn created_bot_reads_back_whole(db: &TestDb) -> anyhow::Result<()> {
    let spec = BotSpec {
        name: "helper".into(),
        model: "openai/gpt-4.1".into(),
        system_prompt: "Be brief.".into(),
        step_limit: 7,
        tool_loading_mode: ToolLoadingMode::Deferred,
        vision: true,
        max_tool_result_chars: 2_000,
        native_tool_approval: ApprovalPolicy::Writes,
    };
    let created = db.store.create_bot(&spec).await?;
    let expected = Bot {
        id: created.id.clone(),
        name: "helper".into(),
        model: "openai/gpt-4.1".into(),
        system_prompt: "Be brief.".into(),
        step_limit: 7,
        tool_loading_mode: ToolLoadingMode::Deferred,
        vision: true,
        max_tool_result_chars: 2_000,
        native_tool_approval: ApprovalPolicy::Writes,
        created_at: START_MS,
        updated_at: START_MS,
    };
    assert_eq!(created, expected);
    assert_eq!(
        db.store.bot_by_name("helper").await?,
        Some(expected.clone())
    );
    assert_eq!(db.store.bots().await?, vec![expected]);
    Ok(())
}

async fn new_bot_loads_tools_in_auto_mode(db: &TestDb) -> anyhow::Result<()> {
    let from_json: BotSpec = serde_json::from_str(r#"{"name": "b", "model": "m"}"#)?;
    assert_eq!(from_json, BotSpec::new("b", "m"));
    let created = db.store.create_bot(&from_json).await?;
    assert_eq!(
        (
            created.tool_loading_mode,
            created.step_limit,
            created.system_prompt
        ),
        (ToolLoadingMode::Auto, 10, String::new())
    );
    Ok(())
}

async fn every_tool_loading_mode_round_trips(db: &TestDb) -> anyhow::Result<()> {
    for mode in [
        ToolLoadingMode::Eager,
        ToolLoadingMode::Deferred,
        ToolLoadingMode::Auto,
    ] {
        let mut spec = BotSpec::new(format!("bot-{}", mode.as_str()), "m");
        spec.tool_loading_mode = mode;
        let created = db.store.create_bot(&spec).await?;
        let read = db
            .store
            .bot(&created.id)
            .await?
            .map(|bot| bot.tool_loading_mode);
        assert_eq!(read, Some(mode));
    }
    Ok(())
}

async fn duplicate_or_invalid_bots_are_refused(db: &TestDb) -> anyhow::Result<()> {
    db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let error = db.store.create_bot(&BotSpec::new("b", "other")).await;
    assert!(
        matches!(&error, Err(StoreError::DuplicateBotName { name }) if name == "b"),
        "{error:?}"
    );
    let mut zero_steps = BotSpec::new("c", "m");
    zero_steps.step_limit = 0;
    let mut no_result_text = BotSpec::new("c", "m");
    no_result_text.max_tool_result_chars = 0;
    let mut empty_globs = BotSpec::new("c", "m");
    empty_globs.native_tool_approval = ApprovalPolicy::Tools(vec![]);
    let cases = [
        (
            empty_globs,
            ValidationError::BadApproval {
                field: "nativeToolApproval",
                reason: "an empty list asks for nothing: use \"never\"".into(),
            },
        ),
        (
            no_result_text,
            ValidationError::ToolResultCapOutOfRange {
                bot: "c".into(),
                value: 0,
                max: 10_000_000,
            },
        ),
        (
            BotSpec::new("c", " "),
            ValidationError::EmptyModel { bot: "c".into() },
        ),
        (
            zero_steps,
            ValidationError::StepLimitOutOfRange {
                bot: "c".into(),
                value: 0,
                max: 1000,
            },
        ),
        (
            BotSpec::new("", "m"),
            ValidationError::EmptyName { entity: "bot" },
        ),
    ];
    for (spec, expected) in cases {
        match db.store.create_bot(&spec).await {
            Err(StoreError::Invalid(error)) => assert_eq!(error, expected),
            other => panic!("{spec:?}: expected {expected:?}, got {other:?}"),
        }
    }
    assert_eq!(db.store.bots().await?.len(), 1);
    Ok(())
}

async fn update_bot_keeps_created_at(db: &TestDb) -> anyhow::Result<()> {
    let created = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    db.clock.advance(5);
    let mut spec = BotSpec::new("b", "m2");
    spec.tool_loading_mode = ToolLoadingMode::Eager;
    let updated = db.store.update_bot(&created.id, &spec).await?;
    assert_eq!(
        updated,
        Bot {
            model: "m2".into(),
            tool_loading_mode: ToolLoadingMode::Eager,
            updated_at: START_MS + 5,
            ..created.clone()
        }
    );
    let error = db.store.update_bot("missing", &spec).await;
    assert!(
        matches!(&error, Err(StoreError::UnknownBot(id)) if id == "missing"),
        "{error:?}"
    );
    Ok(())
}

backend_tests!(
    created_bot_reads_back_whole,
    new_bot_loads_tools_in_auto_mode,
    every_tool_loading_mode_round_trips,
    duplicate_or_invalid_bots_are_refused,
    update_bot_keeps_created_at,
);
