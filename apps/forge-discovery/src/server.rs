//! The MCP face of forge-discovery: the seven tools (names and inputs as in
//! the migration plan, seed §3.3), their parameters, and the mapping of
//! layout errors to reason-coded tool failures.
//!
//! Every call opens the repository afresh (REPO_PATH is looked at per call)
//! and does its filesystem work on a blocking thread.

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use server_kit::{
    Identity, Tool, ToolAnnotations, ToolCall, ToolFailure, ToolOutput, Toolbox, empty_schema,
    tool_spec,
};

use crate::facts::FactsCache;
use crate::fuzzy::{Candidate, Kind, Query};
use crate::layout::{LayoutError, Repo};
use crate::render::{self, SearchedCounts};

pub const LIST_DEPARTMENTS: &str = "list_departments";
pub const LIST_PROJECTS: &str = "list_projects";
pub const GET_PROJECT_PHASE: &str = "get_project_phase";
pub const GET_PROJECT_FILES: &str = "get_project_files";
pub const LIST_SKILLS: &str = "list_skills";
pub const GET_SKILL_DETAILS: &str = "get_skill_details";
pub const FIND: &str = "find";

#[derive(Debug, Deserialize, JsonSchema)]
struct ListProjectsParams {
    /// Department name: a top-level folder of the repository, e.g. "Forge".
    department: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ProjectParams {
    /// Project name: a folder under {department}/Projects/.
    project: String,
    /// Department name: a top-level folder of the repository, e.g. "Forge".
    department: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ListSkillsParams {
    /// Only the skills of this department; all departments when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    department: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SkillParams {
    /// Skill name: its folder under {department}/Skills/ or the `name` in its SKILL.md.
    skill: String,
    /// The department the skill belongs to; needed only when several have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    department: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct FindParams {
    /// Words to look for; typos and partial words are fine.
    query: String,
}

/// forge-discovery's toolbox: browses the repository at `repo_path`.
#[derive(Debug, Clone)]
pub struct Discovery {
    repo_path: PathBuf,
    cache: Arc<FactsCache>,
}

impl Discovery {
    pub fn new(repo_path: PathBuf) -> Self {
        Self {
            repo_path,
            cache: Arc::new(FactsCache::default()),
        }
    }

    fn open(&self) -> Result<Repo<'_>, LayoutError> {
        Repo::open(&self.repo_path, &self.cache)
    }

    /// Run one tool against the repository, synchronously.
    fn run(&self, call: &ToolCall) -> Result<String, ToolFailure> {
        match call.name.as_str() {
            LIST_DEPARTMENTS => {
                let repo = self.open().map_err(failure)?;
                Ok(render::departments(
                    &repo.department_summaries().map_err(failure)?,
                ))
            }
            LIST_PROJECTS => {
                let params: ListProjectsParams = call.parse()?;
                let repo = self.open().map_err(failure)?;
                let department = repo.department(&params.department).map_err(failure)?;
                let projects = repo.projects(&department).map_err(failure)?;
                Ok(render::projects(&department.name, &projects))
            }
            GET_PROJECT_PHASE => {
                let params: ProjectParams = call.parse()?;
                let repo = self.open().map_err(failure)?;
                let department = repo.department(&params.department).map_err(failure)?;
                let project = repo
                    .project(&department, &params.project)
                    .map_err(failure)?;
                Ok(render::project_phase(&project))
            }
            GET_PROJECT_FILES => {
                let params: ProjectParams = call.parse()?;
                let repo = self.open().map_err(failure)?;
                let department = repo.department(&params.department).map_err(failure)?;
                let project = repo
                    .project(&department, &params.project)
                    .map_err(failure)?;
                let listing = repo.project_files(&project).map_err(failure)?;
                Ok(render::project_files(&project, &listing))
            }
            LIST_SKILLS => {
                let params: ListSkillsParams = call.parse()?;
                let repo = self.open().map_err(failure)?;
                let department = match params.department.as_deref() {
                    Some(name) => Some(repo.department(name).map_err(failure)?),
                    None => None,
                };
                let skills = repo.skills(department.as_ref()).map_err(failure)?;
                Ok(render::skills(
                    department.as_ref().map(|d| d.name.as_str()),
                    &skills,
                ))
            }
            GET_SKILL_DETAILS => {
                let params: SkillParams = call.parse()?;
                let repo = self.open().map_err(failure)?;
                let department = match params.department.as_deref() {
                    Some(name) => Some(repo.department(name).map_err(failure)?),
                    None => None,
                };
                let details = repo
                    .skill_details(&params.skill, department.as_ref())
                    .map_err(failure)?;
                Ok(render::skill_details(&details))
            }
            FIND => {
                let params: FindParams = call.parse()?;
                let query = Query::new(&params.query).ok_or_else(|| {
                    ToolFailure::tool("The query is empty: give at least one word to look for.")
                })?;
                let repo = self.open().map_err(failure)?;
                let (candidates, searched) = candidates(&repo).map_err(failure)?;
                let hits = query.rank(candidates);
                Ok(render::find(params.query.trim(), &hits, &searched))
            }
            other => Err(ToolFailure::tool(format!("Unknown tool: {other}"))),
        }
    }
}

/// Everything `find` searches: departments, projects and skills.
fn candidates(repo: &Repo) -> Result<(Vec<Candidate>, SearchedCounts), LayoutError> {
    let mut candidates = Vec::new();
    let mut searched = SearchedCounts::default();
    let departments = repo.departments()?;
    for department in &departments {
        searched.departments += 1;
        candidates.push(Candidate {
            kind: Kind::Department,
            name: department.name.clone(),
            department: None,
            description: repo.department_summary(department),
            path: department.name.clone(),
        });
        for project in repo.projects(department)? {
            searched.projects += 1;
            candidates.push(Candidate {
                kind: Kind::Project,
                name: project.name,
                department: Some(project.department),
                description: project.summary,
                path: project.rel_dir,
            });
        }
    }
    for department in &departments {
        for skill in repo.skills(Some(department))? {
            searched.skills += 1;
            candidates.push(Candidate {
                kind: Kind::Skill,
                name: skill.name,
                department: Some(skill.department),
                description: skill.description,
                path: skill.rel_dir,
            });
        }
    }
    Ok((candidates, searched))
}

/// A layout error as the model sees it: a missing repository is a
/// configuration problem (`not_configured`), anything else a `tool_error`.
fn failure(error: LayoutError) -> ToolFailure {
    if error.is_repo_missing() {
        ToolFailure::not_configured(error.to_string())
    } else {
        ToolFailure::tool(error.to_string())
    }
}

fn read_only(tool: Tool) -> Tool {
    tool.annotate(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

impl Toolbox for Discovery {
    fn identity(&self) -> Identity {
        Identity {
            name: "forge-discovery",
            version: env!("CARGO_PKG_VERSION"),
            instructions: Some(
                "Browse the organisation's repository: departments (top-level folders), their \
                 projects (Projects/), project phases and files, and skills (Skills/*/SKILL.md). \
                 Use `find` when unsure of a name; it tolerates typos."
                    .to_owned(),
            ),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        vec![
            read_only(Tool::new(
                LIST_DEPARTMENTS,
                "List all departments with README summary",
                empty_schema(),
            )),
            read_only(tool_spec::<ListProjectsParams>(
                LIST_PROJECTS,
                "List projects in a department",
            )),
            read_only(tool_spec::<ProjectParams>(
                GET_PROJECT_PHASE,
                "Get current project phase",
            )),
            read_only(tool_spec::<ProjectParams>(
                GET_PROJECT_FILES,
                "List project files with metadata",
            )),
            read_only(tool_spec::<ListSkillsParams>(
                LIST_SKILLS,
                "List available skills",
            )),
            read_only(tool_spec::<SkillParams>(
                GET_SKILL_DETAILS,
                "Get full SKILL.md content",
            )),
            read_only(tool_spec::<FindParams>(
                FIND,
                "Fuzzy search across departments, projects, skills",
            )),
        ]
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let this = self.clone();
        let text = tokio::task::spawn_blocking(move || this.run(&call))
            .await
            .map_err(|error| {
                ToolFailure::tool(format!("The tool stopped unexpectedly: {error}"))
            })??;
        Ok(ToolOutput::text(text))
    }
}
