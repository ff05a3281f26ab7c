//! A shell confined by a [`Plan`]: what it may do works, what it may not fails. On a kernel
//! without Landlock every case says "skipped".

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use sandbox::{Availability, NetworkPlan, Plan, Prepared, SpawnContext, availability};

struct Layout {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    workspace: PathBuf,
    tmp: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let data = root.join("data");
    let workspace = root.join("workspace");
    let tmp = root.join("tmp");
    for folder in [&data, &workspace, &tmp] {
        std::fs::create_dir(folder).expect("mkdir");
    }
    std::fs::write(data.join("api-key"), "bck_secret\n").expect("write");
    Layout {
        _dir: dir,
        root,
        data,
        workspace,
        tmp,
    }
}

/// What BotCraft knows when it spawns `/bin/sh` in this layout.
fn context(at: &Layout) -> SpawnContext {
    SpawnContext {
        program: Some(PathBuf::from("/bin/sh")),
        path_env: Some("/usr/bin:/bin".into()),
        workspace: Some(at.workspace.clone()),
        private_tmp: Some(at.tmp.clone()),
        forbidden: vec![at.data.clone()],
    }
}

fn plan(at: &Layout, network: NetworkPlan) -> Plan {
    Plan::new(&context(at), &[], &[], network)
}

/// `sh -c script` confined by `plan`, in the workspace.
#[allow(unsafe_code)]
fn confined(plan: &Plan, cwd: &Path, script: &str) -> Output {
    confined_with(plan, None, cwd, script).expect("spawn")
}

/// `sh -c script` confined by `plan`, making `private` as the child.
#[allow(unsafe_code)]
fn confined_with(
    plan: &Plan,
    private: Option<&Path>,
    cwd: &Path,
    script: &str,
) -> std::io::Result<Output> {
    let prepared = Prepared::new(plan, private).expect("ruleset");
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", script])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    // SAFETY: `enter` makes two async-signal-safe system calls and allocates nothing.
    unsafe {
        command.pre_exec(move || prepared.enter());
    }
    command.output()
}

fn skipped(case: &str) -> bool {
    if availability() == Availability::Unavailable {
        test_skip::skipped(&format!("sandbox {case}"), "this kernel has no Landlock");
        return true;
    }
    false
}

/// [`skipped`], and skipped too where Landlock has no TCP rules (ABI 4, Linux 6.7).
fn skipped_without_tcp_rules(case: &str) -> bool {
    if skipped(case) {
        return true;
    }
    if let Availability::Landlock { abi } = availability()
        && abi < 4
    {
        test_skip::skipped(
            &format!("sandbox {case}"),
            &format!("this kernel's Landlock (ABI {abi}) has no TCP rules"),
        );
        return true;
    }
    false
}

