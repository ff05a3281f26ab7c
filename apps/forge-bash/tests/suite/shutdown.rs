//! Commands die with the server, their whole tree: stdin closed, SIGTERM, SIGKILL. Each
//! command leaves a background child in its group, a `setsid` grandchild in a session of
//! its own, and a double-forked orphan; none may survive.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;

use super::{RawServer, assert_dies, harness_env, wait_for_pid};

const LONG_COMMAND: &str = "sh -c 'echo $$ > child.pid; exec sleep 600' & \
     setsid sh -c 'echo $$ > detached.pid; exec sleep 600' & \
     (sh -c 'echo $$ > orphan.pid; exec sleep 600' &) ; \
     echo $$ > shell.pid; wait";

/// Every process the command started: the shell, its child, the `setsid` grandchild and the
/// double-forked orphan.
fn tree(tmp: &tempfile::TempDir) -> Vec<(i32, &'static str)> {
    ["shell", "child", "detached", "orphan"]
        .into_iter()
        .map(|name| {
            (
                wait_for_pid(&tmp.path().join(format!("work/{name}.pid"))),
                name,
            )
        })
        .collect()
}

fn assert_tree_dies(tree: &[(i32, &str)]) {
    for (pid, name) in tree {
        assert_dies(*pid, name);
    }
}

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
    let tree = tree(&tmp);
    server.close_stdin();
    assert!(server.wait_exit().success());
    assert_tree_dies(&tree);
}

#[test]
fn sigterm_kills_running_commands_then_the_server() {
    let (tmp, mut server) = started();
    let tree = tree(&tmp);
    let pid = Pid::from_raw(i32::try_from(server.child.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(server.wait_exit().code(), Some(128 + 15));
    assert_tree_dies(&tree);
}

/// forge-bash alone, not under BotCraft (no subreaper above it): the keeper ends the tree.
#[test]
fn sigkill_of_the_server_kills_the_whole_command_tree() {
    let (tmp, mut server) = started();
    let tree = tree(&tmp);
    server.child.kill().expect("SIGKILL");
    server.wait_exit();
    assert_tree_dies(&tree);
}
