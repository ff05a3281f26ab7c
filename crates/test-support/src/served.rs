//! [`Served`]: a program a test runs as a network service (a remote MCP server, supergateway),
//! ready once it prints a given line, killed with its process group when dropped and by
//! the parent-death signal when the test itself dies.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;

/// How long a program may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running service program.
#[derive(Debug)]
pub struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Everything it printed so far (stdout and stderr), for failure messages.
    seen: Vec<String>,
}

impl Served {
    /// Start `command` in a process group of its own (stdin closed, stdout and stderr read
    /// line by line) and wait for a line containing `ready`; returns that line too.
    ///
    /// The program runs under `setpriv --pdeathsig KILL` (util-linux): it dies with the test
    /// (with the thread that started it, so start it from the test's own thread), even when
    /// the test process is killed and no drop runs.
    pub fn start(command: Command, ready: &str) -> anyhow::Result<(Self, String)> {
        let program = format!("{:?}", command.get_program());
        let mut command = with_parent_death_signal(&command);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let (tx, lines) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            forward_lines(stdout, tx.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            forward_lines(stderr, tx);
        }
        let mut served = Self {
            child,
            lines,
            seen: Vec::new(),
        };
        let line = served
            .wait_for_line(ready)
            .with_context(|| format!("{program} never printed {ready:?}"))?;
        Ok((served, line))
    }

    /// The next line containing `needle` (bounded by a minute; fails if the program ends).
    pub fn wait_for_line(&mut self, needle: &str) -> anyhow::Result<String> {
        loop {
            match self.lines.recv_timeout(READY_TIMEOUT) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return Ok(line);
                    }
                }
                Err(_) => anyhow::bail!("output so far: {:?}", self.seen),
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL the whole group (a program and what it started) and reap the leader.
    pub fn kill(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `command`, run through `setpriv --pdeathsig KILL --` (program, arguments, environment
/// and folder kept). `setpriv` sets the signal and execs the program: same pid.
fn with_parent_death_signal(command: &Command) -> Command {
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--pdeathsig", "KILL", "--"])
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

fn forward_lines(stream: impl Read + Send + 'static, tx: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                // Nobody reads any more: keep draining so the program never blocks on a pipe.
                continue;
            }
        }
    });
}

/// A loopback port that was free a moment ago (for programs that take a port, not port 0).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
