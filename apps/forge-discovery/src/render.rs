//! The text every tool answers with. One function per output format; the
//! formats are documented in the README and pinned by snapshot tests.

use std::fmt::Write as _;
use std::time::SystemTime;

use crate::facts::PhaseSource;
use crate::files::{MAX_PROJECT_FILES, ProjectFiles};
use crate::fuzzy::Hit;
use crate::layout::{DepartmentSummary, Project, SKILL_FILE, Skill, SkillDetails};

/// `find` shows at most this many hits.
pub const MAX_FIND_HITS: usize = 20;

const NO_SUMMARY: &str = "(no summary)";

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

pub fn departments(departments: &[DepartmentSummary]) -> String {
    let mut text = format!("Departments ({}):\n", departments.len());
    if departments.is_empty() {
        text.push_str(
            "\nNo departments found. A department is a top-level folder with a README.md.",
        );
        return text;
    }
    text.push('\n');
    for department in departments {
        let _ = writeln!(
            text,
            "- {}: {} ({}, {})",
            department.name,
            department.summary.as_deref().unwrap_or(NO_SUMMARY),
            plural(department.projects, "project", "projects"),
            plural(department.skills, "skill", "skills"),
        );
    }
    text.truncate(text.trim_end().len());
    text
}

fn phase_label(project: &Project) -> &str {
    project.phase.as_deref().unwrap_or("not set")
}

pub fn projects(department: &str, projects: &[Project]) -> String {
    let mut text = format!("Projects in {department} ({}):\n", projects.len());
    if projects.is_empty() {
        let _ = write!(
            text,
            "\nNo projects. Projects are folders under {department}/Projects/."
        );
        return text;
    }
    text.push('\n');
    for project in projects {
        let _ = writeln!(
            text,
            "- {} [phase: {}]: {}",
            project.name,
            phase_label(project),
            project.summary.as_deref().unwrap_or(NO_SUMMARY),
        );
    }
    text.truncate(text.trim_end().len());
    text
}

pub fn project_phase(project: &Project) -> String {
    let readme = format!("{}/README.md", project.rel_dir);
    let source = match project.phase_source {
        PhaseSource::Frontmatter => format!("frontmatter `phase` of {readme}"),
        PhaseSource::ReadmeLine => format!("the \"Phase:\" line of {readme}"),
        PhaseSource::NotSet => {
            format!("none: add `phase: <name>` to the frontmatter of {readme}")
        }
        PhaseSource::NoReadme => format!(
            "none: {} has no README.md; create one with `phase: <name>` in its frontmatter",
            project.rel_dir
        ),
    };
    format!(
        "Project: {}\nDepartment: {}\nPhase: {}\nSource: {source}",
        project.name,
        project.department,
        phase_label(project),
    )
}

/// Bytes as `512 B`, `1.5 KB`, `2.0 MB` (1024-based).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A modification time as RFC 3339 UTC to the second, e.g. `2026-01-02T03:04:05Z`.
pub fn timestamp(time: Option<SystemTime>) -> String {
    time.and_then(|time| jiff::Timestamp::try_from(time).ok())
        .and_then(|ts| jiff::Timestamp::from_second(ts.as_second()).ok())
        .map(|ts| ts.to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}

pub fn project_files(project: &Project, listing: &ProjectFiles) -> String {
    let count = listing.files.len() + listing.more;
    let mut text = format!(
        "Files in {} ({}, {} total):\n",
        project.rel_dir,
        plural(count, "file", "files"),
        size(listing.total_size)
    );
    if count == 0 {
        text.push_str("\nNo files.");
        return text;
    }
    text.push('\n');
    for file in &listing.files {
        let _ = writeln!(
            text,
            "- {} | {} | {} | modified {}",
            file.path,
            file.kind,
            size(file.size),
            timestamp(file.modified)
        );
    }
    if listing.more > 0 {
        let _ = writeln!(
            text,
            "… and {} more (the listing stops at {MAX_PROJECT_FILES})",
            plural(listing.more, "file", "files")
        );
    }
    text.truncate(text.trim_end().len());
    text
}

pub fn skills(department: Option<&str>, skills: &[Skill]) -> String {
    let mut text = match department {
        Some(department) => format!("Skills in {department} ({}):\n", skills.len()),
        None => format!("Skills ({}):\n", skills.len()),
    };
    if skills.is_empty() {
        let place = department.unwrap_or("{Department}");
        let _ = write!(
            text,
            "\nNo skills. A skill is a folder {place}/Skills/{{Skill}}/ with a {SKILL_FILE}."
        );
        return text;
    }
    text.push('\n');
    for skill in skills {
        let _ = writeln!(
            text,
            "- {} ({}): {}",
            skill.name,
            skill.department,
            skill.description.as_deref().unwrap_or("(no description)")
        );
    }
    text.truncate(text.trim_end().len());
    text
}

pub fn skill_details(details: &SkillDetails) -> String {
    let skill = &details.skill;
    let mut text = format!(
        "Skill: {}\nDepartment: {}\nPath: {}/{SKILL_FILE}\n",
        skill.name, skill.department, skill.rel_dir
    );
    if details.files.is_empty() {
        text.push_str("Files: (none besides SKILL.md)\n");
    } else {
        let _ = write!(text, "Files: {}", details.files.join(", "));
        if details.more_files > 0 {
            let _ = write!(text, ", … and {} more", details.more_files);
        }
        text.push('\n');
    }
    if let Some(error) = &details.frontmatter_error {
        let _ = writeln!(text, "Warning: the frontmatter is not valid YAML: {error}");
    }
    text.push('\n');
    text.push_str(&details.content);
    if details.truncated {
        text.push_str("\n\n[SKILL.md is longer than 256 KiB; the rest is not shown]");
    }
    text
}

pub fn find(query: &str, hits: &[Hit], searched: &SearchedCounts) -> String {
    if hits.is_empty() {
        return format!(
            "No matches for \"{query}\" among {}, {} and {}.",
            plural(searched.departments, "department", "departments"),
            plural(searched.projects, "project", "projects"),
            plural(searched.skills, "skill", "skills"),
        );
    }
    let shown = hits.len().min(MAX_FIND_HITS);
    let mut text = if shown < hits.len() {
        format!(
            "Results for \"{query}\" (top {shown} of {}):\n\n",
            hits.len()
        )
    } else {
        format!("Results for \"{query}\" ({shown}):\n\n")
    };
    for (rank, hit) in hits.iter().take(shown).enumerate() {
        let _ = writeln!(
            text,
            "{}. [{}] {} ({}) score {:.2}",
            rank + 1,
            hit.candidate.kind.as_str(),
            hit.candidate.name,
            hit.candidate.path,
            hit.score
        );
    }
    text.truncate(text.trim_end().len());
    text
}

/// How much `find` looked through, for its "no matches" answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchedCounts {
    pub departments: usize,
    pub projects: usize,
    pub skills: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sizes_are_human_readable() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KB"),
            (1536, "1.5 KB"),
            (5 * 1024 * 1024, "5.0 MB"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(size(bytes), expected);
        }
    }

    #[test]
    fn timestamps_are_utc_seconds() {
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_767_323_045_678);
        assert_eq!(timestamp(Some(time)), "2026-01-02T03:04:05Z");
        assert_eq!(timestamp(None), "unknown");
    }
}
