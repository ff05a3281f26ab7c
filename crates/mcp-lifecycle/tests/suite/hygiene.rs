//! Process hygiene: nothing a server started survives stop_all, and leftovers of a previous
//! run are reaped at the next start.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use mcp_lifecycle::hygiene::{self, PidRegistry};
use mcp_lifecycle::{ManagerSettings, McpServerManager};

use super::harness::{Fixture, alive};

#[tokio::test]
async fn stop_all_leaves_no_descendant_alive_not_even_a_setsid_grandchild() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let (server, grandchild) = fx.start_with_grandchild("parent").await?;
    assert!(alive(grandchild) && alive(server), "the tree did not start");
    fx.manager.stop_all().await;
    assert!(!alive(server), "server {server} survived stop_all");
    assert!(
        !alive(grandchild),
        "grandchild {grandchild} survived stop_all"
    );
    fx.store.close().await;
    Ok(())
}

/// A server leads a session of its own: it has no controlling terminal (BotCraft's, whose
/// input a `TIOCSTI` from a tool could fill), and its group is still killed as one.
#[tokio::test]
async fn a_server_leads_its_own_session_without_a_terminal() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    fx.manager.start_server("fake").await?;
    let pid = fx.pid("fake").ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command's name: state, ppid, pgrp, session, tty_nr.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let (pgrp, session, tty) = (fields[2], fields[3], fields[4]);
    assert_eq!(
        (pgrp, session, tty),
        (pid.to_string().as_str(), pid.to_string().as_str(), "0"),
        "{stat}"
    );
    fx.manager.stop_all().await;
    assert!(!alive(pid));
    fx.store.close().await;
    Ok(())
}

#[tokio::test]
async fn leftovers_in_the_pid_registry_are_reaped_at_the_next_start() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A "server" left by a crashed run: its own process group, recorded in the registry.
    let mut leftover = std::process::Command::new("sleep")
        .arg("3600")
        .process_group(0)
        .spawn()?;
    let identity =
        hygiene::identify(leftover.id()).ok_or_else(|| anyhow::anyhow!("no /proc entry"))?;
    PidRegistry::new(dir.path().join("pids")).record(identity);
    let store = store::Store::connect(&store::sqlite_url(&dir.path().join("s.db"))).await?;
    let settings = ManagerSettings {
        pid_registry: Some(dir.path().join("pids")),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    let gone = hygiene::wait_gone(&BTreeSet::from([identity]), Duration::from_secs(10)).await;
    let _ = leftover.wait();
    assert!(gone, "the leftover process was not reaped");
    assert_eq!(std::fs::read_to_string(dir.path().join("pids"))?, "");
    manager.stop_all().await;
    store.close().await;
    Ok(())
}

#[tokio::test]
async fn a_group_left_by_a_dead_leader_is_reaped_at_the_next_start() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A crashed run's server that died and left a child in its process group.
    let leader = std::process::Command::new("sh")
        .args(["-c", "sleep 3600 >/dev/null & echo $!"])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let identity =
        hygiene::identify(leader.id()).ok_or_else(|| anyhow::anyhow!("no /proc entry"))?;
    let output = leader.wait_with_output()?;
    let orphan: u32 = String::from_utf8(output.stdout)?.trim().parse()?;
    let orphan =
        hygiene::identify(orphan).ok_or_else(|| anyhow::anyhow!("the orphan did not start"))?;
    assert!(!hygiene::is_alive(identity) && hygiene::is_alive(orphan));
    PidRegistry::new(dir.path().join("pids")).record(identity);
    let store = store::Store::connect(&store::sqlite_url(&dir.path().join("s.db"))).await?;
    let settings = ManagerSettings {
        pid_registry: Some(dir.path().join("pids")),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    let gone = hygiene::wait_gone(&BTreeSet::from([orphan]), Duration::from_secs(10)).await;
    assert!(gone, "the orphan of the dead leader was not reaped");
    manager.stop_all().await;
    store.close().await;
    Ok(())
}

#[test]
fn dropping_the_manager_with_its_runtime_leaves_no_descendant_alive() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (fx, server, grandchild) = runtime.block_on(async {
        let fx = Fixture::new().await?;
        let (server, grandchild) = fx.start_with_grandchild("parent").await?;
        anyhow::Ok((fx, server, grandchild))
    })?;
    let tree: BTreeSet<_> = [server, grandchild]
        .into_iter()
        .filter_map(hygiene::identify)
        .collect();
    assert_eq!(tree.len(), 2, "the tree did not start");
    // No stop: the manager and every task holding a server go with the runtime.
    drop(fx.manager);
    drop(runtime);
    let check = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let gone = check.block_on(hygiene::wait_gone(&tree, Duration::from_secs(10)));
    assert!(
        gone,
        "alive after the manager was dropped: {:?}",
        tree.iter()
            .filter(|p| hygiene::is_alive(**p))
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// A discarded registry's files are gone and stay gone: a record or a tree written after
/// (a sweep still in flight as its owner exits) writes nothing.
#[test]
fn a_discarded_registry_writes_nothing_more() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("pids");
    let registry = PidRegistry::new(&path);
    let me = proc_tree::identify(std::process::id()).ok_or_else(|| anyhow::anyhow!("no self"))?;
    registry.record(me);
    registry.record_tree(&BTreeSet::from([me]));
    let mut listed: Vec<_> = std::fs::read_dir(dir.path())?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    listed.sort();
    assert_eq!(listed, ["pids", "pids.tree"]);
    registry.discard();
    registry.record(me);
    registry.record_tree(&BTreeSet::from([me]));
    let left: Vec<_> = std::fs::read_dir(dir.path())?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, Vec::<std::ffi::OsString>::new());
    Ok(())
}
