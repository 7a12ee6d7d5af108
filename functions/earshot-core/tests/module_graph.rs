//! No import circles between the modules of any crate in `functions/`: each module (a file of `src/`,
//! or a folder of them) depends on others in one direction, so that each can be read, tested and
//! replaced from the bottom up (`docs/architecture.md` promises it). Read from the sources: every
//! `crate::<module>` a module names in its code (comments aside) is an edge, and a cycle fails here
//! with its path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level module of each source file of `src` (`src/text/segmenter.rs` is `text`), with its
/// code: lib.rs and main.rs, which declare every module, are left out.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut stack: Vec<(PathBuf, Option<String>)> = vec![(src.to_path_buf(), None)];
    while let Some((dir, module)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("an entry").path();
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            let owner = module.clone().unwrap_or_else(|| name.clone());
            if path.is_dir() {
                stack.push((path, Some(owner)));
            } else if path.extension().is_some_and(|e| e == "rs") && !(module.is_none() && (name == "lib" || name == "main")) {
                let code: String = std::fs::read_to_string(&path)
                    .expect("a source file")
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                out.entry(owner).or_default().push_str(&code);
            }
        }
    }
    out
}

/// The modules `code` names as `crate::<module>`, in a `use` or a path.
fn named(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // `earshot_core::…` and the like are other crates, not this one.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::{c, d}}`: the first name of each item at the group's own depth.
            let (mut depth, mut item_start) = (0usize, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        out.insert(group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
                        item_start = false;
                    }
                    c if c.is_whitespace() => {}
                    _ => item_start = false,
                }
            }
        } else {
            let module: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !module.is_empty() {
                out.insert(module);
            }
        }
    }
    out
}

/// A cycle in `edges`, as its path, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(node: &str, edges: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}

fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    modules.iter().map(|(module, code)| (module.clone(), named(code).into_iter().filter(|m| m != module && modules.contains_key(m)).collect())).collect()
}

#[test]
fn no_crate_in_functions_has_an_import_circle() {
    let functions = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("..");
    let mut checked = 0;
    for krate in std::fs::read_dir(&functions).expect("functions/") {
        let src = krate.expect("a crate").path().join("src");
        if !src.is_dir() {
            continue;
        }
        let edges = graph(&src);
        checked += edges.len();
        if let Some(found) = cycle(&edges) {
            panic!("an import circle in {}: {}", src.display(), found.join(" → "));
        }
    }
    assert!(checked > 30, "only {checked} modules were read");
}

#[test]
fn a_circle_is_found_and_named() {
    let edges: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"][..]), ("c", &["a"][..]), ("d", &[][..])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(cycle(&edges), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    assert_eq!(
        named("use crate::{speech::{Switch, Voice}, text};\nlet x = crate::timeline::Clock::start();\nearshot_core::speech::X"),
        ["speech", "text", "timeline"].map(String::from).into()
    );
}

/// The crates of `functions/` a manifest depends on (its `[dependencies]`, development ones aside).
fn manifest_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = "";
    let mut out = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" && line.starts_with("earshot-") {
            out.insert(line.split(['=', '.', ' ']).next().unwrap_or_default().to_string());
        }
    }
    out
}

/// Each row of the architecture's crate table: the crate's folder and the crates its last column names.
fn documented_crates(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let table = architecture.split("## The crates").nth(1).expect("docs/architecture.md has `## The crates`");
    let table = table.split("\n## ").next().unwrap_or_default();
    let backticked = |cell: &str| cell.split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>();
    table
        .lines()
        .filter(|l| l.starts_with("| `earshot-"))
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            let name = backticked(cells[0]).remove(0);
            let knows = backticked(cells.last().expect("a row's cells")).into_iter().filter(|c| c.starts_with("earshot-")).collect();
            (name, knows)
        })
        .collect()
}

#[test]
fn the_architecture_lists_every_crate_with_what_it_depends_on() {
    let functions = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("..");
    let architecture = std::fs::read_to_string(functions.join("../docs/architecture.md")).expect("docs/architecture.md");
    let documented = documented_crates(&architecture);
    let mut actual = BTreeMap::new();
    for krate in std::fs::read_dir(&functions).expect("functions/") {
        let folder = krate.expect("a crate").path();
        let Ok(manifest) = std::fs::read_to_string(folder.join("Cargo.toml")) else { continue };
        let name = folder.file_name().expect("a folder name").to_string_lossy().to_string();
        actual.insert(name, manifest_dependencies(&manifest));
    }
    assert!(actual.len() >= 10, "only {} crates under functions/", actual.len());
    for (name, deps) in &actual {
        let row = documented.get(name).unwrap_or_else(|| panic!("docs/architecture.md's crate table has no row for `{name}`"));
        assert_eq!(row, deps, "docs/architecture.md says `{name}` knows of {row:?}; its Cargo.toml depends on {deps:?}");
    }
    for name in documented.keys() {
        assert!(actual.contains_key(name), "docs/architecture.md lists `{name}`, which is not a crate of functions/");
    }
}

