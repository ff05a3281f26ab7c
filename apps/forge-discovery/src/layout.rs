//! The repository layout forge-discovery reads, and reading it.
//!
//! ```text
//! {REPO_PATH}/
//!   {Department}/README.md                         a department (summary: frontmatter
//!                                                  `summary`, else first paragraph)
//!   {Department}/Projects/{Project}/README.md      a project (frontmatter `phase:`,
//!                                                  else a `Phase: X` line)
//!   {Department}/Projects/{Project}/**             the project's files
//!   {Department}/Skills/{Skill}/SKILL.md           a skill (Agent Skills frontmatter
//!                                                  `name`, `description`)
//! ```
//!
//! Hidden entries (`.git`, `.trash`, `.obsidian`, …), `node_modules` and build
//! output (`target`, `dist`, `build`, `out`, `__pycache__`, `coverage`) are
//! skipped everywhere. Names given by a caller are matched against what is on
//! disk (exactly, then ignoring case) and never joined onto a path, so `..`
//! cannot leave the repository; symlinked folders are not walked and no file is read
//! through a symlink (`crate::facts::open_own_file`), so a link cannot either: a README or
//! SKILL.md that is a link still makes its department or skill, with nothing read from it.

use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use crate::facts::{FactsCache, PhaseSource};
use crate::files::{MAX_PROJECT_FILES, ProjectFiles, walk_files};
use crate::markdown::Document;

/// The folder holding a department's projects.
pub const PROJECTS_DIR: &str = "Projects";
/// The folder holding a department's skills.
pub const SKILLS_DIR: &str = "Skills";
/// The file that makes a folder under `Skills/` a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// `get_skill_details` lists at most this many bundled files.
pub const MAX_SKILL_FILES: usize = 50;
/// `get_skill_details` returns at most this many bytes of SKILL.md.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

/// Whether the walk skips an entry with this file name.
pub fn is_skipped(name: &str) -> bool {
    server_kit::markdown::is_skipped(name)
}

/// What went wrong reading the repository. Display is the message the model
/// sees; each "not found" names what exists instead.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{}", repo_missing_message(root, nearest.as_deref()))]
    RepoMissing {
        root: PathBuf,
        nearest: Option<PathBuf>,
    },
    #[error(
        "The repository path {} (REPO_PATH) is not a directory. Set REPO_PATH to the repository checkout.",
        root.display()
    )]
    RepoNotDirectory { root: PathBuf },
    #[error("Cannot read {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    #[error(
        "{}",
        not_found_message("Department", name, None, available, "Departments")
    )]
    DepartmentNotFound {
        name: String,
        available: Vec<String>,
    },
    #[error(
        "{}",
        not_found_message("Project", name, Some(department), available, &format!("Projects in {department}"))
    )]
    ProjectNotFound {
        department: String,
        name: String,
        available: Vec<String>,
    },
    #[error("{}", skill_not_found_message(name, department.as_deref(), available))]
    SkillNotFound {
        name: String,
        department: Option<String>,
        available: Vec<String>,
    },
    #[error(
        "Skill \"{name}\" exists in several departments: {}. Pass `department` to choose one.",
        departments.join(", ")
    )]
    SkillAmbiguous {
        name: String,
        departments: Vec<String>,
    },
}

impl LayoutError {
    /// True when the repository itself is missing: a configuration problem
    /// (REPO_PATH), not a bad argument.
    pub fn is_repo_missing(&self) -> bool {
        matches!(
            self,
            LayoutError::RepoMissing { .. } | LayoutError::RepoNotDirectory { .. }
        )
    }
}

fn repo_missing_message(root: &Path, nearest: Option<&Path>) -> String {
    let mut message = format!(
        "The repository {} (REPO_PATH) does not exist.",
        root.display()
    );
    if let Some(nearest) = nearest {
        message.push_str(&format!(
            " The nearest existing folder is {}.",
            nearest.display()
        ));
    }
    message.push_str(
        " Set REPO_PATH to the repository checkout; it is looked up again on every call.",
    );
    message
}

/// How many names a "not found" message lists before `… and N more`.
const LISTED_NAMES: usize = 60;

fn name_list(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".to_owned();
    }
    let mut text = names
        .iter()
        .take(LISTED_NAMES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LISTED_NAMES {
        text.push_str(&format!(", … and {} more", names.len() - LISTED_NAMES));
    }
    text
}

fn did_you_mean(name: &str, available: &[String]) -> String {
    match crate::fuzzy::closest(name, available) {
        Some(best) => format!(" Did you mean \"{best}\"?"),
        None => String::new(),
    }
}

