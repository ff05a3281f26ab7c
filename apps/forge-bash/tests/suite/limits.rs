//! The limits that stop a command: timeout, max buffer, cancellation. Each
//! kills the whole process group, background children included.

use pretty_assertions::assert_eq;
use server_kit::rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use server_kit::rmcp::service::PeerRequestOptions;

use super::{Harness, assert_dies, wait_for_pid, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_group_with_its_background_child() {
    let harness = Harness::start_with(&[("FORGE_BASH_TIMEOUT_SECS", "1")]).await;
    let outcome = harness
        .run("sh -c 'echo $$ > bg.pid; exec sleep 600' & echo started; sleep 600")
        .await;
    assert!(outcome.is_error);
    insta::assert_snapshot!("timeout_notice", harness.redact(&outcome.text));
    assert_dies(
        wait_for_pid(&harness.work.join("bg.pid")),
        "background child",
    );
    harness.wait_for_stderr("reason=stdio.tool_error tool=run started");
    let outcomes: Vec<String> = harness
        .audit_records()
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(outcomes, ["timeout"]);
}

/// The shell is long gone when the time limit comes (its jobs hold the output open): the
/// keeper, still their subreaper, ends them all, the `setsid` one too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_after_the_shell_exited_still_ends_what_it_left() {
    let harness = Harness::start_with(&[("FORGE_BASH_TIMEOUT_SECS", "1")]).await;
    let outcome = harness
        .run("setsid sh -c 'echo $$ > detached.pid; exec sleep 600' & sh -c 'echo $$ > job.pid; exec sleep 600' & echo started")
        .await;
    assert!(outcome.is_error, "{}", outcome.text);
    assert!(outcome.text.contains("[exit:timeout"), "{}", outcome.text);
    for name in ["detached", "job"] {
        assert_dies(
            wait_for_pid(&harness.work.join(format!("{name}.pid"))),
            name,
        );
    }
}

/// A job that let go of the output outlives the call that started it, as before the keeper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_job_outlives_its_call() {
    let harness = Harness::start().await;
    let outcome = harness
        .run("sh -c 'echo $$ > server.pid; exec sleep 600' > /dev/null 2>&1 & echo started")
        .await;
    assert!(!outcome.is_error, "{}", outcome.text);
    let server = wait_for_pid(&harness.work.join("server.pid"));
    assert!(
        std::path::Path::new(&format!("/proc/{server}")).exists(),
        "the detached job died with its call"
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_buffer_kills_the_group() {
    let harness = Harness::start_with(&[("FORGE_BASH_MAX_BUFFER_BYTES", "10000")]).await;
    let outcome = harness
        .run("sh -c 'echo $$ > yes.pid; exec yes' & wait")
        .await;
    assert!(outcome.is_error);
    let text = harness.redact(&outcome.text);
    let (body, notices) = text.split_at(400);
    assert_eq!(body, "y\n".repeat(200));
    insta::assert_snapshot!("max_buffer_notice", notices);
    assert_dies(wait_for_pid(&harness.work.join("yes.pid")), "yes");
    assert_eq!(
        std::fs::metadata(harness.logs.join("cmd-1.txt"))
            .expect("overflow file")
            .len(),
        10_000,
        "the file holds exactly what was captured"
    );
    let outcomes: Vec<String> = harness
        .audit_records()
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(outcomes, ["max_buffer"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_request_kills_the_group() {
    let harness = Harness::start().await;
    let params = CallToolRequestParams::new("run").with_arguments(
        serde_json::json!({"command": "sh -c 'echo $$ > child.pid; exec sleep 600' & echo $$ > shell.pid; wait"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let handle = harness
        .server
        .client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    let child = wait_for_pid(&harness.work.join("child.pid"));
    let shell = wait_for_pid(&harness.work.join("shell.pid"));
    handle.cancel(Some("test".into())).await.expect("cancel");
    assert_dies(child, "the command's child");
    assert_dies(shell, "the command's shell");
    let logged = wait_until(|| {
        let records = harness.audit_records();
        (!records.is_empty()).then_some(records)
    })
    .expect("audit line");
    assert_eq!(logged[0][1], "cancelled");
}
