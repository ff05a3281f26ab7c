//! Calls run concurrently.

use pretty_assertions::assert_eq;

use super::Harness;

/// The first command blocks until the second one runs: a fifo opened for
/// reading waits for a writer. Run one after the other, the first would
/// hit the time limit instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_run_at_the_same_time() {
    let harness = Harness::start_with(&[("FORGE_BASH_TIMEOUT_SECS", "30")]).await;
    nix::unistd::mkfifo(
        &harness.work.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    let (reader, writer) = tokio::join!(
        harness.run("read line < pipe; echo \"reader got $line\""),
        harness.run("echo hello > pipe; echo writer done"),
    );
    assert_eq!(
        (harness.redact(&reader.text), harness.redact(&writer.text)),
        (
            "reader got hello\n[exit:0 | [ms]]".to_owned(),
            "writer done\n[exit:0 | [ms]]".to_owned()
        )
    );
}
