//! The reply: layout and footer, chains, overflow files, the binary guard,
//! environment injection.

use pretty_assertions::assert_eq;

use super::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn footer_exit_codes_and_chains() {
    let harness = Harness::start().await;
    let work = harness.work.display().to_string();
    let cases: Vec<(&str, String)> = vec![
        ("echo hi", "hi\n[exit:0 | [ms]]".into()),
        ("true", "[exit:0 | [ms]]".into()),
        ("exit 3", "[exit:3 | [ms]]".into()),
        ("false", "[exit:1 | [ms]]".into()),
        ("false || echo ok", "ok\n[exit:0 | [ms]]".into()),
        ("echo a | tr a b", "b\n[exit:0 | [ms]]".into()),
        ("true && false; echo $?", "1\n[exit:0 | [ms]]".into()),
        ("echo a\necho b", "a\nb\n[exit:0 | [ms]]".into()),
        ("echo out; echo err >&2", "out\nerr\n[exit:0 | [ms]]".into()),
        ("echo err >&2; echo out", "out\nerr\n[exit:0 | [ms]]".into()),
        (
            "printf x; printf y >&2; exit 7",
            "x\ny\n[exit:7 | [ms]]".into(),
        ),
        ("printf 'no newline'", "no newline\n[exit:0 | [ms]]".into()),
        ("kill -9 $$", "[exit:137 | [ms]]".into()),
        (
            "no-such-command-xyz 2>/dev/null",
            "[exit:127 | [ms]]".into(),
        ),
        ("cat", "[exit:0 | [ms]]".into()),
        ("pwd", format!("{work}\n[exit:0 | [ms]]")),
        (
            "grep SigBlk /proc/self/status",
            "SigBlk:\t0000000000000000\n[exit:0 | [ms]]".into(),
        ),
    ];
    let mut actual = Vec::new();
    for (command, _) in &cases {
        let outcome = harness.run(command).await;
        actual.push((*command, outcome.is_error, harness.redact(&outcome.text)));
    }
    let expected: Vec<_> = cases
        .iter()
        .map(|(command, text)| (*command, false, text.clone()))
        .collect();
    assert_eq!(actual, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_snapshot() {
    let harness = Harness::start().await;
    let outcome = harness
        .run("echo line one; echo line two; echo problem >&2; exit 2")
        .await;
    insta::assert_snapshot!("footer_layout", harness.redact(&outcome.text));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_limit_truncates_and_saves_the_full_output() {
    let harness = Harness::start().await;
    let outcome = harness.run("seq 1 500").await;
    assert!(!outcome.is_error);
    insta::assert_snapshot!("overflow_lines", harness.redact(&outcome.text));
    let full: String = (1..=500).map(|n| format!("{n}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(harness.logs.join("cmd-1.txt")).expect("overflow file"),
        full
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_limit_truncates_at_whole_lines() {
    let harness = Harness::start().await;
    let outcome = harness
        .run("for i in $(seq 1 100); do printf '%0999d\\n' $i; done; echo done >&2")
        .await;
    let full: String = (1..=100).map(|n| format!("{n:0999}\n")).collect();
    let shown: String = (1..=51).map(|n| format!("{n:0999}\n")).collect();
    let path = harness.logs.join("cmd-1.txt");
    assert_eq!(
        (outcome.is_error, harness.redact(&outcome.text)),
        (
            false,
            format!(
                "{shown}[output truncated: 101 lines, 100005 bytes in all; showing the first 51 lines (51000 bytes). Full output: [LOGS]/cmd-1.txt]\n[exit:0 | [ms]]"
            )
        )
    );
    assert_eq!(
        std::fs::read_to_string(path).expect("overflow file"),
        format!("{full}done\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_numbers_are_unique_across_concurrent_calls() {
    let harness = Harness::start().await;
    let (first, second) = tokio::join!(harness.run("seq 1 1000"), harness.run("seq 1001 2000"));
    let path_of = |text: &str| {
        let start = text.find("Full output: ").expect("notice") + "Full output: ".len();
        let end = text[start..].find(']').expect("end") + start;
        text[start..end].to_owned()
    };
    let (first_path, second_path) = (path_of(&first.text), path_of(&second.text));
    assert_ne!(first_path, second_path);
    let mut names = vec![first_path.clone(), second_path.clone()];
    names.sort();
    let logs = harness.logs.display().to_string();
    assert_eq!(
        names,
        vec![format!("{logs}/cmd-1.txt"), format!("{logs}/cmd-2.txt")]
    );
    for (path, range) in [(first_path, 1..=1000), (second_path, 1001..=2000)] {
        let full: String = range.map(|n| format!("{n}\n")).collect();
        assert_eq!(std::fs::read_to_string(path).expect("overflow file"), full);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbering_continues_across_restarts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tmp.path().join("logs");
    std::fs::create_dir_all(&logs).expect("logs");
    std::fs::write(logs.join("cmd-41.txt"), "from an earlier run").expect("write");
    let harness = Harness::start_in(tmp, &[]).await;
    let outcome = harness.run("seq 1 300").await;
    assert!(
        harness
            .redact(&outcome.text)
            .contains("Full output: [LOGS]/cmd-42.txt]"),
        "{}",
        outcome.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_output_becomes_a_notice() {
    let harness = Harness::start().await;
    let outcome = harness
        .run("head -c 3000 /dev/zero; printf '\\001\\002\\003\\004\\005' >&2")
        .await;
    assert!(!outcome.is_error);
    insta::assert_snapshot!("binary_notice", harness.redact(&outcome.text));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_variables_reach_commands_without_overriding() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let environ = tmp.path().join("environ");
    std::fs::write(
        &environ,
        b"INJECTED_ONLY=from init\0PATH=/bogus\0SECOND=two=2\0",
    )
    .expect("write environ");
    let environ = environ.display().to_string();
    let harness = Harness::start_in(tmp, &[("FORGE_BASH_ENV_FILE", environ.as_str())]).await;
    let outcome = harness
        .run("echo \"$INJECTED_ONLY|$SECOND|$PATH|$FORGE_BASH_ENV_FILE\"")
        .await;
    assert_eq!(
        harness.redact(&outcome.text),
        format!("from init|two=2|/usr/local/bin:/usr/bin:/bin|{environ}\n[exit:0 | [ms]]")
    );
}

/// The container's init environment holds BotCraft's secrets next to the deployment's own
/// variables: commands get the deployment's, never the secrets, whichever way they look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn botcraft_secrets_in_the_init_environment_never_reach_commands() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let environ = tmp.path().join("environ");
    let secrets = [
        ("BOTCRAFT_API_KEY", "bc_secret_admin_1"),
        ("BOTCRAFT_BOT_KEYS", "forge=bc_secret_bot_2"),
        ("OPENAI_API_KEY", "sk-secret-openai-3"),
        ("ANTHROPIC_API_KEY", "sk-ant-secret-4"),
        ("DATABASE_URL", "postgres://u:secret-5@db/botcraft"),
        ("OPENAI_API_KEY_FILE", "/run/secrets/secret-6"),
        ("EXTRA_TOKEN", "secret-7"),
    ];
    let mut bytes = b"RAILWAY_ENVIRONMENT=production\0".to_vec();
    for (name, value) in secrets {
        bytes.extend_from_slice(format!("{name}={value}\0").as_bytes());
    }
    std::fs::write(&environ, bytes).expect("write environ");
    let environ = environ.display().to_string();
    let harness = Harness::start_in(
        tmp,
        &[
            ("FORGE_BASH_ENV_FILE", environ.as_str()),
            ("FORGE_BASH_INJECT_DENY", "EXTRA_TOKEN"),
        ],
    )
    .await;
    for command in [
        "env",
        "printenv",
        "export -p",
        "cat /proc/self/environ | tr '\\0' '\\n'",
    ] {
        let outcome = harness.run(command).await;
        assert!(!outcome.is_error, "{command}: {}", outcome.text);
        assert!(
            outcome.text.contains("RAILWAY_ENVIRONMENT"),
            "{command} sees the deployment's variables: {}",
            outcome.text
        );
        for (name, value) in secrets {
            assert!(
                !outcome.text.contains(value) && !outcome.text.contains(&format!("{name}=")),
                "{command} shows {name}: {}",
                outcome.text
            );
        }
    }
}