#[test]
fn what_a_tool_may_do_works_and_the_rest_is_refused() {
    if skipped("filesystem") {
        return;
    }
    let at = layout();
    let plan = plan(&at, NetworkPlan::All);
    let key = at.data.join("api-key");
    // (what, script, works)
    let cases = [
        (
            "read /etc/os-release",
            "head -c 1 /etc/os-release".to_owned(),
            true,
        ),
        ("list /usr/bin", "ls /usr/bin >/dev/null".to_owned(), true),
        (
            "write the workspace",
            "echo x > note.txt && cat note.txt".to_owned(),
            true,
        ),
        (
            "write the private tmp",
            format!(
                "echo x > {}/t && cat {}/t",
                at.tmp.display(),
                at.tmp.display()
            ),
            true,
        ),
        (
            "read the data folder",
            format!("cat {}", key.display()),
            false,
        ),
        (
            "list the data folder",
            format!("ls {}", at.data.display()),
            false,
        ),
        (
            "write beside the workspace",
            format!("echo x > {}/planted", at.root.display()),
            false,
        ),
        (
            "write /etc",
            "echo x > /etc/botcraft-sandbox-probe".to_owned(),
            false,
        ),
        (
            "hard-link a data file into the workspace",
            format!("ln {} stolen", key.display()),
            false,
        ),
        (
            "symlink to the data folder and read",
            format!("ln -s {} link && cat link", key.display()),
            false,
        ),
        // Landlock refuses ptrace attach (and `/proc/PID/mem`) of a process outside the
        // sandbox, root or not. `environ` is a ptrace *read*, which Landlock lets through:
        // another uid (root's tools) or PR_SET_DUMPABLE (one user) refuses that.
        (
            "the parent's memory",
            "exec 3</proc/$PPID/mem".to_owned(),
            false,
        ),
        (
            "the parent's executable",
            "head -c 1 /proc/$PPID/exe".to_owned(),
            false,
        ),
        (
            "its own status",
            "grep -q NoNewPrivs /proc/self/status".to_owned(),
            true,
        ),
    ];
    let mut outcomes = Vec::new();
    for (what, script, _) in &cases {
        let output = confined(&plan, &at.workspace, script);
        outcomes.push((*what, output.status.success()));
    }
    let expected: Vec<(&str, bool)> = cases
        .iter()
        .map(|(what, _, works)| (*what, *works))
        .collect();
    assert_eq!(outcomes, expected);
    assert!(!at.workspace.join("stolen").exists());
    // A folder the child makes itself is its own, read-write; one planted first is refused.
    let own = at.root.join("own-tmp");
    let made = confined_with(
        &plan,
        Some(&own),
        &at.workspace,
        &format!("echo x > {}/f && cat {}/f", own.display(), own.display()),
    )
    .expect("spawn");
    assert_eq!(String::from_utf8_lossy(&made.stdout), "x\n");
    let planted = confined_with(&plan, Some(&own), &at.workspace, "true");
    assert_eq!(
        planted.map_err(|error| error.kind()).err(),
        Some(std::io::ErrorKind::AlreadyExists),
        "a planted private folder fails the spawn"
    );
    let status = confined(&plan, &at.workspace, "grep NoNewPrivs /proc/self/status");
    assert_eq!(
        String::from_utf8_lossy(&status.stdout)
            .split_whitespace()
            .last(),
        Some("1")
    );
}