fn not_found_message(
    kind: &str,
    name: &str,
    department: Option<&str>,
    available: &[String],
    listing: &str,
) -> String {
    let place = department.map(|d| format!(" in {d}")).unwrap_or_default();
    format!(
        "{kind} \"{name}\" not found{place}.{} {listing}: {}.",
        did_you_mean(name, available),
        name_list(available)
    )
}

fn skill_not_found_message(name: &str, department: Option<&str>, available: &[String]) -> String {
    let listing = match department {
        Some(department) => format!("Skills in {department}"),
        None => "Skills".to_owned(),
    };
    not_found_message("Skill", name, department, available, &listing)
}

/// A department: a top-level folder with a README.
#[derive(Debug, Clone)]
pub struct Department {
    pub name: String,
    pub dir: PathBuf,
    pub readme: PathBuf,
}

/// A department with what `list_departments` shows.
#[derive(Debug, Clone)]
pub struct DepartmentSummary {
    pub name: String,
    pub summary: Option<String>,
    pub projects: usize,
    pub skills: usize,
}

/// A project: a folder under `{Department}/Projects/`.
#[derive(Debug, Clone)]
pub struct Project {
    pub department: String,
    pub name: String,
    pub dir: PathBuf,
    /// `{Department}/Projects/{Project}` with `/` separators.
    pub rel_dir: String,
    pub phase: Option<String>,
    pub phase_source: PhaseSource,
    pub summary: Option<String>,
}

/// A skill: `{Department}/Skills/{Skill}/SKILL.md`.
#[derive(Debug, Clone)]
pub struct Skill {
    pub department: String,
    /// The skill's folder name.
    pub folder: String,
    /// The frontmatter `name`, else the folder name.
    pub name: String,
    pub description: Option<String>,
    pub dir: PathBuf,
    /// `{Department}/Skills/{Skill}` with `/` separators.
    pub rel_dir: String,
}

/// A skill with its SKILL.md text and bundled files.
#[derive(Debug, Clone)]
pub struct SkillDetails {
    pub skill: Skill,
    pub content: String,
    /// True when SKILL.md was longer than [`MAX_SKILL_BYTES`].
    pub truncated: bool,
    pub frontmatter_error: Option<String>,
    /// Other files in the skill folder, relative to it.
    pub files: Vec<String>,
    pub more_files: usize,
}

/// A repository checkout that exists right now. Open one per call: the
/// checkout may appear, move or change between calls.
#[derive(Debug, Clone)]
pub struct Repo<'a> {
    root: PathBuf,
    cache: &'a FactsCache,
}