/// The modules of a Python package (dotted, from the package's folder) and, for each, the package's
/// modules it imports anywhere in its code, an import inside a function included (it still makes a
/// circle, only a hidden one).
fn python_graph(package: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let root = package.file_name().expect("a package folder").to_string_lossy().to_string();
    let mut files = Vec::new();
    let mut stack = vec![package.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a package folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() && path.join("__init__.py").exists() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    let dotted = |path: &Path| {
        let rel = path.strip_prefix(package).expect("inside the package").with_extension("");
        let mut parts: Vec<String> = std::iter::once(root.clone()).chain(rel.iter().map(|p| p.to_string_lossy().to_string())).collect();
        if parts.last().is_some_and(|p| p == "__init__") {
            parts.pop();
        }
        parts.join(".")
    };
    let modules: BTreeSet<String> = files.iter().map(|f| dotted(f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let module = dotted(file);
        let is_package = file.file_name().is_some_and(|n| n == "__init__.py");
        // What a relative import's first dot names: the module's own package.
        let here: Vec<&str> = module.split('.').collect();
        let own_package = if is_package { here.clone() } else { here[..here.len() - 1].to_vec() };
        let mut named = BTreeSet::new();
        for line in std::fs::read_to_string(file).expect("a module").lines().map(str::trim) {
            let target = if let Some(rest) = line.strip_prefix("from ") {
                let (from, names) = rest.split_once(" import ").unwrap_or((rest, ""));
                let dots = from.chars().take_while(|c| *c == '.').count();
                let base = if dots == 0 {
                    from.to_string()
                } else {
                    let up = own_package.len().saturating_sub(dots - 1);
                    let mut parts: Vec<&str> = own_package[..up].to_vec();
                    parts.extend(from[dots..].split('.').filter(|p| !p.is_empty()));
                    parts.join(".")
                };
                // `from . import x` and `from .pkg import mod` name modules too.
                let mut targets = vec![base.clone()];
                targets.extend(names.split(',').map(|n| format!("{base}.{}", n.split_whitespace().next().unwrap_or_default())));
                targets
            } else if let Some(rest) = line.strip_prefix("import ") {
                rest.split(',').map(|m| m.split_whitespace().next().unwrap_or_default().to_string()).collect()
            } else {
                continue;
            };
            named.extend(target.into_iter().filter(|t| modules.contains(t) && *t != module));
        }
        edges.insert(module, named);
    }
    // A package's `__init__` importing its own modules is how a package is made, not a circle.
    for (module, named) in edges.iter_mut() {
        named.retain(|t| !module.starts_with(&format!("{t}.")));
    }
    edges
}

#[test]
fn the_container_package_has_no_import_circle() {
    let package = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("../../infra/kokoro/kokoro_server");
    let edges = python_graph(&package);
    assert!(edges.len() > 15, "only {} modules read in {}", edges.len(), package.display());
    assert!(edges["kokoro_server.engines.base"].contains("kokoro_server.phonemes"), "the reader misses a relative import: {edges:?}");
    if let Some(found) = cycle(&edges) {
        panic!("an import circle in the container's package: {}", found.join(" → "));
    }
}

#[test]
fn the_architecture_draws_the_session_stack_in_the_codes_order() {
    let functions = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("..");
    let architecture = std::fs::read_to_string(functions.join("../docs/architecture.md")).expect("docs/architecture.md");
    let marker = "<!-- session stack: checked against earshot_core::session_stack::LAYERS -->";
    let after = architecture.split(marker).nth(1).expect("docs/architecture.md marks its drawing of the session stack");
    let drawing = after.lines().map(str::trim).find(|l| l.starts_with("scheduler")).expect("the drawing's line");
    let drawn: Vec<&str> = drawing.split('▶').map(|part| part.trim().trim_end_matches('─').trim()).skip(1).collect();
    assert_eq!(drawn, earshot_core::session_stack::LAYERS, "docs/architecture.md draws `{drawing}`");
}
