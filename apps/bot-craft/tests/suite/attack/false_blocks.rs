//! The false-block suite: ordinary work under the sandbox, in the same layouts as the
//! attacks, each case asserting that it works (and what it printed).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::FakeLlm;

use super::common::playwright_server;
use super::{Attacked, Layout, run};

/// (what, command, what its output holds)
fn cases(llm_url: &str) -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "git init, commit and status in the workspace",
            "d=fb-repo-$$ && git init -q $d && cd $d && echo one > one.txt && git add one.txt \
             && git -c user.name=Tester -c user.email=t@example.com commit -qm first \
             && echo two >> one.txt && git status --short && git log --format=%s"
                .to_owned(),
            " M one.txt\\nfirst",
        ),
        ("python3 -c", "python3 -c 'print(6 * 7)'".to_owned(), "42"),
        ("node -e", "node -e 'console.log(6 * 7)'".to_owned(), "42"),
        (
            "curl to an allowed host",
            format!("curl -s -o /dev/null -w 'http %{{http_code}}' {llm_url}/v1/models"),
            "http ",
        ),
        (
            "read /etc/os-release",
            "grep -c '^ID=' /etc/os-release".to_owned(),
            "1",
        ),
        (
            "ls /usr/bin",
            "ls /usr/bin | grep -x -c env".to_owned(),
            "1",
        ),
        (
            "write the workspace",
            "echo written > fb-note.txt && cat fb-note.txt".to_owned(),
            "written",
        ),
        (
            "write a private /tmp",
            "f=$(mktemp) && echo temp > \"$f\" && cat \"$f\" && case \"$f\" in \"$TMPDIR\"/*) echo private;; esac"
                .to_owned(),
            "temp\\nprivate",
        ),
    ]
}

/// Every case works under the sandbox.
pub async fn ordinary_work_is_not_blocked(
    at: &Attacked,
    layout: Layout,
    llm: &FakeLlm,
) -> anyhow::Result<()> {
    let mut outcomes = Vec::new();
    let mut expected = Vec::new();
    for (what, command, holds) in cases(llm.openai_base_url().trim_end_matches("/v1")) {
        let (status, body) = at
            .send(
                reqwest::Method::POST,
                "/api/servers/forge-bash/tools/run/call",
                &at.admin,
                Some(json!({"arguments": run(command)})),
            )
            .await?;
        let result: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let worked = status == 200
            && result["isError"] != json!(true)
            && body.contains(holds)
            && body.contains("[exit:0");
        if !worked {
            println!("{layout:?}: false block? {what}: {status} {body}");
        }
        outcomes.push((what, worked));
        expected.push((what, true));
    }
    // The file tools in the workspace: write, then read back.
    let (_, wrote) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/forge-filesystem/tools/write_file/call",
            &at.admin,
            Some(json!({"arguments": {"path": "docs/fb.md", "content": "plain work\n"}})),
        )
        .await?;
    let (_, read) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/forge-filesystem/tools/read_text_file/call",
            &at.admin,
            Some(json!({"arguments": {"path": "docs/fb.md"}})),
        )
        .await?;
    outcomes.push((
        "forge-filesystem writes and reads the workspace",
        !wrote.contains("\"isError\":true") && read.contains("plain work"),
    ));
    expected.push(("forge-filesystem writes and reads the workspace", true));
    let browsed = playwright_loads_a_page_and_takes_a_screenshot(at).await;
    if let Err(error) = &browsed {
        println!("{layout:?}: false block? Playwright: {error:#}");
    }
    outcomes.push((
        "Playwright loads a page and takes a screenshot",
        browsed.is_ok(),
    ));
    expected.push(("Playwright loads a page and takes a screenshot", true));
    assert_eq!(outcomes, expected, "{layout:?}: false blocks");
    Ok(())
}

/// Playwright MCP (the pinned one of `e2e/`, the system Chromium) added with the default
/// sandbox policy: a page loads, its snapshot is written in the workspace with the page's
/// text, and a screenshot comes back as an image.
async fn playwright_loads_a_page_and_takes_a_screenshot(at: &Attacked) -> anyhow::Result<()> {
    let page = &at.web.page;
    let mut browser = playwright_server(&at.workspace().join(".playwright-mcp"))?;
    // As seeded: through the egress proxy, which allows this page (BOTCRAFT_BROWSER_ALLOW),
    // and TCP to the proxy's port alone.
    browser["env"] = Value::Object(
        store::PLAYWRIGHT_ENV
            .iter()
            .map(|(key, value)| ((*key).to_owned(), Value::from(*value)))
            .collect(),
    );
    browser["sandbox"] = serde_json::to_value(sandbox::SandboxPolicy {
        unix_sockets: true,
        ..sandbox::SandboxPolicy::with_network(store::playwright_network())
    })?;
    let (status, body) = at
        .send(
            reqwest::Method::POST,
            "/api/servers",
            &at.admin,
            Some(browser),
        )
        .await?;
    anyhow::ensure!(status == 201, "add the browser: {status} {body}");
    let call = |tool: &'static str, arguments: Value| async move {
        let (status, body) = at
            .send(
                reqwest::Method::POST,
                &format!("/api/servers/browser/tools/{tool}/call"),
                &at.admin,
                Some(json!({ "arguments": arguments })),
            )
            .await?;
        anyhow::ensure!(
            status == 200 && !body.contains("\"isError\":true"),
            "{tool}: {status} {body}"
        );
        anyhow::Ok(body)
    };
    // This Playwright MCP writes the page's snapshot into its output folder (the workspace)
    // and names the file: read there, it holds the page's text.
    let navigated = call("browser_navigate", json!({ "url": page })).await?;
    let snapshot = navigated
        .split("](")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .filter(|path| path.ends_with(".yml"))
        .ok_or_else(|| anyhow::anyhow!("no snapshot file named: {navigated}"))?;
    let text = std::fs::read_to_string(at.workspace().join(snapshot))?;
    anyhow::ensure!(
        text.contains("Sandboxed browsing works"),
        "the page's text in {snapshot}: {text}"
    );
    let shot = call("browser_take_screenshot", json!({})).await?;
    anyhow::ensure!(
        shot.contains("\"type\":\"image\""),
        "no image: {}",
        &shot[..shot.len().min(400)]
    );
    at.stop("browser").await
}
