//! The system calls a sandboxed server may not make, as a seccomp filter: [`SyscallFilter`].
//!
//! Landlock (up to ABI 7) has no rule for reaching a Unix socket that has a path: a confined
//! process reaches every socket file its uid may open (a Docker daemon's, a PostgreSQL's
//! with `trust` for local connections, the user's `systemd --user`, journald's). So unless
//! its policy says `"unixSockets": true`, a server may not make a socket that could:
//!
//! - `socket(AF_UNIX, …)` fails with `EACCES`, and so does `socketpair(AF_UNIX,
//!   SOCK_DGRAM, …)` (a datagram socket may send to any datagram socket file). A stream or
//!   seqpacket pair stays: it is connected from birth, reaches nothing outside its process
//!   tree, and runtimes (libuv, Python, Chromium) use it for their own pipes.
//! - io_uring's three calls fail with `ENOSYS` (its requests make sockets past this filter;
//!   programs fall back to plain system calls, as on kernels built without it).
//! - A system call of another ABI than the native one (x32, or i386 on x86-64, whose
//!   `socketcall` hides its arguments from the filter) kills the process: a 32-bit program
//!   does not run in the sandbox.
//!
//! A server whose policy lists the TCP ports it may connect to gets more: Landlock judges a
//! TCP socket's `connect` and `bind`, and nothing else that reaches the network, so such a
//! server may make only the sockets those rules cover or that carry no connection to judge:
//!
//! - `socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP)`, and UDP sockets
//!   (`SOCK_DGRAM`, 0 or `IPPROTO_UDP`) only where the policy may need a name looked up
//!   ([`InetSockets::TcpAndDatagrams`]: a resolver asks DNS over UDP). Landlock confines no
//!   datagram socket for anyone, so every other datagram socket (and, elsewhere, UDP too)
//!   fails with `EACCES`: a UDP packet goes to any address and port (a service of the host
//!   or of its network, or out with what the process read). Every other type fails with
//!   `EACCES` too: Multipath TCP (`IPPROTO_MPTCP`, a TCP connection to any port that Landlock's
//!   rules do not see), SCTP (`SOCK_SEQPACKET`, or a stream of `IPPROTO_SCTP`), raw sockets.
//! - Families other than Unix, IPv4, IPv6 and netlink (the kernel's own, for addresses and
//!   routes) fail with `EACCES`: vsock (a virtual machine's host), packet, TIPC, RDS, and
//!   the rest.
//! - `sendto`, `sendmsg` and `sendmmsg` with `MSG_FASTOPEN` fail with `EACCES`: TCP Fast
//!   Open connects from the send, past the `connect` Landlock judges.
//! - `setsockopt(…, SOL_TCP, TCP_ULP, …)` fails with `EACCES`: an upper-layer protocol
//!   (`smc`) turns a TCP socket into one whose connections Landlock's rules do not see (this
//!   also refuses kernel TLS, which no runtime turns on by default).
//! - `listen` fails with `EACCES` where Unix sockets are refused too: a TCP socket that
//!   listens without `bind` takes a port the kernel picks, past Landlock's `bind` rule, and
//!   such a server has no other socket to listen on. A server allowed Unix sockets may listen
//!   (Chromium's profile socket), and so may, on a port the kernel picks, its TCP sockets.
//!
//! Built for x86-64 and aarch64; elsewhere there is no filter
//! ([`SyscallFilter::for_sandbox`] is `None`). The program is built once in the parent;
//! the child installs it between fork and exec (after no_new_privs, which seccomp requires of
//! an unprivileged process).
#![cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]

use libc::sock_filter;

