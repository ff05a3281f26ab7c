//! empty_trash: the two-step confirmation.

use pretty_assertions::assert_eq;
use regex::Regex;
use serde_json::json;

use super::{Fixture, put, tree};

const UNKNOWN: &str = "The confirmation token is unknown or was already used. Nothing was deleted. Call empty_trash without confirm to get a new token.";
const CHANGED: &str = "The trash has changed since the token was issued. Nothing was deleted. Call empty_trash without confirm to review it again and get a new token.";

fn token_of(preview: &str) -> String {
    Regex::new(r#"\{"confirm": "([0-9a-f]{32})"\}"#)
        .expect("regex")
        .captures(preview)
        .unwrap_or_else(|| panic!("no token in: {preview}"))[1]
        .to_owned()
}

async fn fill_trash(fx: &Fixture) {
    put(&fx.repo, "a.md", "12345");
    put(&fx.repo, "dir/b.md", "678");
    fx.ok("trash_file", json!({"path": "a.md"})).await;
    fx.ok("trash_directory", json!({"path": "dir"})).await;
}

#[tokio::test]
async fn nothing_to_empty() {
    let fx = Fixture::start().await;
    assert_eq!(
        fx.ok("empty_trash", json!({})).await,
        "The trash is empty; nothing to delete."
    );
    assert_eq!(
        fx.err("empty_trash", json!({"confirm": "0123"})).await,
        UNKNOWN
    );
}

#[tokio::test]
async fn preview_then_confirm_deletes_once() {
    let fx = Fixture::start().await;
    fill_trash(&fx).await;
    let before = tree(&fx.repo);

    let preview = fx.ok("empty_trash", json!({})).await;
    let token = token_of(&preview);
    insta::assert_snapshot!("empty_trash_preview", preview.replace(&token, "[TOKEN]"));
    assert_eq!(tree(&fx.repo), before, "a preview deletes nothing");

    assert_eq!(
        fx.err("empty_trash", json!({"confirm": "not-the-token"}))
            .await,
        UNKNOWN
    );
    assert_eq!(tree(&fx.repo), before, "a wrong token deletes nothing");

    assert_eq!(
        fx.ok("empty_trash", json!({"confirm": token})).await,
        "Permanently deleted 2 items (8 bytes) from the trash."
    );
    assert_eq!(tree(&fx.repo), [".trash/"]);

    put(&fx.repo, "c.md", "x");
    fx.ok("trash_file", json!({"path": "c.md"})).await;
    assert_eq!(
        fx.err("empty_trash", json!({"confirm": token})).await,
        UNKNOWN,
        "a used token"
    );
    assert_eq!(tree(&fx.repo).len(), 2, "still holds c.md");
}

#[tokio::test]
async fn a_token_for_a_trash_that_changed_is_refused() {
    let fx = Fixture::start().await;
    fill_trash(&fx).await;
    let token = token_of(&fx.ok("empty_trash", json!({})).await);
    put(&fx.repo, "late.md", "late");
    fx.ok("trash_file", json!({"path": "late.md"})).await;
    let before = tree(&fx.repo);
    assert_eq!(
        fx.err("empty_trash", json!({"confirm": token})).await,
        CHANGED
    );
    assert_eq!(tree(&fx.repo), before, "nothing deleted");
    assert_eq!(
        fx.err("empty_trash", json!({"confirm": token})).await,
        UNKNOWN,
        "spent"
    );
}
