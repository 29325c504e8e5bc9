//! The architecture holds (docs/architecture.md, Components): crates depend only
//! on the layers below them, and inside a crate no two top-level modules import
//! each other, directly or through a loop. Both are read from the source, so a
//! change that breaks them fails here instead of in a later refactor.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each crate's layer: a crate may depend on crates of lower layers only.
/// The Machine interface sits below the Manager, so the backends (`linux`,
/// `sim`) never compile against the Manager for it; `linux` never sees a policy.
const LAYERS: &[(&str, u32)] = &[
    ("model", 0),
    ("workloads", 0),
    ("shim", 0),
    ("spank", 0),
    ("machine", 1),
    ("policy", 1),
    ("store", 1),
    ("manager", 2),
    ("linux", 2),
    ("sim", 3),
    ("daemon", 3),
    ("cli", 4),
    ("fuzz", 4),
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn layer(name: &str) -> u32 {
    LAYERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, l)| *l)
        .unwrap_or_else(|| panic!("crate {name} has no layer in LAYERS: give it one"))
}

/// The workspace crates a crate's `[dependencies]` name (dev-dependencies are
/// free: tests may drive a backend through the Manager).
fn coloc_dependencies(krate: &str) -> Vec<String> {
    let path = crates_dir().join(krate).join("Cargo.toml");
    let text = fs::read_to_string(&path).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|deps| {
            deps.keys()
                .filter_map(|k| k.strip_prefix("coloc-").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn workspace_crates() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(crates_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let mut wrong = Vec::new();
    for krate in workspace_crates() {
        for dep in coloc_dependencies(&krate) {
            if layer(&dep) >= layer(&krate) {
                wrong.push(format!(
                    "{krate} (layer {}) -> {dep} (layer {})",
                    layer(&krate),
                    layer(&dep)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies that run up or sideways: {wrong:?}"
    );
}

/// The top-level module a source file belongs to (`src/a/b.rs` and
/// `src/a/mod.rs` belong to `a`); None for the crate root.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `crate::NAME` references in `text` outside its unit-test module (tests may
/// reach anywhere).
fn crate_references(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut refs = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `coloc_crate::`
        }
        let name: String = code[i + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            refs.insert(name);
        }
    }
    refs
}

/// The graph of one crate's top-level modules.
fn module_graph(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = crates_dir().join(krate).join("src");
    let mut files = Vec::new();
    if src.is_dir() {
        rust_files(&src, &mut files);
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(from) = top_module(&src, &file) else {
            continue;
        };
        if file.file_name().is_some_and(|n| n == "tests.rs") || from == "testutils" {
            continue;
        }
        let refs = crate_references(&fs::read_to_string(&file).unwrap());
        let entry = graph.entry(from.clone()).or_default();
        entry.extend(refs.into_iter().filter(|r| *r != from));
    }
    graph
}

/// A cycle through `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut cycle = path[at..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_modules_import_each_other_in_a_loop() {
    let mut loops = Vec::new();
    for krate in workspace_crates() {
        if let Some(cycle) = find_cycle(&module_graph(&krate)) {
            loops.push(format!("{krate}: {}", cycle.join(" -> ")));
        }
    }
    assert!(loops.is_empty(), "module loops: {loops:?}");
}

/// The check itself finds a loop and ignores what is not a module reference.
#[test]
fn the_loop_check_finds_a_loop() {
    let refs = crate_references(
        "use crate::a::X;\nuse coloc_crate::b;\n#[cfg(test)]\nmod tests { use crate::c; }",
    );
    assert_eq!(refs, BTreeSet::from(["a".to_string()]));
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let mut acyclic = graph.clone();
    acyclic.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&acyclic), None);
}
