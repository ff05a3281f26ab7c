//! The rm guard through the binary: blocked commands never run, commands
//! that only mention rm do.

use pretty_assertions::assert_eq;

use super::Harness;

/// The seed task's list, plus a few spellings.
const BLOCKED: &[&str] = &[
    "rm x",
    "/bin/rm x",
    "\\rm x",
    "'rm' x",
    "sudo rm x",
    "command rm x",
    "env rm x",
    "nice rm x",
    "echo x | xargs rm",
    "echo a && rm x",
    "echo $(rm x)",
    "echo `rm x`",
    "bash -c 'rm x'",
    "sh -c \"rm -rf x\"",
    "find . -delete",
    "find . -exec rm {} \\;",
    "FOO=1 rm x",
    "true; (rm x)",
];

const ALLOWED: &[&str] = &[
    "echo rm",
    "grep -r rm src",
    "ls -la",
    "cat rm.txt",
    "firm x",
    "git rm --cached x",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_commands_are_refused_and_never_run() {
    let harness = Harness::start().await;
    let victim = harness.work.join("x");
    std::fs::write(&victim, "keep me").expect("write");
    let mut refused = Vec::new();
    for command in BLOCKED {
        let outcome = harness.run(command).await;
        refused.push((
            *command,
            outcome.is_error,
            outcome.text.starts_with("Command blocked: "),
            outcome.text.contains("`trash_file`") && outcome.text.contains("`trash_directory`"),
        ));
    }
    let expected: Vec<_> = BLOCKED.iter().map(|c| (*c, true, true, true)).collect();
    assert_eq!(refused, expected);
    assert_eq!(
        std::fs::read_to_string(&victim).expect("x survives"),
        "keep me"
    );
    let outcomes: Vec<String> = harness
        .audit_records()
        .iter()
        .map(|record| record[1].clone())
        .collect();
    assert_eq!(outcomes, vec!["blocked"; BLOCKED.len()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_only_mention_rm_run() {
    let harness = Harness::start().await;
    let mut ran = Vec::new();
    for command in ALLOWED {
        let outcome = harness.run(command).await;
        ran.push((
            *command,
            outcome.is_error,
            outcome.text.contains("Command blocked"),
            outcome.text.contains("[exit:"),
        ));
    }
    let expected: Vec<_> = ALLOWED.iter().map(|c| (*c, false, false, true)).collect();
    assert_eq!(ran, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusal_message_and_reason_code() {
    let harness = Harness::start().await;
    let outcome = harness.run("cd build && sudo rm -rf dist").await;
    assert!(outcome.is_error);
    insta::assert_snapshot!("rm_blocked_reply", outcome.text);
    harness.wait_for_stderr(
        "forge-bash: reason=stdio.tool_error tool=run Command blocked: `rm` is blocked in forge-bash (found in: sudo rm -rf dist).",
    );
}
