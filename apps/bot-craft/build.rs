//! Links `botcraft` with its code laid out by use, when asked (`BOTCRAFT_LINK_ORDER=on`:
//! the Dockerfile, `bench-faces.sh`, `callgrind-faces.sh` and `link-order.sh` set it, and
//! `scripts/run.sh` where Rust links with its own LLD and no `RUSTFLAGS` are set).
//!
//! One binary holds every face, both store drivers, the encoder and the HTTP API: 32 MB of
//! code, of which a `mcp-stdio` process runs about 4 MB. The kernel maps code 64 KiB around
//! each page a process touches, so those 4 MB, spread over the whole text, made 14 MB of
//! resident code pages in every `mcp-stdio` an MCP client starts. `link-order.txt` lists the
//! functions the stdio faces run (made by `scripts/link-order.sh` from callgrind profiles),
//! and the linker puts them first, together. A function the list does not name is laid out as
//! it would be without it, so a stale list costs memory, never behaviour.
//!
//! Relative relocations are also packed (`-z pack-relative-relocs`): the dynamic loader
//! reads all of them at each start, 1.5 MB of table otherwise. The binary then needs glibc
//! 2.36 or later where it runs.
//!
//! Opt-in, and only for optimised builds for x86-64 glibc Linux, because both need what a
//! build cannot see from here: the linker must be LLD (`--symbol-ordering-file`; Rust's
//! rustup toolchains link with rust-lld there, but a distribution's rustc, a `-fuse-ld`
//! setting or mold do not), and the machine that runs the binary must have the glibc this
//! one has (the scripts that opt in build where the binary runs, or in an image whose
//! builder and runtime are the same Debian release).

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=link-order.txt");
    println!("cargo::rerun-if-env-changed=BOTCRAFT_LINK_ORDER");
    let asked = env::var("BOTCRAFT_LINK_ORDER").is_ok_and(|value| value == "on");
    // `release` for every profile that inherits from it (`serve` too).
    let optimised = env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let target = env::var("TARGET").unwrap_or_default();
    if !(asked && optimised && target == "x86_64-unknown-linux-gnu") {
        return;
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&manifest_dir).join("link-order.txt");
    if manifest_dir.is_empty() || !order.is_file() {
        println!("cargo::warning=BOTCRAFT_LINK_ORDER=on but no link-order.txt: not laid out");
    } else {
        // Each as its own argument of the linker (`-Xlinker`): `-Wl,` would split a path
        // with a comma in it.
        for arg in [
            format!("--symbol-ordering-file={}", order.display()),
            "--no-warn-symbol-ordering".to_owned(),
        ] {
            println!("cargo::rustc-link-arg-bin=botcraft=-Xlinker");
            println!("cargo::rustc-link-arg-bin=botcraft={arg}");
        }
    }
    if glibc_has_relr() {
        println!("cargo::rustc-link-arg-bin=botcraft=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc loads packed relative relocations (`DT_RELR`, 2.36 and later).
/// Unsure is no.
fn glibc_has_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (2, 36),
        _ => false,
    }
}
