//! Import circles inside a crate: which of its modules name each other, by `crate::module`
//! paths (and `super::` from a child to its parent) outside comments, and the strongly
//! connected groups of that graph. A group of more than one module is a circle: none of its
//! files can be read, changed or moved without the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::CheckError;

/// Every circle of modules under `src` (a crate's `src/` folder), the largest first; each
/// circle's modules sorted (`manager::start` for `src/manager/start.rs`).
pub fn module_circles(src: &Path) -> Result<Vec<Vec<String>>, CheckError> {
    let mut files = BTreeMap::new();
    read_modules(src, src, &mut files)?;
    Ok(circles(&edges(&files)))
}

/// Module path → its source.
fn read_modules(
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
) -> Result<(), CheckError> {
    let read_error = |path: &Path, error: std::io::Error| CheckError::Manifest {
        path: path.display().to_string(),
        message: error.to_string(),
    };
    let entries = std::fs::read_dir(dir).map_err(|error| read_error(dir, error))?;
    for entry in entries {
        let path = entry.map_err(|error| read_error(dir, error))?.path();
        if path.is_dir() {
            read_modules(root, &path, out)?;
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap_or(&path).with_extension("");
        let mut module = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("::");
        if let Some(parent) = module.strip_suffix("::mod") {
            module = parent.to_owned();
        }
        if module == "lib" || module == "main" {
            module = "crate".to_owned();
        }
        let text = std::fs::read_to_string(&path).map_err(|error| read_error(&path, error))?;
        out.insert(module, text);
    }
    Ok(())
}

/// Module → the modules it names outside comment lines.
fn edges(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&str> = files.keys().map(String::as_str).collect();
    let mut edges = BTreeMap::new();
    for (module, text) in files {
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            let path: Vec<&str> = code[at + "crate::".len()..]
                .split("::")
                .map(|part| {
                    part.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or("")
                })
                .take(2)
                .collect();
            let nested = path.join("::");
            let target = if modules.contains(nested.as_str()) {
                nested
            } else {
                path.first().copied().unwrap_or_default().to_owned()
            };
            if modules.contains(target.as_str()) && target != *module {
                named.insert(target);
            }
        }
        if let Some((parent, _)) = module.rsplit_once("::")
            && code.contains("super::")
            && modules.contains(parent)
        {
            named.insert(parent.to_owned());
        }
        edges.insert(module.clone(), named);
    }
    edges
}

/// The strongly connected groups of more than one module (Tarjan's algorithm), largest first.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, module: &'a str) {
            let at = self.index.len();
            self.index.insert(module, at);
            self.low.insert(module, at);
            self.stack.push(module);
            self.on_stack.insert(module);
            let edges = self.edges;
            for next in edges.get(module).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[module].min(self.low[next]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[module].min(self.index[next]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    group.push(member.to_owned());
                    if member == module {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in edges.keys() {
        if !walk.index.contains_key(module.as_str()) {
            walk.visit(module);
        }
    }
    walk.found
        .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    walk.found
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn graph(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let files = files
            .iter()
            .map(|(module, code)| ((*module).to_owned(), (*code).to_owned()))
            .collect();
        circles(&edges(&files))
    }

    #[test]
    fn circles_are_found_and_comments_and_one_way_paths_are_not() {
        let found = graph(&[
            ("crate", "mod a; mod b;"),
            ("a", "use crate::b::B;"),
            ("b", "fn f() { crate::c::g() }"),
            ("c", "use crate::a::A;"),
            ("d", "// see crate::e\nuse crate::a;"),
            ("e", "/// [`crate::d`]"),
            ("m", "use crate::m::child::X;"),
            ("m::child", "use super::Y;"),
        ]);
        assert_eq!(
            found,
            vec![
                vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
                vec!["m".to_owned(), "m::child".to_owned()],
            ]
        );
    }

    #[test]
    fn a_crate_on_disk_is_read_module_by_module() {
        let dir = std::env::temp_dir().join(format!("deploy-check-imports-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("x")).expect("mkdir");
        std::fs::write(src.join("lib.rs"), "mod x;\nmod y;\n").expect("write");
        std::fs::write(src.join("x/mod.rs"), "mod z;\nuse crate::y::Y;\n").expect("write");
        std::fs::write(src.join("x/z.rs"), "use super::X;\n").expect("write");
        std::fs::write(src.join("y.rs"), "use crate::x::z::Z;\n").expect("write");
        let found = module_circles(&src);
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert_eq!(
            found.expect("reads"),
            vec![vec!["x".to_owned(), "x::z".to_owned(), "y".to_owned()]]
        );
    }
}