impl<'a> Repo<'a> {
    /// The repository at `root`, reading markdown through `cache`.
    pub fn open(root: &Path, cache: &'a FactsCache) -> Result<Repo<'a>, LayoutError> {
        match fs::metadata(root) {
            Ok(meta) if meta.is_dir() => Ok(Repo {
                root: root.to_owned(),
                cache,
            }),
            Ok(_) => Err(LayoutError::RepoNotDirectory {
                root: root.to_owned(),
            }),
            Err(_) => Err(LayoutError::RepoMissing {
                root: root.to_owned(),
                nearest: root
                    .ancestors()
                    .skip(1)
                    .find(|p| p.is_dir())
                    .map(Path::to_owned),
            }),
        }
    }

    /// Every department, sorted by name.
    pub fn departments(&self) -> Result<Vec<Department>, LayoutError> {
        let mut departments = Vec::new();
        for (name, dir) in subdirectories(&self.root)? {
            if let Some(readme) = find_readme(&dir) {
                departments.push(Department { name, dir, readme });
            }
        }
        Ok(departments)
    }

    /// Departments with their summaries and counts.
    pub fn department_summaries(&self) -> Result<Vec<DepartmentSummary>, LayoutError> {
        self.departments()?
            .into_iter()
            .map(|department| {
                let summary = self.department_summary(&department);
                Ok(DepartmentSummary {
                    projects: project_dirs(&department)?.len(),
                    skills: skill_dirs(&department)?.len(),
                    name: department.name,
                    summary,
                })
            })
            .collect()
    }

    /// The department README's frontmatter `summary`, else its first paragraph.
    pub fn department_summary(&self, department: &Department) -> Option<String> {
        self.cache.facts(&department.readme)?.summary.clone()
    }

    /// The department called `name` (exactly, else ignoring case).
    pub fn department(&self, name: &str) -> Result<Department, LayoutError> {
        let departments = self.departments()?;
        let names: Vec<String> = departments.iter().map(|d| d.name.clone()).collect();
        match pick(&names, name) {
            Some(index) => Ok(departments[index].clone()),
            None => Err(LayoutError::DepartmentNotFound {
                name: name.to_owned(),
                available: names,
            }),
        }
    }

    /// The projects of a department, sorted by name, with phase and summary.
    pub fn projects(&self, department: &Department) -> Result<Vec<Project>, LayoutError> {
        Ok(project_dirs(department)?
            .into_iter()
            .map(|(name, dir)| self.read_project(department, name, dir))
            .collect())
    }

    /// The project called `name` in `department`.
    pub fn project(&self, department: &Department, name: &str) -> Result<Project, LayoutError> {
        let dirs = project_dirs(department)?;
        let names: Vec<String> = dirs.iter().map(|(name, _)| name.clone()).collect();
        match pick(&names, name) {
            Some(index) => {
                let (name, dir) = dirs[index].clone();
                Ok(self.read_project(department, name, dir))
            }
            None => Err(LayoutError::ProjectNotFound {
                department: department.name.clone(),
                name: name.to_owned(),
                available: names,
            }),
        }
    }

    /// The files of a project: a pre-order walk, sorted by path, capped at
    /// [`MAX_PROJECT_FILES`] files and `MAX_PROJECT_DEPTH` levels.
    pub fn project_files(&self, project: &Project) -> Result<ProjectFiles, LayoutError> {
        let mut files = Vec::new();
        let mut more = 0usize;
        let mut total_size = 0u64;
        walk_files(&project.dir, "", 0, &mut |file| {
            total_size += file.size;
            if files.len() < MAX_PROJECT_FILES {
                files.push(file);
            } else {
                more += 1;
            }
        })?;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(ProjectFiles {
            files,
            more,
            total_size,
        })
    }

    /// Skills of one department, or of all, sorted by department then folder.
    pub fn skills(&self, department: Option<&Department>) -> Result<Vec<Skill>, LayoutError> {
        let departments = match department {
            Some(department) => vec![department.clone()],
            None => self.departments()?,
        };
        let mut skills = Vec::new();
        for department in &departments {
            for (folder, dir) in skill_dirs(department)? {
                skills.push(self.read_skill(department, folder, dir));
            }
        }
        Ok(skills)
    }

    /// The skill called `name` (folder or frontmatter name, exactly, else
    /// ignoring case), in `department` when given.
    pub fn skill_details(
        &self,
        name: &str,
        department: Option<&Department>,
    ) -> Result<SkillDetails, LayoutError> {
        let skills = self.skills(department)?;
        let exact: Vec<&Skill> = skills
            .iter()
            .filter(|s| s.folder == name || s.name == name)
            .collect();
        let matches = if exact.is_empty() {
            skills
                .iter()
                .filter(|s| {
                    s.folder.eq_ignore_ascii_case(name) || s.name.eq_ignore_ascii_case(name)
                })
                .collect()
        } else {
            exact
        };
        let skill = match matches.as_slice() {
            [one] => (*one).clone(),
            [] => {
                let mut available: Vec<String> = skills.iter().map(|s| s.folder.clone()).collect();
                available.sort();
                available.dedup();
                return Err(LayoutError::SkillNotFound {
                    name: name.to_owned(),
                    department: department.map(|d| d.name.clone()),
                    available,
                });
            }
            several => {
                return Err(LayoutError::SkillAmbiguous {
                    name: name.to_owned(),
                    departments: several.iter().map(|s| s.department.clone()).collect(),
                });
            }
        };
        let path = skill.dir.join(SKILL_FILE);
        // One byte past the cap says whether it was cut; nothing past it is read.
        let mut bytes = Vec::new();
        crate::facts::open_own_file(&path)
            .and_then(|file| {
                file.take(MAX_SKILL_BYTES as u64 + 1)
                    .read_to_end(&mut bytes)
            })
            .map_err(|source| LayoutError::Unreadable {
                path: path.clone(),
                source,
            })?;
        let truncated = bytes.len() > MAX_SKILL_BYTES;
        let kept = &bytes[..bytes.len().min(MAX_SKILL_BYTES)];
        let content = String::from_utf8_lossy(kept).into_owned();
        let frontmatter_error = Document::parse(&content).frontmatter.error;
        let mut files = Vec::new();
        walk_files(&skill.dir, "", 0, &mut |file| {
            if file.path != SKILL_FILE {
                files.push(file.path);
            }
        })?;
        files.sort();
        let more_files = files.len().saturating_sub(MAX_SKILL_FILES);
        files.truncate(MAX_SKILL_FILES);
        Ok(SkillDetails {
            skill,
            content,
            truncated,
            frontmatter_error,
            files,
            more_files,
        })
    }
}

impl Repo<'_> {
    fn read_project(&self, department: &Department, name: String, dir: PathBuf) -> Project {
        let rel_dir = format!("{}/{PROJECTS_DIR}/{name}", department.name);
        let facts = find_readme(&dir).and_then(|path| self.cache.facts(&path));
        let (phase, phase_source, summary) = match facts {
            None => (None, PhaseSource::NoReadme, None),
            Some(facts) => (
                facts.phase.clone(),
                facts.phase_source,
                facts.summary.clone(),
            ),
        };
        Project {
            department: department.name.clone(),
            name,
            dir,
            rel_dir,
            phase,
            phase_source,
            summary,
        }
    }

