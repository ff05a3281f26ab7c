//! A test that cannot run here says so where CI's log shows it: on stdout and stderr, and as
//! a line `test: why` appended to the file `BOTCRAFT_SKIP_LOG` names (which `scripts/test.sh`
//! summarises at its end, failing under `BOTCRAFT_NO_SKIPS=1`).

use std::io::Write;

pub mod needs;

/// The variable naming the file skips are appended to.
pub const SKIP_LOG_VAR: &str = "BOTCRAFT_SKIP_LOG";

/// Say that `test` is skipped and why.
pub fn skipped(test: &str, why: &str) {
    let line = format!("{test}: skipped ({why})");
    println!("{line}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR).filter(|p| !p.is_empty()) {
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            // One write per line: tests skipping at once do not interleave (O_APPEND).
            .and_then(|mut file| file.write_all(format!("{test}: {why}\n").as_bytes()));
        if let Err(error) = written {
            eprintln!("cannot append to {SKIP_LOG_VAR}: {error}");
        }
    }
}

/// What a test returns when it skips: `()` or `Ok(())`.
pub trait SkipReturn {
    fn skip_return() -> Self;
}

impl SkipReturn for () {
    fn skip_return() {}
}

impl<E> SkipReturn for Result<(), E> {
    fn skip_return() -> Self {
        Ok(())
    }
}

/// `need` when it is there; when it is missing (`Err(why)`: what and how to install it),
/// `test` is [`skipped`] and `None` comes back. `cargo test` on a machine without the
/// programs a test runs (Node's npm packages, Chromium, Typesense, uv, the embedding model)
/// is the fast tier: those tests skip and say so. `scripts/test.sh` installs them all; under
/// `BOTCRAFT_NO_SKIPS=1` (CI) a missing one fails the test instead.
pub fn or_skip<T>(test: &str, need: Result<T, String>) -> Option<T> {
    match need {
        Ok(value) => Some(value),
        Err(why) => {
            assert!(
                std::env::var("BOTCRAFT_NO_SKIPS").as_deref() != Ok("1"),
                "{test}: {why} (BOTCRAFT_NO_SKIPS=1: every test must run here)"
            );
            skipped(test, &why);
            None
        }
    }
}

/// The path of the test a [`need!`] is in, from the type name of a function declared there
/// (`crate::module::test::__here`, with `::{{closure}}` inside an async test).
#[doc(hidden)]
pub fn test_path(here: &str) -> &str {
    let mut path = here.trim_end_matches("::__here");
    while let Some(outer) = path.strip_suffix("::{{closure}}") {
        path = outer;
    }
    path
}

/// `need!(expr)`: the value of `expr` (a `Result<T, String>`: a program or file the test
/// needs from outside the workspace, or why it is missing), or a skip of the enclosing
/// test, named by its package and path, which returns at once ([`or_skip`]).
#[macro_export]
macro_rules! need {
    ($need:expr) => {{
        fn __here() {}
        let test = ::std::format!(
            "{} {}",
            ::std::env!("CARGO_PKG_NAME"),
            $crate::test_path(::std::any::type_name_of_val(&__here))
        );
        match $crate::or_skip(&test, $need) {
            ::std::option::Option::Some(value) => value,
            ::std::option::Option::None => return $crate::SkipReturn::skip_return(),
        }
    }};
}

#[cfg(test)]
mod tests {
    /// Set in the child run of the test, which is the one that skips.
    const CHILD: &str = "TEST_SKIP_CHILD";

    #[test]
    fn a_skip_is_appended_to_the_log() {
        if std::env::var_os(CHILD).is_some() {
            super::skipped("a", "no x here");
            super::skipped("b", "no y");
            return;
        }
        // The variable is set for a child run of this test, as scripts/test.sh sets it.
        let log = std::env::temp_dir().join(format!("test-skip-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let status = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args(["--exact", "tests::a_skip_is_appended_to_the_log"])
            .env(super::SKIP_LOG_VAR, &log)
            .env(CHILD, "1")
            .status()
            .expect("run the child");
        assert!(status.success());
        let text = std::fs::read_to_string(&log).expect("the log");
        let _ = std::fs::remove_file(&log);
        assert_eq!(text, "a: no x here\nb: no y\n");
    }

    fn missing() -> Result<u32, String> {
        Err("no widget here: install it".to_owned())
    }

    fn needs_a_widget() -> Result<(), String> {
        let widget = need!(missing());
        Err(format!("went on without the widget, with {widget}"))
    }

    #[test]
    fn a_missing_need_skips_the_test_by_its_path_or_fails_under_no_skips() {
        if std::env::var_os(CHILD).is_some() {
            assert_eq!(needs_a_widget(), Ok(()));
            return;
        }
        let log = std::env::temp_dir().join(format!("test-skip-need-{}.log", std::process::id()));
        let run = |no_skips: &str| {
            let _ = std::fs::remove_file(&log);
            let status = std::process::Command::new(std::env::current_exe().expect("exe"))
                .args([
                    "--exact",
                    "tests::a_missing_need_skips_the_test_by_its_path_or_fails_under_no_skips",
                ])
                .env(super::SKIP_LOG_VAR, &log)
                .env(CHILD, "1")
                .env("BOTCRAFT_NO_SKIPS", no_skips)
                .output()
                .expect("run the child");
            (
                status.status.success(),
                std::fs::read_to_string(&log).unwrap_or_default(),
            )
        };
        assert_eq!(
            run(""),
            (
                true,
                "test-skip test_skip::tests::needs_a_widget: no widget here: install it\n"
                    .to_owned()
            )
        );
        assert_eq!(run("1"), (false, String::new()));
        let _ = std::fs::remove_file(&log);
        assert_eq!(super::or_skip("t", Ok::<_, String>(7)), Some(7));
        assert_eq!(
            super::test_path("all::suite::a::runs::{{closure}}::{{closure}}::__here"),
            "all::suite::a::runs"
        );
    }
}
