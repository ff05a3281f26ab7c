//! `"ApiKey"`: keys created once, listed without their secret, checked by digest, revoked.

use pretty_assertions::assert_eq;
use store::api_keys::LAST_USED_RESOLUTION_MS;
use store::{ApiKey, ApiKeySpec, BotSpec, KeyRole, StoreError, ValidationError};

use super::harness::{START_MS, TestDb};

fn spec(name: &str, role: KeyRole, bot: Option<&str>) -> ApiKeySpec {
    ApiKeySpec {
        name: name.into(),
        role,
        bot: bot.map(str::to_owned),
    }
}

async fn a_key_is_shown_once_and_found_by_its_secret(db: &TestDb) -> anyhow::Result<()> {
    let created = db
        .store
        .create_api_key(&spec("front", KeyRole::Chat, None))
        .await?;
    let expected = ApiKey {
        id: created.key.id.clone(),
        name: "front".into(),
        role: KeyRole::Chat,
        bot: None,
        bot_id: None,
        created_at: START_MS,
        last_used_at: None,
        revoked_at: None,
    };
    assert_eq!(created.key, expected);
    assert!(created.secret.starts_with("bck_"));
    // Listing never shows the secret or its digest.
    let listed = db.store.api_keys().await?;
    assert_eq!(listed, vec![expected.clone()]);
    let text = serde_json::to_string(&listed)?;
    assert!(!text.contains(&created.secret[4..]), "{text}");

    db.clock.advance(5);
    let found = db.store.key_by_secret(&created.secret).await?;
    let used = ApiKey {
        last_used_at: Some(START_MS + 5),
        ..expected
    };
    assert_eq!(found, Some(used.clone()));
    for wrong in ["", "bck_", &created.secret[..created.secret.len() - 1]] {
        assert_eq!(db.store.key_by_secret(wrong).await?, None, "{wrong:?}");
    }
    // The last use is written at most once per resolution.
    db.clock.advance(LAST_USED_RESOLUTION_MS - 1);
    db.store.key_by_secret(&created.secret).await?;
    assert_eq!(db.store.api_key("front").await?, Some(used.clone()));
    db.clock.advance(1);
    db.store.key_by_secret(&created.secret).await?;
    assert_eq!(
        db.store
            .api_key("front")
            .await?
            .and_then(|k| k.last_used_at),
        Some(START_MS + 5 + LAST_USED_RESOLUTION_MS)
    );
    Ok(())
}

async fn a_revoked_key_fails_and_keeps_its_name(db: &TestDb) -> anyhow::Result<()> {
    let created = db
        .store
        .create_api_key(&spec("ops", KeyRole::Admin, None))
        .await?;
    db.clock.advance(10);
    let revoked = db.store.revoke_api_key("ops").await?;
    assert_eq!(revoked.revoked_at, Some(START_MS + 10));
    assert_eq!(db.store.key_by_secret(&created.secret).await?, None);
    db.clock.advance(10);
    let again = db.store.revoke_api_key("ops").await?;
    assert_eq!(
        again.revoked_at,
        Some(START_MS + 10),
        "first revocation kept"
    );
    let error = db
        .store
        .create_api_key(&spec("ops", KeyRole::Chat, None))
        .await
        .expect_err("the name stays taken");
    assert!(
        matches!(&error, StoreError::DuplicateKeyName { name } if name == "ops"),
        "{error:?}"
    );
    let error = db
        .store
        .revoke_api_key("nobody")
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, StoreError::UnknownKey(name) if name == "nobody"),
        "{error:?}"
    );
    Ok(())
}

async fn a_bot_or_chat_key_names_its_bot_and_goes_with_it(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("forge", "m")).await?;
    let by_name = db
        .store
        .create_api_key(&spec("desk", KeyRole::Bot, Some("forge")))
        .await?;
    let by_id = db
        .store
        .create_api_key(&spec("desk2", KeyRole::Bot, Some(&bot.id)))
        .await?;
    assert_eq!(by_name.key.bot.as_deref(), Some("forge"));
    assert_eq!(by_id.key.bot.as_deref(), Some("forge"));
    let found = db.store.key_by_secret(&by_name.secret).await?;
    assert_eq!(
        found.map(|k| (k.role, k.bot)),
        Some((KeyRole::Bot, Some("forge".into())))
    );
    // A chat key may name the one bot it is for, or none (every bot).
    let bound = db
        .store
        .create_api_key(&spec("front", KeyRole::Chat, Some("forge")))
        .await?;
    let open = db
        .store
        .create_api_key(&spec("any", KeyRole::Chat, None))
        .await?;
    for (key, bot) in [(&bound, Some("forge".to_owned())), (&open, None)] {
        let found = db.store.key_by_secret(&key.secret).await?;
        assert_eq!(found.map(|k| (k.role, k.bot)), Some((KeyRole::Chat, bot)));
    }
    // A rename keeps the key on its bot (by id), under the new name.
    let mut renamed = BotSpec::new("forged", "m");
    renamed.system_prompt = bot.system_prompt.clone();
    db.store.update_bot(&bot.id, &renamed).await?;
    let found = db.store.key_by_secret(&bound.secret).await?;
    assert_eq!(
        found.map(|k| (k.bot, k.bot_id)),
        Some((Some("forged".to_owned()), Some(bot.id.clone())))
    );

    db.store.delete_bot(&bot.id).await?;
    assert_eq!(db.store.key_by_secret(&by_name.secret).await?, None);
    // The chat key bound to the bot went with it: it never reads as a key for every bot.
    assert_eq!(db.store.key_by_secret(&bound.secret).await?, None);
    let left: Vec<String> = db
        .store
        .api_keys()
        .await?
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(left, vec!["any".to_owned()]);
    Ok(())
}

async fn bad_key_specs_are_refused_with_their_reason(db: &TestDb) -> anyhow::Result<()> {
    let cases = [
        (
            spec("", KeyRole::Chat, None),
            ValidationError::EmptyName { entity: "key" },
        ),
        (
            spec("a b", KeyRole::Chat, None),
            ValidationError::BadName {
                entity: "key",
                name: "a b".into(),
            },
        ),
        (
            spec("b", KeyRole::Bot, None),
            ValidationError::BotKeyWithoutBot { key: "b".into() },
        ),
        (
            spec("c", KeyRole::Admin, Some("forge")),
            ValidationError::BotForNonBotKey { key: "c".into() },
        ),
    ];
    for (spec, expected) in cases {
        let error = db.store.create_api_key(&spec).await.expect_err("invalid");
        assert!(
            matches!(&error, StoreError::Invalid(got) if *got == expected),
            "{spec:?}: {error:?}"
        );
    }
    let error = db
        .store
        .create_api_key(&spec("d", KeyRole::Bot, Some("ghost")))
        .await
        .expect_err("unknown bot");
    assert!(
        matches!(&error, StoreError::UnknownBot(bot) if bot == "ghost"),
        "{error:?}"
    );
    assert_eq!(db.store.api_keys().await?, vec![]);
    Ok(())
}

backend_tests!(
    a_key_is_shown_once_and_found_by_its_secret,
    a_revoked_key_fails_and_keeps_its_name,
    a_bot_or_chat_key_names_its_bot_and_goes_with_it,
    bad_key_specs_are_refused_with_their_reason,
);