/// `AUDIT_ARCH_X86_64` (`linux/audit.h`).
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E;
/// `AUDIT_ARCH_AARCH64` (`linux/audit.h`).
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7;
/// x32's system calls are the x86-64 architecture's with this bit set in the number (up to
/// `0x7fff_ffff`; a number with the top bit set, such as -1, is no call's: the kernel
/// answers `ENOSYS`, and a tracer skips a call by setting it).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
#[cfg(target_arch = "x86_64")]
const NEGATIVE_SYSCALL: u32 = 0x8000_0000;
/// `SECCOMP_RET_KILL_PROCESS` (`linux/seccomp.h`).
const RET_KILL_PROCESS: u32 = 0x8000_0000;
/// The bits of a socket's type that name it (`SOCK_TYPE_MASK`); the rest are flags
/// (`SOCK_CLOEXEC`, `SOCK_NONBLOCK`).
const SOCK_TYPE_MASK: u32 = 0xf;
/// `MSG_FASTOPEN` (`linux/socket.h`).
const MSG_FASTOPEN: u32 = 0x2000_0000;
/// `TCP_ULP` (`linux/tcp.h`): a TCP socket's upper-layer protocol, by name.
const TCP_ULP: u32 = 31;

/// Where the filter reads in `struct seccomp_data`.
const OFFSET_NR: u32 = std::mem::offset_of!(libc::seccomp_data, nr) as u32;
const OFFSET_ARCH: u32 = std::mem::offset_of!(libc::seccomp_data, arch) as u32;
const OFFSET_ARGS: u32 = std::mem::offset_of!(libc::seccomp_data, args) as u32;
/// The low half of argument `n` (a socket's domain and type are `int`s: the kernel reads
/// only those 32 bits).
const fn arg_low(n: u32) -> u32 {
    if cfg!(target_endian = "little") {
        OFFSET_ARGS + 8 * n
    } else {
        OFFSET_ARGS + 8 * n + 4
    }
}

/// The IPv4 and IPv6 sockets a sandboxed server may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InetSockets {
    /// Every kind: its network is `"all"`, Landlock judges none of its connections.
    Any,
    /// TCP (whose `connect` and `bind` Landlock judges) and UDP sockets: its network may need a
    /// name looked up ([`crate::NetworkRules::looks_up_names`]), which a resolver does over UDP.
    TcpAndDatagrams,
    /// TCP alone (whose `connect` and `bind` Landlock judges).
    Tcp,
}

/// A seccomp program, ready for `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, …)`.
pub struct SyscallFilter {
    program: Vec<sock_filter>,
}

impl std::fmt::Debug for SyscallFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyscallFilter")
            .field("instructions", &self.program.len())
            .finish()
    }
}

/// Where a jump of the program being written goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    NativeCall,
    Allow,
    Refuse(i32),
    Kill,
    CheckSocket,
    CheckPair,
    CheckPairType,
    CheckInet,
    CheckStream,
    CheckDatagram,
    /// A send whose flags are argument 2 (`sendmsg`) or 3 (`sendto`, `sendmmsg`).
    CheckSendFlags(u32),
    CheckSocketOption,
    CheckTcpOption,
}

/// An instruction before its jumps are resolved.
#[derive(Debug, Clone, Copy)]
enum Step {
    Load(u32),
    And(u32),
    JumpIfEqual(u32, Target),
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    JumpIfAtLeast(u32, Target),
    Return(Target),
    Label(Target),
}

impl SyscallFilter {
    /// The filter of a sandboxed server (the module's header): Unix sockets refused unless
    /// `unix_sockets`, and, unless `inet` is [`InetSockets::Any`] (its policy lists ports, or
    /// none), the sockets Landlock's TCP rules do not cover. `None` when it would refuse
    /// nothing (Unix sockets allowed, every port open), or on an architecture it is not built
    /// for.
    pub fn for_sandbox(unix_sockets: bool, inet: InetSockets) -> Option<Self> {
        if unix_sockets && inet == InetSockets::Any {
            return None;
        }
        program(unix_sockets, inet).map(|steps| Self {
            program: assemble(&steps),
        })
    }