/// The workspace listed read-only is only that: the server reads it and writes the one
/// folder of it its policy lists read-write (Playwright's output folder), nothing else of it
/// (not a repository's `.git`).
#[test]
fn a_read_only_workspace_is_written_only_where_the_policy_says() {
    if skipped("read-only workspace") {
        return;
    }
    let at = layout();
    let output = at.workspace.join(".playwright-mcp");
    let git = at.workspace.join("repo/.git");
    std::fs::create_dir_all(&output).expect("mkdir");
    std::fs::create_dir_all(&git).expect("mkdir");
    std::fs::write(git.join("config"), "[core]\n").expect("write");
    let context = context(&at);
    let plan = Plan::new(
        &context,
        &[output.display().to_string()],
        &[at.workspace.display().to_string()],
        NetworkPlan::All,
    );
    assert!(!plan.read_write.contains(&at.workspace), "{plan:?}");
    let cases = [
        (
            "read the workspace",
            "cat repo/.git/config".to_owned(),
            true,
        ),
        (
            "write the output folder",
            "echo x > .playwright-mcp/shot.png && cat .playwright-mcp/shot.png".to_owned(),
            true,
        ),
        (
            "write a repository's .git",
            "echo '[core] fsmonitor = evil' > repo/.git/config".to_owned(),
            false,
        ),
        (
            "make a file in the workspace",
            "echo x > note.txt".to_owned(),
            false,
        ),
        (
            "write the private tmp",
            format!("echo x > {}/t", at.tmp.display()),
            true,
        ),
    ];
    let outcomes: Vec<(&str, bool)> = cases
        .iter()
        .map(|(what, script, _)| {
            (
                *what,
                confined(&plan, &at.workspace, script).status.success(),
            )
        })
        .collect();
    let expected: Vec<(&str, bool)> = cases
        .iter()
        .map(|(what, _, works)| (*what, *works))
        .collect();
    assert_eq!(outcomes, expected);
    assert_eq!(
        std::fs::read_to_string(git.join("config")).expect("read"),
        "[core]\n"
    );
    // The output folder replaced by a link out of the workspace: dropped, not followed.
    let outside = at.root.join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    std::fs::remove_dir_all(&output).expect("rm");
    std::os::unix::fs::symlink(&outside, &output).expect("symlink");
    let plan = Plan::new(
        &context,
        &[output.display().to_string()],
        &[at.workspace.display().to_string()],
        NetworkPlan::All,
    );
    assert!(!plan.read_write.contains(&outside), "{plan:?}");
    assert!(
        plan.dropped
            .iter()
            .any(|why| why.contains("leads out of the workspace through a link")),
        "{plan:?}"
    );
    let output = confined(&plan, &at.workspace, "echo evil > .playwright-mcp/config");
    assert!(!output.status.success());
    assert!(!outside.join("config").exists());
    // A missing output folder is made by the child (as the tool user) and written there; a
    // link planted where it goes fails the spawn instead of being followed.
    let made = at.workspace.join("made-by-child");
    let mut plan = Plan::new(
        &context,
        &[],
        &[at.workspace.display().to_string()],
        NetworkPlan::All,
    );
    assert!(plan.make_in_child(&made, &context), "{plan:?}");
    let output = confined(&plan, &at.workspace, "echo x > made-by-child/shot.png");
    assert!(output.status.success(), "{output:?}");
    assert!(made.join("shot.png").exists());
    std::fs::remove_dir_all(&made).expect("rm");
    std::os::unix::fs::symlink(&outside, &made).expect("symlink");
    let planted = confined_with(&plan, None, &at.workspace, "echo evil > made-by-child/x");
    assert!(
        planted.is_err() || planted.is_ok_and(|output| !output.status.success()),
        "a planted link is not followed"
    );
    assert!(!outside.join("x").exists());
}

#[test]
fn the_network_is_what_the_plan_allows() {
    if skipped_without_tcp_rules("network") {
        return;
    }
    let at = layout();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = |listener: &std::net::TcpListener| listener.local_addr().expect("addr").port();
    let connect = |port: u16| format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let bash = |plan: &Plan, script: &str| {
        confined(plan, &at.workspace, &format!("bash -c '{script}'"))
            .status
            .success()
    };
    let all = plan(&at, NetworkPlan::All);
    let some = plan(&at, NetworkPlan::Connect(vec![port(&allowed)]));
    let none = plan(&at, NetworkPlan::Connect(Vec::new()));
    let outcomes = [
        bash(&all, &connect(port(&other))),
        bash(&some, &connect(port(&allowed))),
        bash(&some, &connect(port(&other))),
        bash(&none, &connect(port(&allowed))),
    ];
    assert_eq!(outcomes, [true, true, false, false]);
}

/// The lines a probe script (`PROBE` and its cases) printed, confined by `plan`; it must exit 0.
fn probe_lines(plan: &Plan, cwd: &Path, script: &str) -> Vec<String> {
    let output = confined(plan, cwd, script);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The probe the socket scripts use: runs `action`, prints `WHAT ok` or `WHAT errno N`.
const PROBE: &str = r#"
def probe(what, action):
    try:
        action()
        print(what, "ok")
    except OSError as error:
        print(what, "errno", error.errno)
"#;

/// Connections to a port the plan does not list, by every way past `connect` that Landlock's
/// TCP rules do not see, one line each: `ok` or `errno N`.
const AROUND_TCP_RULES: &str = r#"
import socket, sys
port = int(sys.argv[1])
def tcp():
    with socket.socket() as plain:
        plain.connect(("127.0.0.1", port))
def multipath():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) as mptcp:
        mptcp.connect(("127.0.0.1", port))
