//! The architecture holds (docs/architecture.md, Components): crates depend only
//! on the layers below them, and inside a crate no two modules of one parent
//! import each other, directly or through a loop, at any depth. Both are read
//! from the source, so a change that breaks them fails here instead of in a
//! later refactor.

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
    // Running workloads and procedures for the commands; it will run them on
    // either backend (linux, sim) through the Manager, hence above both.
    ("harness", 4),
    ("cli", 5),
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

/// The module path of a source file (`src/a/b.rs` is `a::b`, `src/a/mod.rs`
/// is `a`, the crate root is empty), or None for test-only files (`tests.rs`,
/// a `tests/` folder, `testutils`): tests may reach anywhere.
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut path: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if path
        .iter()
        .any(|p| matches!(p.as_str(), "tests" | "testutils"))
    {
        return None;
    }
    if path.len() == 1 && matches!(path[0].as_str(), "lib" | "main") || path.last()? == "mod" {
        path.pop();
    }
    Some(path)
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

/// The identifier paths that follow `at` in `code` (`a::b::C` after
/// `crate::`), one per item of a `{…}` group (`{a, b::c}`, one level deep).
fn paths_after(code: &str, at: usize) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let segments = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = s.trim_start();
        loop {
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            out.push(name);
            match rest.strip_prefix("::") {
                Some(r) if !r.starts_with('{') => rest = r,
                _ => break,
            }
        }
        out
    };
    let rest = &code[at..];
    let mut head = segments(rest);
    let consumed: usize = head.iter().map(|s| s.len() + 2).sum();
    match rest.get(consumed..).filter(|r| r.starts_with('{')) {
        Some(group) => {
            let group = &group[1..group.find('}').unwrap_or(group.len())];
            group
                .split(',')
                .map(|item| {
                    let mut p = head.clone();
                    p.extend(segments(item));
                    p
                })
                .filter(|p| !p.is_empty())
                .collect()
        }
        None if head.is_empty() => Vec::new(),
        None => vec![std::mem::take(&mut head)],
    }
}

/// The modules of this crate that `text`, the file of module `me`, names:
/// `crate::`, `super::` and `self::` paths in code (not in comments: a doc
/// link is no import), outside its unit-test module, as
/// absolute module paths (a `mod.rs` is its folder's module, so its `super`
/// is the folder's parent, as for any other file).
fn crate_references(text: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let code: String = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(text)
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    let this: Vec<String> = me.to_vec();
    let mut refs = BTreeSet::new();
    for root in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(root) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // e.g. `coloc_crate::`, or the `super::` of `super::super::`
            }
            let mut base = match root {
                "crate::" => Vec::new(),
                "self::" => this.clone(),
                _ => {
                    let mut b = this.clone();
                    b.pop();
                    b
                }
            };
            let mut at = i + root.len();
            if root == "super::" {
                while code[at..].starts_with("super::") {
                    base.pop();
                    at += "super::".len();
                }
            }
            for tail in paths_after(code, at) {
                let mut p = base.clone();
                p.extend(tail);
                refs.insert(p);
            }
        }
    }
    refs
}

/// Every module's graph of its child modules: `parent -> (child -> the
/// children it names)`. A file of `a::x` that names `a::b::C` is an edge
/// `x -> b` in `a`'s graph; at the crate root, between top-level modules.
type Graphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

fn module_graphs(src: &Path) -> Graphs {
    let mut files = Vec::new();
    if src.is_dir() {
        rust_files(src, &mut files);
    }
    let mut graphs = Graphs::new();
    for file in files {
        let Some(me) = module_path(src, &file) else {
            continue;
        };
        let text = fs::read_to_string(&file).unwrap();
        for target in crate_references(&text, &me) {
            if let Some((parent, from, to)) = edge(&me, &target) {
                graphs
                    .entry(parent)
                    .or_default()
                    .entry(from)
                    .or_default()
                    .insert(to);
            }
        }
    }
    graphs
}

/// The edge a reference from module `from` to `target` makes: in the
/// innermost module holding both, between the children they are in. None
/// for a module naming itself, its own parents or its own children.
fn edge(from: &[String], target: &[String]) -> Option<(Vec<String>, String, String)> {
    let k = from.iter().zip(target).take_while(|(a, b)| a == b).count();
    (k < from.len() && k < target.len())
        .then(|| (from[..k].to_vec(), from[k].clone(), target[k].clone()))
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
        for (parent, graph) in module_graphs(&crates_dir().join(&krate).join("src")) {
            if let Some(cycle) = find_cycle(&graph) {
                let at = if parent.is_empty() {
                    krate.clone()
                } else {
                    format!("{krate}::{}", parent.join("::"))
                };
                loops.push(format!("{at}: {}", cycle.join(" -> ")));
            }
        }
    }
    assert!(loops.is_empty(), "module loops: {loops:#?}");
}

fn strings(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

/// The check reads module references from `crate::`, `super::` and
/// `self::` paths, groups included, and ignores what is not one.
#[test]
fn the_loop_check_reads_references_at_every_depth() {
    let me = strings(&["a", "x"]);
    let refs = crate_references(
        "/// [`crate::e`]\nuse crate::a::y::Y;\nuse super::{z, w::W};\nuse super::super::b;\n\
         use coloc_crate::c;\nfn f() { self::inner::g() }\n\
         #[cfg(test)]\nmod tests { use crate::d; }",
        &me,
    );
    let want: BTreeSet<Vec<String>> = [
        vec!["a", "y", "Y"],
        vec!["a", "z"],
        vec!["a", "w", "W"],
        vec!["b"],
        vec!["a", "x", "inner", "g"],
    ]
    .into_iter()
    .map(|p| strings(&p))
    .collect();
    assert_eq!(refs, want);
    // `a::x` naming `a::y::Y` is an edge x -> y inside `a`; naming its own
    // child or parent is none.
    assert_eq!(
        edge(&me, &strings(&["a", "y", "Y"])),
        Some((strings(&["a"]), "x".into(), "y".into()))
    );
    assert_eq!(edge(&me, &strings(&["a", "x", "inner"])), None);
    assert_eq!(edge(&me, &strings(&["a"])), None);
    assert_eq!(
        edge(&me, &strings(&["b"])),
        Some((vec![], "a".into(), "b".into()))
    );
}

/// A loop two levels down (`a::m::p` and `a::m::q` naming each other) is
/// found, though the top-level modules form none.
#[test]
fn the_loop_check_finds_a_nested_loop() {
    let dir = std::env::temp_dir().join(format!("coloc-arch-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(src.join("a/m")).unwrap();
    fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    fs::write(src.join("b.rs"), "use crate::a::m::p::P;\n").unwrap();
    fs::write(src.join("a/mod.rs"), "pub mod m;\n").unwrap();
    fs::write(src.join("a/m/mod.rs"), "pub mod p;\npub mod q;\n").unwrap();
    fs::write(src.join("a/m/p.rs"), "use super::q::Q;\npub struct P;\n").unwrap();
    fs::write(
        src.join("a/m/q.rs"),
        "use crate::a::m::p::P;\npub struct Q;\n",
    )
    .unwrap();
    let graphs = module_graphs(&src);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(find_cycle(&graphs[&vec![]]), None);
    assert_eq!(
        find_cycle(&graphs[&strings(&["a", "m"])]),
        Some(strings(&["p", "q", "p"]))
    );
}

/// The cycle search finds a loop and passes a graph without one.
#[test]
fn the_loop_check_finds_a_loop() {
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
