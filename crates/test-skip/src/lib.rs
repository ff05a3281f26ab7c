//! A test that cannot run here says so where CI's log shows it: on stdout and stderr, and as
//! a line `test: why` appended to the file `BOTCRAFT_SKIP_LOG` names (which `scripts/test.sh`
//! summarises at its end, failing under `BOTCRAFT_NO_SKIPS=1`).

use std::io::Write;

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
            .and_then(|mut file| writeln!(file, "{test}: {why}"));
        if let Err(error) = written {
            eprintln!("cannot append to {SKIP_LOG_VAR}: {error}");
        }
    }
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
}