def fast_open():
    with socket.socket() as plain:
        plain.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", port))
def vsock():
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
def listen():
    with socket.socket() as plain:
        plain.listen()
probe("tcp", tcp)
probe("multipath tcp", multipath)
probe("fast open", fast_open)
probe("vsock", vsock)
probe("listen", listen)
"#;

/// A plan that lists ports keeps a confined process from every other port whichever way it
/// connects: plain TCP (Landlock), Multipath TCP and TCP Fast Open (which Landlock's rules do
/// not see: the system-call filter), and a vsock to a virtual machine's host; and, without
/// Unix sockets, from listening on a port the kernel picks (a `listen` with no `bind`). With
/// every port open, TCP and Multipath TCP connect.
#[test]
fn listed_ports_hold_against_multipath_tcp_fast_open_and_vsock() {
    if skipped_without_tcp_rules("network around TCP rules") {
        return;
    }
    let at = layout();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = listener.local_addr().expect("addr").port();
    let script = format!("/usr/bin/python3 -c '{PROBE}{AROUND_TCP_RULES}' {other}");
    let lines = |plan: &Plan| probe_lines(plan, &at.workspace, &script);
    let refused = format!("errno {}", libc::EACCES);
    let mut confined_plan = plan(&at, NetworkPlan::Connect(vec![other.wrapping_add(1)]));
    for unix_sockets in [false, true] {
        confined_plan.unix_sockets = unix_sockets;
        let listen = if unix_sockets {
            "listen ok".to_owned()
        } else {
            format!("listen {refused}")
        };
        let mut expected = ["tcp", "multipath tcp", "fast open", "vsock"]
            .map(|what| format!("{what} {refused}"))
            .to_vec();
        expected.push(listen);
        assert_eq!(
            lines(&confined_plan),
            expected,
            "unix sockets {unix_sockets}"
        );
    }
    // The control: Multipath TCP does connect where this kernel has it turned on.
    let open = lines(&plan(&at, NetworkPlan::All));
    assert_eq!(open[0], "tcp ok");
    let multipath_on = std::fs::read_to_string("/proc/sys/net/mptcp/enabled")
        .is_ok_and(|enabled| enabled.trim() == "1");
    if multipath_on {
        assert_eq!(open[1], "multipath tcp ok");
    } else {
        test_skip::skipped(
            "sandbox: Multipath TCP connecting with every port open",
            "this kernel has Multipath TCP off or not built",
        );
    }
}

/// Probes of the sockets a confined process may make, one line each: `ok` or `errno N`.
const SOCKET_PROBE: &str = r#"
import ctypes, socket, sys
def connect():
    with socket.socket(socket.AF_UNIX) as unix:
        unix.connect(sys.argv[1])
def pair():
    for end in socket.socketpair():
        end.close()
probe("unix", connect)
probe("pair", pair)
def datagram_pair():
    for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM):
        end.close()
probe("datagram pair", datagram_pair)
probe("tcp", lambda: socket.socket(socket.AF_INET).close())
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
ring = libc.syscall(int(sys.argv[2]), 4, params)
print("io_uring", "ok" if ring >= 0 else "errno %d" % ctypes.get_errno())
"#;