    /// Install the filter on the calling thread (inherited by what it forks and execs). In
    /// the child between fork and exec, after no_new_privs: one system call, nothing
    /// allocated.
    #[allow(unsafe_code)]
    pub(crate) fn install(&self) -> std::io::Result<()> {
        let program = libc::sock_fprog {
            len: u16::try_from(self.program.len()).unwrap_or(u16::MAX),
            // The kernel only reads the program; it outlives the call.
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: prctl(2) with a pointer to a `sock_fprog` on this stack frame whose
        // program this value owns; both outlive the call, which copies the program.
        let set = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            )
        };
        if set != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The program of [`SyscallFilter::for_sandbox`], before its jumps are resolved.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn program(unix_sockets: bool, inet: InetSockets) -> Option<Vec<Step>> {
    use Step::{And, JumpIfEqual, Label, Load, Return};
    let confined_network = inet != InetSockets::Any;
    let datagram = if inet == InetSockets::TcpAndDatagrams {
        Target::CheckDatagram
    } else {
        Target::Refuse(libc::EACCES)
    };
    let nr = |call: libc::c_long| u32::try_from(call).unwrap_or(u32::MAX);
    let mut steps = vec![
        Load(OFFSET_ARCH),
        JumpIfEqual(NATIVE_ARCH, Target::NativeCall),
        Return(Target::Kill),
        Label(Target::NativeCall),
        Load(OFFSET_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    steps.extend([
        Step::JumpIfAtLeast(NEGATIVE_SYSCALL, Target::Allow),
        Step::JumpIfAtLeast(X32_SYSCALL_BIT, Target::Kill),
    ]);
    steps.push(JumpIfEqual(nr(libc::SYS_socket), Target::CheckSocket));
    if !unix_sockets {
        steps.push(JumpIfEqual(nr(libc::SYS_socketpair), Target::CheckPair));
    }
    if confined_network {
        steps.extend([
            JumpIfEqual(nr(libc::SYS_sendto), Target::CheckSendFlags(3)),
            JumpIfEqual(nr(libc::SYS_sendmmsg), Target::CheckSendFlags(3)),
            JumpIfEqual(nr(libc::SYS_sendmsg), Target::CheckSendFlags(2)),
            JumpIfEqual(nr(libc::SYS_setsockopt), Target::CheckSocketOption),
        ]);
        if !unix_sockets {
            steps.push(JumpIfEqual(
                nr(libc::SYS_listen),
                Target::Refuse(libc::EACCES),
            ));
        }
    }
    steps.extend([
        JumpIfEqual(nr(libc::SYS_io_uring_setup), Target::Refuse(libc::ENOSYS)),
        JumpIfEqual(nr(libc::SYS_io_uring_enter), Target::Refuse(libc::ENOSYS)),
        JumpIfEqual(
            nr(libc::SYS_io_uring_register),
            Target::Refuse(libc::ENOSYS),
        ),
        Return(Target::Allow),
        // socket(domain, type, protocol): no Unix socket unless allowed; with confined TCP,
        // only what Landlock's rules see.
        Label(Target::CheckSocket),
        Load(arg_low(0)),
    ]);
    if !unix_sockets {
        steps.push(JumpIfEqual(
            libc::AF_UNIX as u32,
            Target::Refuse(libc::EACCES),
        ));
    }
    if confined_network {
        steps.extend([
            JumpIfEqual(libc::AF_UNIX as u32, Target::Allow),
            JumpIfEqual(libc::AF_NETLINK as u32, Target::Allow),
            JumpIfEqual(libc::AF_INET as u32, Target::CheckInet),
            JumpIfEqual(libc::AF_INET6 as u32, Target::CheckInet),
            Return(Target::Refuse(libc::EACCES)),
            Label(Target::CheckInet),
            Load(arg_low(1)),
            And(SOCK_TYPE_MASK),
            JumpIfEqual(libc::SOCK_DGRAM as u32, datagram),
            JumpIfEqual(libc::SOCK_STREAM as u32, Target::CheckStream),
            Return(Target::Refuse(libc::EACCES)),
            Label(Target::CheckStream),
            Load(arg_low(2)),
            JumpIfEqual(0, Target::Allow),
            JumpIfEqual(libc::IPPROTO_TCP as u32, Target::Allow),
            Return(Target::Refuse(libc::EACCES)),
        ]);
        if inet == InetSockets::TcpAndDatagrams {
            // A resolver's socket is UDP (protocol 0 or named); not ping, UDP-Lite or L2TP.
            steps.extend([
                Label(Target::CheckDatagram),
                Load(arg_low(2)),
                JumpIfEqual(0, Target::Allow),
                JumpIfEqual(libc::IPPROTO_UDP as u32, Target::Allow),
                Return(Target::Refuse(libc::EACCES)),
            ]);
        }
        for flags_at in [3, 2] {
            steps.extend([
                Label(Target::CheckSendFlags(flags_at)),
                Load(arg_low(flags_at)),
                And(MSG_FASTOPEN),
                JumpIfEqual(MSG_FASTOPEN, Target::Refuse(libc::EACCES)),
                Return(Target::Allow),
            ]);
        }
        // setsockopt(fd, level, name, …): no upper-layer protocol on a TCP socket.
        steps.extend([
            Label(Target::CheckSocketOption),
            Load(arg_low(1)),
            JumpIfEqual(libc::SOL_TCP as u32, Target::CheckTcpOption),
            Return(Target::Allow),
            Label(Target::CheckTcpOption),
            Load(arg_low(2)),
            JumpIfEqual(TCP_ULP, Target::Refuse(libc::EACCES)),
            Return(Target::Allow),
        ]);
    } else {
        steps.push(Return(Target::Allow));
    }
    if !unix_sockets {
        steps.extend([
            // socketpair(domain, type, …): no Unix datagram pair.
            Label(Target::CheckPair),
            Load(arg_low(0)),
            JumpIfEqual(libc::AF_UNIX as u32, Target::CheckPairType),
            Return(Target::Allow),
            Label(Target::CheckPairType),
            Load(arg_low(1)),
            And(SOCK_TYPE_MASK),
            JumpIfEqual(libc::SOCK_DGRAM as u32, Target::Refuse(libc::EACCES)),
            Return(Target::Allow),
        ]);
    }
    steps.extend([
        Label(Target::Refuse(libc::EACCES)),
        Return(Target::Refuse(libc::EACCES)),
        Label(Target::Refuse(libc::ENOSYS)),
        Return(Target::Refuse(libc::ENOSYS)),
        Label(Target::Kill),
        Return(Target::Kill),
        Label(Target::Allow),
        Return(Target::Allow),
    ]);
    Some(steps)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn program(_: bool, _: InetSockets) -> Option<Vec<Step>> {
    None
}

/// `steps` as BPF instructions, each jump resolved to its label. A jump goes forward only,
/// at most 255 instructions (the program is a few dozen).
fn assemble(steps: &[Step]) -> Vec<sock_filter> {
    const LOAD_WORD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JUMP_EQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JUMP_GE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // Each label's index among the real instructions.
    let mut labels: Vec<(Target, usize)> = Vec::new();
    let mut index = 0;
    for step in steps {
        match step {
            Step::Label(target) => labels.push((*target, index)),
            _ => index += 1,
        }
    }
    let offset = |from: usize, target: Target| -> u8 {
        let at = labels
            .iter()
            .find(|(label, _)| *label == target)
            .map(|(_, at)| *at);
        match at {
            Some(at) if at > from => u8::try_from(at - from - 1).unwrap_or(u8::MAX),
            // Not written as a label (a bug the unit test catches): fall through.
            _ => 0,
        }
    };
    let mut program = Vec::with_capacity(index);
    for step in steps {
        let here = program.len();
        let instruction = match *step {
            Step::Label(_) => continue,
            Step::Load(at) => sock_filter {
                code: LOAD_WORD_ABS,
                jt: 0,
                jf: 0,
                k: at,
            },
            Step::And(mask) => sock_filter {
                code: AND,
                jt: 0,
                jf: 0,
                k: mask,
            },
            Step::JumpIfEqual(value, target) => sock_filter {
                code: JUMP_EQ,
                jt: offset(here, target),
                jf: 0,
                k: value,
            },
            Step::JumpIfAtLeast(value, target) => sock_filter {
                code: JUMP_GE,
                jt: offset(here, target),
                jf: 0,
                k: value,
            },
            Step::Return(target) => sock_filter {
                code: RETURN,
                jt: 0,
                jf: 0,
                k: match target {
                    Target::Refuse(errno) => {
                        libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
                    }
                    Target::Kill => RET_KILL_PROCESS,
                    Target::Allow
                    | Target::NativeCall
                    | Target::CheckSocket
                    | Target::CheckPair
                    | Target::CheckPairType
                    | Target::CheckInet
                    | Target::CheckStream
                    | Target::CheckDatagram
                    | Target::CheckSendFlags(_)
                    | Target::CheckSocketOption
                    | Target::CheckTcpOption => libc::SECCOMP_RET_ALLOW,
                },
            },
        };
        program.push(instruction);
    }
    program
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// One system call as the filter sees it: architecture, number, first two arguments.
    type Call = (u32, u32, u32, u32);

    /// What the program answers for `call`, read as the kernel reads it.
    fn run(filter: &SyscallFilter, (arch, nr, arg0, arg1): Call) -> u32 {
        run_with(filter, (arch, nr, [arg0, arg1, 0, 0]))
    }

    /// [`run`] with four arguments.
    fn run_with(filter: &SyscallFilter, (arch, nr, args): (u32, u32, [u32; 4])) -> u32 {
        let mut accumulator = 0u32;
        let mut at = 0usize;
        let program = &filter.program;
        loop {
            let op = program[at];
            at += 1;
            match op.code as u32 {
                code if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    accumulator = match op.k {
                        k if k == OFFSET_ARCH => arch,
                        k if k == OFFSET_NR => nr,
                        k if k == arg_low(0) => args[0],
                        k if k == arg_low(1) => args[1],
                        k if k == arg_low(2) => args[2],
                        k if k == arg_low(3) => args[3],
                        k => panic!("load of offset {k}"),
                    };
                }
                code if code == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => accumulator &= op.k,
                code if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    at += usize::from(if accumulator == op.k { op.jt } else { op.jf });
                }
                code if code == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => {
                    at += usize::from(if accumulator >= op.k { op.jt } else { op.jf });
                }
                code if code == libc::BPF_RET | libc::BPF_K => return op.k,
                code => panic!("instruction {code:#x}"),
            }
        }
    }

    /// The filter of a policy with every port open and no Unix sockets.
    fn no_unix_sockets() -> SyscallFilter {
        SyscallFilter::for_sandbox(false, InetSockets::Any).expect("built here")
    }

    #[test]
    fn unix_sockets_io_uring_and_foreign_abis_are_refused_and_the_rest_allowed() {
        let filter = no_unix_sockets();
        let refused = |code: i32| libc::SECCOMP_RET_ERRNO | code as u32;
        let allowed = libc::SECCOMP_RET_ALLOW;
        let native = |call: libc::c_long, arg0: i32, arg1: i32| -> Call {
            (NATIVE_ARCH, call as u32, arg0 as u32, arg1 as u32)
        };
        let (unix, inet, inet6) = (libc::AF_UNIX, libc::AF_INET, libc::AF_INET6);
        let (stream, datagram, seqpacket) =
            (libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_SEQPACKET);
        let flags = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        let (socket, pair) = (libc::SYS_socket, libc::SYS_socketpair);
        // (what, call, answer)
        let mut cases: Vec<(&str, Call, u32)> = vec![
            (
                "socket(AF_UNIX)",
                native(socket, unix, stream),
                refused(libc::EACCES),
            ),
            (
                "socket(AF_UNIX, DGRAM)",
                native(socket, unix, datagram),
                refused(libc::EACCES),
            ),
            ("socket(AF_INET)", native(socket, inet, stream), allowed),
            ("socket(AF_INET6)", native(socket, inet6, datagram), allowed),
            ("a stream pair", native(pair, unix, stream | flags), allowed),
            ("a seqpacket pair", native(pair, unix, seqpacket), allowed),
            (
                "a datagram pair",
                native(pair, unix, datagram),
                refused(libc::EACCES),
            ),
            (
                "a datagram pair, flags",
                native(pair, unix, datagram | flags),
                refused(libc::EACCES),
            ),
            ("connect", native(libc::SYS_connect, unix, 0), allowed),
            (
                "io_uring_setup",
                native(libc::SYS_io_uring_setup, 1, 0),
                refused(libc::ENOSYS),
            ),
            (
                "io_uring_enter",
                native(libc::SYS_io_uring_enter, 0, 0),
                refused(libc::ENOSYS),
            ),
            (
                "io_uring_register",
                native(libc::SYS_io_uring_register, 0, 0),
                refused(libc::ENOSYS),
            ),
            ("read", native(libc::SYS_read, unix, 0), allowed),
            (
                "another ABI's socket",
                (0x4000_0003, socket as u32, 1, 1),
                RET_KILL_PROCESS,
            ),
        ];
        #[cfg(target_arch = "x86_64")]
        cases.extend([
            (
                "x32's socket",
                (NATIVE_ARCH, X32_SYSCALL_BIT | 41, 1, 1),
                RET_KILL_PROCESS,
            ),
            (
                "call -1 (a tracer's skip)",
                (NATIVE_ARCH, u32::MAX, 0, 0),
                allowed,
            ),
        ]);
        for (what, call, answer) in cases {
            assert_eq!(run(&filter, call), answer, "{what}");
        }
    }

    /// With confined TCP, only the sockets Landlock's rules judge (TCP), and UDP ones where the
    /// policy may need a name looked up, are made, in the families a server needs, and a send
    /// that
    /// would connect (TCP Fast Open) or an upper-layer protocol that would take a TCP socket
    /// from those rules (`TCP_ULP`) is refused; Unix sockets as the policy says.
    #[test]
    fn with_confined_tcp_only_sockets_landlock_judges_are_made() {
        let refused = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let allowed = libc::SECCOMP_RET_ALLOW;
        let socket = |domain: i32, kind: i32, protocol: i32| {
            (
                NATIVE_ARCH,
                libc::SYS_socket as u32,
                [domain as u32, kind as u32, protocol as u32, 0],
            )
        };
        let send = |call: libc::c_long, flags_at: usize, flags: i32| {
            let mut args = [3, 0, 0, 0];
            args[flags_at] = flags as u32;
            (NATIVE_ARCH, call as u32, args)
        };
        let option = |level: i32, name: i32| {
            (
                NATIVE_ARCH,
                libc::SYS_setsockopt as u32,
                [3, level as u32, name as u32, 0],
            )
        };
        let (inet, inet6) = (libc::AF_INET, libc::AF_INET6);
        let (stream, datagram) = (libc::SOCK_STREAM, libc::SOCK_DGRAM);
        let flags = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        let fast_open = MSG_FASTOPEN as i32;
        const IPPROTO_MPTCP: i32 = 262;
        // (what, call, answer with Unix sockets allowed, answer without)
        let cases = [
            ("TCP", socket(inet, stream | flags, 0), allowed, allowed),
            (
                "TCP, named",
                socket(inet6, stream, libc::IPPROTO_TCP),
                allowed,
                allowed,
            ),
            ("UDP", socket(inet, datagram, 0), allowed, allowed),
            (
                "UDP, v6",
                socket(inet6, datagram | flags, libc::IPPROTO_UDP),
                allowed,
                allowed,
            ),
            (
                "ping",
                socket(inet6, datagram, libc::IPPROTO_ICMPV6),
                refused,
                refused,
            ),
            (
                "UDP-Lite",
                socket(inet, datagram, libc::IPPROTO_UDPLITE),
                refused,
                refused,
            ),
            (
                "Multipath TCP",
                socket(inet, stream, IPPROTO_MPTCP),
                refused,
                refused,
            ),
            (
                "Multipath TCP, v6",
                socket(inet6, stream | flags, IPPROTO_MPTCP),
                refused,
                refused,
            ),
            (
                "SCTP stream",
                socket(inet, stream, libc::IPPROTO_SCTP),
                refused,
                refused,
            ),
            (
                "SCTP",
                socket(inet6, libc::SOCK_SEQPACKET, 0),
                refused,
                refused,
            ),
            (
                "raw",
                socket(inet, libc::SOCK_RAW, libc::IPPROTO_TCP),
                refused,
                refused,
            ),
            (
                "netlink",
                socket(libc::AF_NETLINK, datagram, 0),
                allowed,
                allowed,
            ),
            ("vsock", socket(libc::AF_VSOCK, stream, 0), refused, refused),
            (
                "packet",
                socket(libc::AF_PACKET, datagram, 0),
                refused,
                refused,
            ),
            ("Unix", socket(libc::AF_UNIX, stream, 0), allowed, refused),
            ("sendto", send(libc::SYS_sendto, 3, 0), allowed, allowed),
            (
                "sendto, fast open",
                send(libc::SYS_sendto, 3, fast_open),
                refused,
                refused,
            ),
            (
                "sendto, fast open among flags",
                send(libc::SYS_sendto, 3, fast_open | libc::MSG_NOSIGNAL),
                refused,
                refused,
            ),
            (
                "sendmsg",
                send(libc::SYS_sendmsg, 2, libc::MSG_NOSIGNAL),
                allowed,
                allowed,
            ),
            (
                "sendmsg, fast open",
                send(libc::SYS_sendmsg, 2, fast_open),
                refused,
                refused,
            ),
            (
                "sendmmsg, fast open",
                send(libc::SYS_sendmmsg, 3, fast_open),
                refused,
                refused,
            ),
            (
                "sendmmsg",
                send(libc::SYS_sendmmsg, 3, libc::MSG_NOSIGNAL),
                allowed,
                allowed,
            ),
            (
                "TCP_ULP",
                option(libc::SOL_TCP, TCP_ULP as i32),
                refused,
                refused,
            ),
            (
                "listen",
                (NATIVE_ARCH, libc::SYS_listen as u32, [3, 128, 0, 0]),
                allowed,
                refused,
            ),
            (
                "TCP_NODELAY",
                option(libc::SOL_TCP, libc::TCP_NODELAY),
                allowed,
                allowed,
            ),
            (
                "SO_KEEPALIVE",
                option(libc::SOL_SOCKET, libc::SO_KEEPALIVE),
                allowed,
                allowed,
            ),
            (
                "option 31 of another level",
                option(libc::SOL_SOCKET, TCP_ULP as i32),
                allowed,
                allowed,
            ),
            (
                "a datagram pair",
                (
                    NATIVE_ARCH,
                    libc::SYS_socketpair as u32,
                    [libc::AF_UNIX as u32, datagram as u32, 0, 0],
                ),
                allowed,
                refused,
            ),
            (
                "io_uring_setup",
                (NATIVE_ARCH, libc::SYS_io_uring_setup as u32, [1, 0, 0, 0]),
                libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
                libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
            ),
        ];
        // (the answers of a policy that may need a name looked up: UDP for its resolver)
        let named = InetSockets::TcpAndDatagrams;
        let with_unix = SyscallFilter::for_sandbox(true, named).expect("built here");
        let without_unix = SyscallFilter::for_sandbox(false, named).expect("built here");
        for (what, call, with, without) in cases {
            assert_eq!(
                (run_with(&with_unix, call), run_with(&without_unix, call)),
                (with, without),
                "{what}"
            );
        }
        // Every port open: MPTCP and the rest are Landlock's business no more than TCP is.
        assert_eq!(
            run_with(&no_unix_sockets(), socket(inet, stream, IPPROTO_MPTCP)),
            allowed
        );
        assert!(SyscallFilter::for_sandbox(true, InetSockets::Any).is_none());
        // A policy that names no host (ports, or addresses): no datagram socket of IPv4 or
        // IPv6 either; the kernel's own (netlink) and the rest as above.
        for unix_sockets in [true, false] {
            let tcp = SyscallFilter::for_sandbox(unix_sockets, InetSockets::Tcp).expect("built");
            for (what, call, with, without) in cases {
                let expected = match what {
                    "UDP" | "UDP, v6" => refused,
                    _ if unix_sockets => with,
                    _ => without,
                };
                assert_eq!(run_with(&tcp, call), expected, "{what}, TCP alone");
            }
        }
    }

    #[test]
    fn every_jump_lands_on_an_instruction_and_no_label_is_missing() {
        for (unix_sockets, inet) in [
            (false, InetSockets::Any),
            (false, InetSockets::TcpAndDatagrams),
            (true, InetSockets::TcpAndDatagrams),
            (false, InetSockets::Tcp),
            (true, InetSockets::Tcp),
        ] {
            let filter = SyscallFilter::for_sandbox(unix_sockets, inet).expect("built here");
            let program = &filter.program;
            for (at, op) in program.iter().enumerate() {
                if op.code as u32 & 0x07 == libc::BPF_JMP {
                    assert!(at + 1 + usize::from(op.jt) < program.len(), "{at}");
                    assert!(op.jt > 0, "jump {at} resolved to the next instruction");
                }
            }
            assert_eq!(
                program.last().map(|op| op.code as u32),
                Some(libc::BPF_RET | libc::BPF_K)
            );
        }
    }
}
