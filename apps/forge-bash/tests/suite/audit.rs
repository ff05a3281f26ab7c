//! The audit log through the binary.

use pretty_assertions::assert_eq;

use super::Harness;

fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_line_per_call_with_escaped_fields() {
    let harness = Harness::start().await;
    let commands = [
        "echo ok",
        "exit 4",
        "rm -rf x",
        "printf 'a\\tb\\\\n'\t# a tab\necho second line",
    ];
    for command in commands {
        harness.run(command).await;
    }
    let records = harness.audit_records();
    let work = harness.work.display().to_string();
    let summary: Vec<(usize, String, String, String)> = records
        .iter()
        .map(|r| (r.len(), r[1].clone(), unescape(&r[3]), unescape(&r[4])))
        .collect();
    assert_eq!(
        summary,
        vec![
            (5, "0".into(), work.clone(), commands[0].into()),
            (5, "4".into(), work.clone(), commands[1].into()),
            (5, "blocked".into(), work.clone(), commands[2].into()),
            (5, "0".into(), work.clone(), commands[3].into()),
        ]
    );
    for record in &records {
        let time: jiff::Timestamp = record[0].parse().expect("RFC 3339 time");
        assert!(record[0].ends_with('Z'), "UTC: {}", record[0]);
        let file = harness.logs.join(format!(
            "audit-{}.tsv",
            time.to_zoned_datetime(jiff::tz::TimeZone::UTC).date()
        ));
        assert!(file.exists(), "{} exists", file.display());
        record[2].parse::<u64>().expect("duration in ms");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_write_whole_lines() {
    let harness = Harness::start().await;
    let commands: Vec<String> = (0..8)
        .map(|n| format!("echo {n}; : {}", "x".repeat(5000)))
        .collect();
    futures::future::join_all(commands.iter().map(|c| harness.run(c))).await;
    let mut logged: Vec<String> = harness
        .audit_records()
        .into_iter()
        .map(|record| {
            assert_eq!((record.len(), record[1].as_str()), (5, "0"));
            record[4].clone()
        })
        .collect();
    logged.sort();
    let mut expected = commands.clone();
    expected.sort();
    assert_eq!(logged, expected);
}
