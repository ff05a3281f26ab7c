//! Links `botcraft` with its code laid out by use, in optimised builds for x86-64 Linux.
//!
//! One binary holds every face, both store drivers, the encoder and the HTTP API: 32 MB of
//! code, of which a `mcp-stdio` process runs about 4 MB. The kernel maps code 64 KiB around
//! each page a process touches, so those 4 MB, spread over the whole text, made 14 MB of
//! resident code pages in every `mcp-stdio` an MCP client starts. `link-order.txt` lists the
//! functions the stdio faces run (made by `scripts/link-order.sh` from callgrind profiles),
//! and the linker (rust-lld, Rust's default here) puts them first, together. A function the
//! list does not name is laid out as it would be without it, so a stale list costs memory,
//! never correctness.
//!
//! Relative relocations are also packed (`-z pack-relative-relocs`, where the C library has
//! the loader support for them: glibc 2.36 and later): the dynamic loader reads all of them
//! at each start, 1.5 MB of table otherwise.
//!
//! `BOTCRAFT_LINK_ORDER=off` builds without either (a linker other than LLD, say).

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=link-order.txt");
    println!("cargo::rerun-if-env-changed=BOTCRAFT_LINK_ORDER");
    let wanted = env::var("BOTCRAFT_LINK_ORDER").map_or(true, |value| value != "off");
    // `release` for every profile that inherits from it (`serve` too).
    let optimised = env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let target = env::var("TARGET").unwrap_or_default();
    if !(wanted && optimised && target == "x86_64-unknown-linux-gnu") {
        return;
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&manifest_dir).join("link-order.txt");
    if order.is_file() {
        let arg = format!("-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo::rustc-link-arg-bin=botcraft={arg}");
        println!("cargo::rustc-link-arg-bin=botcraft=-Wl,--no-warn-symbol-ordering");
    }
    if glibc_has_relr() {
        println!("cargo::rustc-link-arg-bin=botcraft=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc loads packed relative relocations (`DT_RELR`, 2.36 and later).
/// The binary is built where it runs (`scripts/run.sh`) or in an image whose runtime is newer
/// than its builder (the Dockerfile); unsure is no.
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
