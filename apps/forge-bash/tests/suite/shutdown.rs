//! Commands die with the server: stdin closed, SIGTERM, SIGKILL.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;

use super::{RawServer, assert_dies, harness_env, wait_for_pid};

const LONG_COMMAND: &str =
    "sh -c 'echo $$ > child.pid; exec sleep 600' & echo $$ > shell.pid; wait";

fn started() -> (tempfile::TempDir, RawServer) {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(tmp.path().join("work")).expect("work");
    let mut server = RawServer::spawn(&harness_env(tmp.path(), &[]));
    let answer = server.handshake();
    assert_eq!(answer["result"]["serverInfo"]["name"], "forge-bash");
    server.start_run(2, LONG_COMMAND);
    (tmp, server)
}

#[test]
fn closing_stdin_kills_running_commands() {
    let (tmp, mut server) = started();
    let child = wait_for_pid(&tmp.path().join("work/child.pid"));
    server.close_stdin();
    assert_dies(child, "the running command's child");
    assert!(server.wait_exit().success());
}

#[test]
fn sigterm_kills_running_commands_then_the_server() {
    let (tmp, mut server) = started();
    let child = wait_for_pid(&tmp.path().join("work/child.pid"));
    let pid = Pid::from_raw(i32::try_from(server.child.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(server.wait_exit().code(), Some(128 + 15));
    assert_dies(child, "the running command's child");
}

#[test]
fn sigkill_of_the_server_kills_the_shell() {
    let (tmp, mut server) = started();
    let shell = wait_for_pid(&tmp.path().join("work/shell.pid"));
    let child = wait_for_pid(&tmp.path().join("work/child.pid"));
    server.child.kill().expect("SIGKILL");
    server.wait_exit();
    assert_dies(shell, "the shell (PR_SET_PDEATHSIG)");
    // The shell's own children are not covered (see README); clean up.
    let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
}
