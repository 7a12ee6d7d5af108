//! What the tests that read the crates' code share: the `functions/` folder and its Rust sources.

use std::path::{Path, PathBuf};

/// `functions/`, found at run time (clones share one target folder).
pub fn functions_dir() -> PathBuf {
    Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder")).join("..")
}

/// Every `.rs` file under each crate's `src/` in `functions/`.
pub fn crate_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for krate in std::fs::read_dir(functions_dir()).expect("functions/") {
        let src = krate.expect("a crate").path().join("src");
        if src.is_dir() {
            walk(&src, &mut files);
        }
    }
    files
}