/// Landlock has no rule for a Unix socket with a path (a local database's, a Docker
/// daemon's): the system-call filter refuses to make one (or a datagram pair, which may send
/// to a datagram socket file) unless the plan allows it, while stream pairs and TCP sockets
/// work and io_uring (which could make one past the filter)
/// says it is not there. The filter needs no Landlock: this case runs on any kernel.
#[test]
fn unix_sockets_are_refused_unless_the_plan_allows_them() {
    let at = layout();
    let socket = at.root.join("service.sock");
    let _service = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    let script = format!(
        "/usr/bin/python3 -c '{PROBE}{SOCKET_PROBE}' {} {}",
        socket.display(),
        libc::SYS_io_uring_setup
    );
    let lines = |plan: &Plan| probe_lines(plan, &at.workspace, &script);
    let refused = plan(&at, NetworkPlan::All);
    assert!(!refused.unix_sockets);
    assert_eq!(
        lines(&refused),
        [
            format!("unix errno {}", libc::EACCES),
            "pair ok".to_owned(),
            format!("datagram pair errno {}", libc::EACCES),
            "tcp ok".to_owned(),
            format!("io_uring errno {}", libc::ENOSYS),
        ]
    );
    let mut allowed = plan(&at, NetworkPlan::All);
    allowed.unix_sockets = true;
    assert_eq!(
        lines(&allowed)[..4],
        ["unix ok", "pair ok", "datagram pair ok", "tcp ok"]
    );
}

/// Sends one UDP datagram to 127.0.0.1:ARGV1 and makes an IPv6 one, one line each: `ok` or
/// `errno N`.
const UDP_PROBE: &str = r#"
import socket, sys
def send():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(b"what the tool read", ("127.0.0.1", int(sys.argv[1])))
probe("udp", send)
probe("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close())
"#;

/// UDP goes to any address and port, and Landlock judges none of it: where TCP is confined,
/// the filter refuses IPv4 and IPv6 UDP sockets unless the plan keeps them (its network may
/// need a name looked up, which a resolver does over UDP). The refused datagram never
/// arrives; with every port open, or UDP kept, it does.
#[test]
fn udp_is_refused_where_tcp_is_confined_unless_the_plan_keeps_it() {
    if skipped("UDP where TCP is confined") {
        return;
    }
    let at = layout();
    // The probe's lines, and the datagram that arrived, at a receiver of its own. A refused
    // probe made no socket, so nothing can come later; a sent datagram is waited for.
    let run = |plan: &Plan| -> (Vec<String>, Option<String>) {
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = receiver.local_addr().expect("addr").port();
        let script = format!("/usr/bin/python3 -c '{PROBE}{UDP_PROBE}' {port}");
        let lines = probe_lines(plan, &at.workspace, &script);
        let sent = lines.first().is_some_and(|line| line == "udp ok");
        let wait = if sent {
            std::time::Duration::from_secs(30)
        } else {
            std::time::Duration::from_millis(1)
        };
        receiver.set_read_timeout(Some(wait)).expect("timeout");
        let mut buffer = [0u8; 64];
        let arrived = receiver
            .recv(&mut buffer)
            .ok()
            .map(|n| String::from_utf8_lossy(&buffer[..n]).into_owned());
        (lines, arrived)
    };
    let refused = format!("errno {}", libc::EACCES);
    let sent = Some("what the tool read".to_owned());
    // IPv6 may be off on this machine (booted without it): then its socket fails anyway.
    let udp6 = match std::net::UdpSocket::bind("[::]:0") {
        Ok(_) => "udp6 ok".to_owned(),
        Err(error) => format!("udp6 errno {}", error.raw_os_error().unwrap_or(0)),
    };
    let oks = vec!["udp ok".to_owned(), udp6];
    // No port, or TCP port 53 (DNS) listed: neither opens UDP.
    for ports in [vec![], vec![53]] {
        let confined_plan = plan(&at, NetworkPlan::Connect(ports.clone()));
        assert_eq!(
            run(&confined_plan),
            (
                vec![format!("udp {refused}"), format!("udp6 {refused}")],
                None
            ),
            "ports {ports:?}"
        );
        let mut kept = confined_plan.clone();
        kept.datagrams = true;
        assert_eq!(
            run(&kept),
            (oks.clone(), sent.clone()),
            "ports {ports:?}, kept"
        );
    }
    assert_eq!(run(&plan(&at, NetworkPlan::All)), (oks, sent));
}
