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
