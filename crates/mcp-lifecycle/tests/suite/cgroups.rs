//! A cgroup v2 per server, where the machine allows one: the whole tree is in it from the
//! first moment, stop kills it with `cgroup.kill`, and the cgroups a dead BotCraft left are
//! killed at the next start (never a live one's). Without a writable cgroup2 hierarchy the
//! tests say "skipped".

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_lifecycle::cgroup::Cgroups;
use mcp_lifecycle::hygiene;

use super::harness::{Fixture, alive};

/// The two tests share the process's one `Cgroups`, and a manager's start reaps dead
/// BotCrafts' cgroups: one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

fn cgroups_or_skip(test: &str) -> Option<std::sync::Arc<Cgroups>> {
    let cgroups = Cgroups::create();
    if cgroups.is_none() {
        test_skip::skipped(test, "no writable cgroup2 hierarchy on this machine");
    }
    cgroups
}

/// The cgroup `pid` is in, as `/proc/PID/cgroup` names it.
fn cgroup_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("0::").map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_server_and_its_setsid_grandchild_share_a_cgroup_that_stop_ends() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(probe) = cgroups_or_skip("cgroup per server") else {
        return Ok(());
    };
    drop(probe);
    let fx = Fixture::with(|settings| settings.cgroups = true).await?;
    let (server, grandchild) = fx.start_with_grandchild("parent").await?;
    let cgroup = cgroup_of(server);
    assert!(
        cgroup.contains("/botcraft.")
            && cgroup
                .rsplit('/')
                .next()
                .is_some_and(|leaf| leaf.starts_with("parent.")),
        "the server runs in {cgroup:?}"
    );
    assert_eq!(
        cgroup_of(grandchild),
        cgroup,
        "the setsid grandchild left the cgroup"
    );
    let grandchild = hygiene::identify(grandchild).ok_or_else(|| anyhow::anyhow!("gone"))?;
    fx.manager.stop_server("parent").await?;
    assert!(!alive(server), "server {server} survived the stop");
    assert!(
        hygiene::wait_gone(&BTreeSet::from([grandchild]), Duration::from_secs(10)).await,
        "the grandchild survived the stop"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn the_cgroups_of_a_dead_botcraft_are_killed_and_a_live_ones_kept() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(ours) = cgroups_or_skip("dead BotCraft cgroups") else {
        return Ok(());
    };
    let parent = ours.base().parent().expect("a parent").to_path_buf();
    // A live "BotCraft" (a sleep, by pid and start time), a dead one (pid 1, another start),
    // and a dead-looking one of another pid namespace (never ours to judge).
    let mut owner = std::process::Command::new("sleep").arg("60").spawn()?;
    let live = hygiene::identify(owner.id()).ok_or_else(|| anyhow::anyhow!("gone"))?;
    let ns = pid_namespace();
    let dirs = [
        parent.join(format!("botcraft.{ns}.{}.{}", live.pid, live.start_time)),
        parent.join(format!("botcraft.{ns}.1.{}", u64::MAX - 1)),
        parent.join(format!("botcraft.{}.1.{}", ns + 1, u64::MAX - 1)),
    ];
    let mut members = Vec::new();
    for dir in &dirs {
        let server = dir.join("srv.1");
        std::fs::create_dir_all(&server)?;
        let member = std::process::Command::new("sleep").arg("60").spawn()?;
        std::fs::write(server.join("cgroup.procs"), member.id().to_string())?;
        members.push(member);
    }
    let reaped = ours.reap_dead();
    let dead_member = hygiene::identify(members[1].id()).ok_or_else(|| anyhow::anyhow!("gone"))?;
    let gone = hygiene::wait_gone(&BTreeSet::from([dead_member]), Duration::from_secs(10)).await;
    ours.tidy();
    let dead_removed = !dirs[1].exists();
    let live_kept = alive(members[0].id()) && alive(members[2].id());
    // Clean up before asserting: the live ones' sleeps and folders.
    for member in &mut members {
        let _ = member.kill();
        let _ = member.wait();
    }
    let _ = owner.kill();
    let _ = owner.wait();
    for dir in [&dirs[0], &dirs[2]] {
        let _ = std::fs::remove_dir(dir.join("srv.1"));
        let _ = std::fs::remove_dir(dir);
    }
    assert!(reaped.contains(&dirs[1]), "{reaped:?}");
    assert!(
        !reaped.contains(&dirs[0]) && !reaped.contains(&dirs[2]),
        "{reaped:?}"
    );
    assert!(gone, "the dead BotCraft's server survived");
    assert!(dead_removed, "the dead BotCraft's cgroup was not removed");
    assert!(
        live_kept,
        "a live BotCraft's server, or another namespace's, was killed"
    );
    Ok(())
}
