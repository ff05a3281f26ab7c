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
//! Built for x86-64 and aarch64; elsewhere there is no filter
//! ([`SyscallFilter::no_unix_sockets`] is `None`). The program is built once in the parent;
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
    /// The filter that refuses Unix sockets of a server's own making (the module's header);
    /// `None` on an architecture it is not built for.
    pub fn no_unix_sockets() -> Option<Self> {
        program().map(|steps| Self {
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

/// The program of [`SyscallFilter::no_unix_sockets`], before its jumps are resolved.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn program() -> Option<Vec<Step>> {
    use Step::{And, JumpIfEqual, Label, Load, Return};
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
    steps.extend([
        JumpIfEqual(nr(libc::SYS_socket), Target::CheckSocket),
        JumpIfEqual(nr(libc::SYS_socketpair), Target::CheckPair),
        JumpIfEqual(nr(libc::SYS_io_uring_setup), Target::Refuse(libc::ENOSYS)),
        JumpIfEqual(nr(libc::SYS_io_uring_enter), Target::Refuse(libc::ENOSYS)),
        JumpIfEqual(
            nr(libc::SYS_io_uring_register),
            Target::Refuse(libc::ENOSYS),
        ),
        Return(Target::Allow),
        // socket(domain, …): no Unix socket.
        Label(Target::CheckSocket),
        Load(arg_low(0)),
        JumpIfEqual(libc::AF_UNIX as u32, Target::Refuse(libc::EACCES)),
        Return(Target::Allow),
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
fn program() -> Option<Vec<Step>> {
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
                    | Target::CheckPairType => libc::SECCOMP_RET_ALLOW,
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
                        k if k == arg_low(0) => arg0,
                        k if k == arg_low(1) => arg1,
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

    #[test]
    fn unix_sockets_io_uring_and_foreign_abis_are_refused_and_the_rest_allowed() {
        let filter = SyscallFilter::no_unix_sockets().expect("built here");
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

    #[test]
    fn every_jump_lands_on_an_instruction_and_no_label_is_missing() {
        let filter = SyscallFilter::no_unix_sockets().expect("built here");
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
