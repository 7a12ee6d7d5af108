//! Every task the crates spawn goes through `earshot_core::tasks` (the tracker a server waits for on
//! shutdown): a bare `tokio::spawn` in any crate's code of `functions/` fails here, with where it is.
//! Two places may spawn directly, each for a reason written beside it below; test code (after a
//! `#[cfg(test)]`, and `tests/`) spawns as it likes.

mod common;

/// The files that spawn on the runtime itself, and why.
const EDGES: [(&str, &str); 2] = [
    ("earshot-core/src/tasks.rs", "the tracker itself, and its plain spawn outside any tracker"),
    ("earshot-gateway/src/server.rs", "each connection's task, drained by the server's graceful-shutdown watcher before the tracker is waited for"),
];

const SPAWNS: [&str; 4] = ["tokio::spawn(", "tokio::task::spawn(", "task::spawn_local(", "std::thread::spawn("];

/// `(line number, line)` of each spawn in `code` before its tests, comments aside.
fn bare_spawns(code: &str) -> Vec<(usize, String)> {
    code.lines()
        .enumerate()
        .take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| SPAWNS.iter().any(|s| l.contains(s)))
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
}

#[test]
fn every_task_is_spawned_on_the_tracker() {
    let functions = common::functions_dir();
    let files = common::crate_sources();
    assert!(files.len() > 100, "only {} source files found under {}", files.len(), functions.display());
    let mut found = Vec::new();
    for file in files {
        let name = file.strip_prefix(&functions).expect("under functions/").to_string_lossy().replace('\\', "/");
        if EDGES.iter().any(|(edge, _)| *edge == name) {
            continue;
        }
        let code = std::fs::read_to_string(&file).expect("a source file");
        found.extend(bare_spawns(&code).into_iter().map(|(n, l)| format!("{name}:{n}: {l}")));
    }
    assert!(found.is_empty(), "spawned off the tracker (use earshot_core::tasks::spawn):\n{}", found.join("\n"));
}

#[test]
fn the_search_finds_a_bare_spawn_and_skips_tests_and_comments() {
    let code = "fn a() {\n    // tokio::spawn(in a comment)\n    tokio::spawn(async {});\n}\n#[cfg(test)]\nmod tests { fn b() { tokio::spawn(async {}); } }\n";
    assert_eq!(bare_spawns(code), vec![(3, "tokio::spawn(async {});".to_string())]);
}
