//! Bad input is a tool error that says what exists instead; it never takes
//! the server down.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{fixture_repo, server_over, stderr_line_with};

#[tokio::test]
async fn bad_input_is_a_tool_error_naming_what_exists() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "list_projects",
            json!({"department": "Forj"}),
            "Department \"Forj\" not found. Did you mean \"Forge\"? Departments: Forge, Marketing, Sales.",
        ),
        (
            "list_projects",
            json!({"department": "Engineering"}),
            "Department \"Engineering\" not found. Departments: Forge, Marketing, Sales.",
        ),
        (
            "list_projects",
            json!({"department": "../Forge"}),
            "Department \"../Forge\" not found. Did you mean \"Forge\"? Departments: Forge, Marketing, Sales.",
        ),
        (
            "get_project_phase",
            json!({"project": "Taxonmy", "department": "Forge"}),
            "Project \"Taxonmy\" not found in Forge. Did you mean \"Taxonomy\"? Projects in Forge: Scratch, Taxonomy, Website.",
        ),
        (
            "get_project_files",
            json!({"project": "Website", "department": "Sales"}),
            "Project \"Website\" not found in Sales. Projects in Sales: (none).",
        ),
        (
            "get_skill_details",
            json!({"skill": "report-writing"}),
            "Skill \"report-writing\" exists in several departments: Marketing, Sales. Pass `department` to choose one.",
        ),
        (
            "get_skill_details",
            json!({"skill": "pdf-tool"}),
            "Skill \"pdf-tool\" not found. Did you mean \"pdf-tools\"? Skills: pdf-tools, report-writing, taxonomy-tagging.",
        ),
        (
            "get_skill_details",
            json!({"skill": "pdf-tools", "department": "Sales"}),
            "Skill \"pdf-tools\" not found in Sales. Skills in Sales: report-writing.",
        ),
        (
            "list_skills",
            json!({"department": "Notes"}),
            "Department \"Notes\" not found. Departments: Forge, Marketing, Sales.",
        ),
        (
            "find",
            json!({"query": " -- "}),
            "The query is empty: give at least one word to look for.",
        ),
        (
            "list_projects",
            json!({}),
            "Invalid arguments for tool list_projects: missing field `department`",
        ),
        (
            "get_project_phase",
            json!({"project": 7, "department": "Forge"}),
            "Invalid arguments for tool get_project_phase: invalid type: integer `7`, expected a string",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let outcome = server
            .call(tool, arguments.clone())
            .await
            .expect("a tool error is a result, not a protocol error");
        assert_eq!(
            (outcome.is_error, outcome.text.as_str()),
            (true, expected),
            "{tool} {arguments}"
        );
        let line = stderr_line_with(&server, expected).await;
        assert_eq!(
            line,
            format!("forge-discovery: reason=stdio.tool_error tool={tool} {expected}")
        );
    }
    // Still serving.
    let alive = server
        .call("list_departments", json!({}))
        .await
        .expect("call");
    assert!(!alive.is_error, "{}", alive.text);
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_repository_path_that_is_a_file_is_not_configured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("repo.txt");
    std::fs::write(&file, "not a folder").expect("write");
    let server = server_over(&file).await;
    let outcome = server
        .call("find", json!({"query": "forge"}))
        .await
        .expect("call");
    let expected = format!(
        "The repository path {} (REPO_PATH) is not a directory. Set REPO_PATH to the repository checkout.",
        file.display()
    );
    assert_eq!(
        (outcome.is_error, outcome.text.as_str()),
        (true, expected.as_str())
    );
    let line = stderr_line_with(&server, "reason=").await;
    assert_eq!(
        line,
        format!("forge-discovery: reason=stdio.not_configured tool=find {expected}")
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    let error = server
        .call("list_everything", json!({}))
        .await
        .expect_err("unknown tool");
    assert!(
        error.to_string().contains("Unknown tool: list_everything"),
        "{error}"
    );
    server.close().await.expect("close");
}
