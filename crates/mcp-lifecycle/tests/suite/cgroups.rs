//! A cgroup v2 per server, where the machine allows one: the whole tree is in it from the
//! first moment, stop kills it with `cgroup.kill`, and the cgroups a dead BotCraft left are
//! killed at the next start (never a live one's). Without a writable cgroup2 hierarchy the
//! tests say "skipped".

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_lifecycle::cgroup::Cgroups;
use mcp_lifecycle::hygiene;

use super::harness::{Fixture, alive};

fn cgroups_or_skip(test: &str) -> Option<std::sync::Arc<Cgroups>> {
    let cgroups = Cgroups::create();
    if cgroups.is_none() {
        eprintln!("{test}: skipped (no writable cgroup2 hierarchy on this machine)");
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
    let Some(probe) = cgroups_or_skip("cgroup per server") else {
        return Ok(());
    };
    drop(probe);
    let fx = Fixture::with(|settings| settings.cgroups = true).await?;
    let pid_file = fx.dir.path().join("grandchild.pid");
    fx.add(
        "parent",
        &[(
            "FAKE_MCP_GRANDCHILD_PID_FILE",
            &pid_file.display().to_string(),
        )],
        |s| s,
    )
    .await?;
    fx.manager.start_server("parent").await?;
    let grandchild: u32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
    let server = fx.started_pids("parent")[0];
    let cgroup = cgroup_of(server);
    assert!(
        cgroup.contains("/botcraft.") && cgroup.ends_with("/parent.1"),
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
    let Some(ours) = cgroups_or_skip("dead BotCraft cgroups") else {
        return Ok(());
    };
    let parent = ours.base().parent().expect("a parent").to_path_buf();
    // A live "BotCraft" (a sleep, by pid and start time) and a dead one (pid 1, another start).
    let mut owner = std::process::Command::new("sleep").arg("3600").spawn()?;
    let live = hygiene::identify(owner.id()).ok_or_else(|| anyhow::anyhow!("gone"))?;
    let dirs = [
        parent.join(format!("botcraft.{}.{}", live.pid, live.start_time)),
        parent.join(format!("botcraft.1.{}", u64::MAX - 1)),
    ];
    let mut members = Vec::new();
    for dir in &dirs {
        let server = dir.join("srv.1");
        std::fs::create_dir_all(&server)?;
        let member = std::process::Command::new("sleep").arg("3600").spawn()?;
        std::fs::write(server.join("cgroup.procs"), member.id().to_string())?;
        members.push(member);
    }
    let reaped = ours.reap_dead();
    assert_eq!(reaped, vec![dirs[1].clone()]);
    let dead_member = members[1].id();
    let _ = members[1].wait();
    assert!(!alive(dead_member));
    ours.tidy();
    assert!(
        !dirs[1].exists(),
        "the dead BotCraft's cgroup was not removed"
    );
    assert!(
        alive(members[0].id()),
        "a live BotCraft's server was killed"
    );
    // Clean up the live one's.
    let _ = members[0].kill();
    let _ = members[0].wait();
    let _ = owner.kill();
    let _ = owner.wait();
    let _ = std::fs::remove_dir(dirs[0].join("srv.1"));
    let _ = std::fs::remove_dir(&dirs[0]);
    Ok(())
}