    fn read_skill(&self, department: &Department, folder: String, dir: PathBuf) -> Skill {
        let facts = self.cache.facts(&dir.join(SKILL_FILE));
        let facts = facts.as_deref();
        Skill {
            department: department.name.clone(),
            rel_dir: format!("{}/{SKILLS_DIR}/{folder}", department.name),
            name: facts
                .and_then(|f| f.name.clone())
                .unwrap_or_else(|| folder.clone()),
            description: facts.and_then(|f| f.description.clone()),
            folder,
            dir,
        }
    }
}

/// Index of `wanted` in `names`: an exact match, else the only match that
/// ignores case.
fn pick(names: &[String], wanted: &str) -> Option<usize> {
    if let Some(index) = names.iter().position(|n| n == wanted) {
        return Some(index);
    }
    let folded: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.eq_ignore_ascii_case(wanted) || n.to_lowercase() == wanted.to_lowercase()
        })
        .map(|(i, _)| i)
        .collect();
    match folded.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The non-skipped subfolders of `dir` (symlinked folders are not followed),
/// sorted by name. A missing `dir` has none.
fn subdirectories(dir: &Path) -> Result<Vec<(String, PathBuf)>, LayoutError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LayoutError::Unreadable {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if is_skipped(&name) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push((name, entry.path()));
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// `README.md` in `dir`, matched ignoring case.
fn find_readme(dir: &Path) -> Option<PathBuf> {
    let exact = dir.join("README.md");
    if exact.is_file() {
        return Some(exact);
    }
    fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name();
        let is_readme = name
            .to_str()
            .is_some_and(|n| n.eq_ignore_ascii_case("readme.md"));
        (is_readme && entry.path().is_file()).then(|| entry.path())
    })
}

fn project_dirs(department: &Department) -> Result<Vec<(String, PathBuf)>, LayoutError> {
    subdirectories(&department.dir.join(PROJECTS_DIR))
}

