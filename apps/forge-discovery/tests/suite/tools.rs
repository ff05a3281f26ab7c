//! Every output format, pinned by snapshots over the fixture repository.

use std::fs;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{fixture_repo, server_over, stderr_line_with};

/// (snapshot name, tool, arguments)
fn cases() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("list_departments", "list_departments", json!({})),
        (
            "list_projects_forge",
            "list_projects",
            json!({"department": "Forge"}),
        ),
        (
            "list_projects_ignores_case",
            "list_projects",
            json!({"department": "marketing"}),
        ),
        (
            "list_projects_none",
            "list_projects",
            json!({"department": "Sales"}),
        ),
        (
            "phase_from_frontmatter",
            "get_project_phase",
            json!({"project": "Taxonomy", "department": "Forge"}),
        ),
        (
            "phase_from_readme_line",
            "get_project_phase",
            json!({"project": "Website", "department": "Forge"}),
        ),
        (
            "phase_without_readme",
            "get_project_phase",
            json!({"project": "Scratch", "department": "Forge"}),
        ),
        (
            "phase_number",
            "get_project_phase",
            json!({"project": "BrandRefresh", "department": "Marketing"}),
        ),
        (
            "project_files",
            "get_project_files",
            json!({"project": "Taxonomy", "department": "Forge"}),
        ),
        ("list_skills_all", "list_skills", json!({})),
        (
            "list_skills_forge",
            "list_skills",
            json!({"department": "Forge"}),
        ),
        (
            "list_skills_none",
            "list_skills",
            json!({"department": "Sales", "ignored": 1}),
        ),
        (
            "skill_details",
            "get_skill_details",
            json!({"skill": "pdf-tools"}),
        ),
        (
            "skill_details_in_department",
            "get_skill_details",
            json!({"skill": "report-writing", "department": "Sales"}),
        ),
        ("find_typo", "find", json!({"query": "taxnomy"})),
        ("find_partial_words", "find", json!({"query": "rep writ"})),
        ("find_nothing", "find", json!({"query": "zebra"})),
    ]
}

#[tokio::test]
async fn every_output_format_matches_its_snapshot() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    for (name, tool, arguments) in cases() {
        let outcome = server.call(tool, arguments).await.expect("tools/call");
        assert!(!outcome.is_error, "{name}: {}", outcome.text);
        insta::assert_snapshot!(name, outcome.text);
    }
    server.close().await.expect("close");
}

#[tokio::test]
async fn an_empty_repository_lists_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = server_over(dir.path()).await;
    let cases = [
        (
            "list_departments",
            json!({}),
            "Departments (0):\n\nNo departments found. A department is a top-level folder with a README.md.",
        ),
        (
            "list_skills",
            json!({}),
            "Skills (0):\n\nNo skills. A skill is a folder {Department}/Skills/{Skill}/ with a SKILL.md.",
        ),
        (
            "find",
            json!({"query": "anything"}),
            "No matches for \"anything\" among 0 departments, 0 projects and 0 skills.",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let outcome = server.call(tool, arguments).await.expect("tools/call");
        assert_eq!((outcome.is_error, outcome.text.as_str()), (false, expected));
    }
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_repository_that_appears_later_is_picked_up_without_restart() {
    let fixture = fixture_repo();
    let dir = tempfile::tempdir().expect("tempdir");
    let later = dir.path().join("later");
    let server = server_over(&later).await;

    let before = server
        .call("list_departments", json!({}))
        .await
        .expect("tools/call");
    assert_eq!(
        (before.is_error, before.text),
        (
            true,
            format!(
                "The repository {} (REPO_PATH) does not exist. The nearest existing folder is {}. \
                 Set REPO_PATH to the repository checkout; it is looked up again on every call.",
                later.display(),
                dir.path().display()
            )
        )
    );
    let line = stderr_line_with(&server, "reason=").await;
    assert!(
        line.starts_with(
            "forge-discovery: reason=stdio.not_configured tool=list_departments The repository"
        ),
        "{line}"
    );

    fs::rename(&fixture.root, &later).expect("move the repository into place");
    let after = server
        .call("list_departments", json!({}))
        .await
        .expect("tools/call");
    assert!(!after.is_error, "{}", after.text);
    assert!(after.text.starts_with("Departments (3):"), "{}", after.text);
    server.close().await.expect("close");
}

#[tokio::test]
async fn changes_on_disk_show_on_the_next_call() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    let phase = json!({"project": "Website", "department": "Forge"});
    let before = server
        .call("get_project_phase", phase.clone())
        .await
        .expect("call");
    assert!(before.text.contains("Phase: Design"), "{}", before.text);
    fs::write(
        repo.root.join("Forge/Projects/Website/README.md"),
        "---\nphase: Launch\n---\n# Website\n",
    )
    .expect("edit README");
    let after = server.call("get_project_phase", phase).await.expect("call");
    assert!(after.text.contains("Phase: Launch"), "{}", after.text);
    server.close().await.expect("close");
}