fn skill_dirs(department: &Department) -> Result<Vec<(String, PathBuf)>, LayoutError> {
    Ok(subdirectories(&department.dir.join(SKILLS_DIR))?
        .into_iter()
        .filter(|(_, dir)| dir.join(SKILL_FILE).is_file())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn sample() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            "Forge/README.md",
            "---\nsummary: Tools.\n---\n# Forge\n",
        );
        write(
            root,
            "Forge/Projects/Taxonomy/README.md",
            "---\nphase: Build\n---\n",
        );
        write(root, "Forge/Projects/Taxonomy/docs/plan.md", "plan");
        write(root, "Forge/Projects/Taxonomy/node_modules/x.js", "x");
        write(root, "Forge/Projects/Taxonomy/.trash/old.md", "old");
        write(
            root,
            "Forge/Projects/Website/README.md",
            "# Web\n\nPhase: Design\n",
        );
        write(root, "Forge/Projects/Bare/notes.txt", "n");
        write(
            root,
            "Forge/Skills/pdf/SKILL.md",
            "---\nname: pdf\ndescription: PDFs.\n---\n",
        );
        write(root, "Forge/Skills/pdf/scripts/run.py", "print()");
        write(root, "Forge/Skills/draft/notes.md", "no SKILL.md here");
        write(root, "Sales/readme.md", "Sells.\n");
        write(
            root,
            "Sales/Skills/pdf/SKILL.md",
            "---\nname: pdf\n---\nSales PDFs.\n",
        );
        write(root, "Notes/todo.md", "not a department: no README");
        write(root, ".hidden/README.md", "hidden");
        write(root, "dist/README.md", "build output");
        dir
    }

    #[test]
    fn departments_are_top_level_folders_with_a_readme() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let names: Vec<String> = repo
            .department_summaries()
            .expect("departments")
            .into_iter()
            .map(|d| format!("{} {:?} {} {}", d.name, d.summary, d.projects, d.skills))
            .collect();
        assert_eq!(
            names,
            ["Forge Some(\"Tools.\") 3 1", "Sales Some(\"Sells.\") 0 1"]
        );
    }

    #[test]
    fn a_linked_readme_makes_a_department_with_nothing_read_from_it() {
        let dir = sample();
        let outside = tempfile::tempdir().expect("outside");
        write(outside.path(), "key.md", "---\nsummary: TOKEN-123\n---\n");
        fs::create_dir_all(dir.path().join("Linked")).expect("mkdir");
        std::os::unix::fs::symlink(
            outside.path().join("key.md"),
            dir.path().join("Linked/README.md"),
        )
        .expect("link");
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let linked: Vec<String> = repo
            .department_summaries()
            .expect("departments")
            .into_iter()
            .filter(|d| d.name == "Linked")
            .map(|d| format!("{} {:?}", d.name, d.summary))
            .collect();
        assert_eq!(linked, ["Linked None"]);
    }

    #[test]
    fn phases_come_from_frontmatter_then_a_phase_line() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let forge = repo.department("forge").expect("case-insensitive match");
        let phases: Vec<(String, Option<String>, PhaseSource)> = repo
            .projects(&forge)
            .expect("projects")
            .into_iter()
            .map(|p| (p.name, p.phase, p.phase_source))
            .collect();
        assert_eq!(
            phases,
            [
                ("Bare".to_owned(), None, PhaseSource::NoReadme),
                (
                    "Taxonomy".to_owned(),
                    Some("Build".to_owned()),
                    PhaseSource::Frontmatter
                ),
                (
                    "Website".to_owned(),
                    Some("Design".to_owned()),
                    PhaseSource::ReadmeLine
                ),
            ]
        );
    }

    #[test]
    fn project_files_skip_hidden_and_dependency_folders() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let forge = repo.department("Forge").expect("forge");
        let project = repo.project(&forge, "Taxonomy").expect("project");
        let listing = repo.project_files(&project).expect("files");
        let paths: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["README.md", "docs/plan.md"]);
        assert_eq!(listing.total_size, 21 + 4);
    }

    #[test]
    fn names_never_escape_the_repository() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(&dir.path().join("Forge"), &cache).expect("open");
        let error = repo.department("..").expect_err("not a department");
        assert!(matches!(error, LayoutError::DepartmentNotFound { .. }));
    }

    #[test]
    fn not_found_errors_list_what_exists() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let forge = repo.department("Forge").expect("forge");
        let cases = [
            (
                repo.department("Forj").expect_err("missing").to_string(),
                "Department \"Forj\" not found. Did you mean \"Forge\"? Departments: Forge, Sales.",
            ),
            (
                repo.project(&forge, "Taxonmy")
                    .expect_err("missing")
                    .to_string(),
                "Project \"Taxonmy\" not found in Forge. Did you mean \"Taxonomy\"? Projects in Forge: Bare, Taxonomy, Website.",
            ),
            (
                repo.skill_details("pdf", None)
                    .expect_err("ambiguous")
                    .to_string(),
                "Skill \"pdf\" exists in several departments: Forge, Sales. Pass `department` to choose one.",
            ),
            (
                repo.skill_details("zzz", Some(&forge))
                    .expect_err("missing")
                    .to_string(),
                "Skill \"zzz\" not found in Forge. Skills in Forge: pdf.",
            ),
        ];
        for (actual, expected) in cases {
            assert_eq!(actual, expected);
        }
    }

    #[test]
    fn skill_details_list_bundled_files() {
        let dir = sample();
        let cache = FactsCache::default();
        let repo = Repo::open(dir.path(), &cache).expect("open");
        let forge = repo.department("Forge").expect("forge");
        let details = repo.skill_details("PDF", Some(&forge)).expect("skill");
        assert_eq!(details.files, ["scripts/run.py"]);
        assert_eq!(details.skill.description.as_deref(), Some("PDFs."));
        assert!(!details.truncated);
    }

    #[test]
    fn a_missing_repository_names_the_nearest_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = FactsCache::default();
        let missing = dir.path().join("a/b");
        let error = Repo::open(&missing, &cache).expect_err("missing");
        assert!(error.is_repo_missing());
        assert!(error.to_string().contains(&format!(
            "The nearest existing folder is {}.",
            dir.path().display()
        )));
    }
}
