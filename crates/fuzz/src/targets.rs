//! One target per parser: bytes in, no panic out. Each drives the parser the
//! way coloc does on untrusted input, and what a successful parse feeds next
//! (a workload's serialisation, a topology's tree and shared levels, a
//! trace's metrics and report, a profile import into a store).

use std::path::{Path, PathBuf};

use coloc_daemon::protocol::{parse_request, Envelope, MAX_REQUEST, PROTOCOL_VERSION};
use coloc_model::metrics::RunMetrics;
use coloc_model::profile::{
    AppIdentity, AppProfile, LevelProfile, LevelResult, NotCharacterizable, PlatformFingerprint,
    Sensitivity, Signal,
};
use coloc_model::topology::hwloc::parse_hwloc_xml;
use coloc_model::topology::ResourceKind;
use coloc_model::workload::parse_workload;
use coloc_model::{Topology, Trace};
use coloc_store::Store;

/// A fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    /// Must return (any result) for every input; a panic is a crash.
    pub run: fn(&[u8]),
    /// Valid inputs to start from.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens of the format, inserted by the mutator.
    pub dictionary: &'static [&'static str],
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "workload",
        run: workload,
        seeds: workload_seeds,
        dictionary: &[
            "[[app]]",
            "name = ",
            "command = ",
            "threads = ",
            "arrive_at = ",
            "repeat = ",
            "epoch = ",
            "malleable = true",
            "class = ",
            "memory = ",
            "sched = { nice = ",
            "slice_us = ",
            "[app.metric]",
            "regex = ",
            "model = ",
            "cpus = ",
            "\"",
            "'",
            "=",
            "[",
            "]",
            "{",
            "}",
            "\n",
            "0",
            "-1",
            "4294967296",
            "1e308",
            "30days",
            "0ms",
        ],
    },
    Target {
        name: "hwloc",
        run: hwloc,
        seeds: hwloc_seeds,
        dictionary: &[
            "<object type=\"",
            "Machine",
            "Package",
            "NUMANode",
            "L3Cache",
            "L2Cache",
            "Core",
            "PU",
            "Group",
            "Die",
            "cpuset=\"",
            "os_index=\"",
            "cache_size=\"",
            "depth=\"",
            "</object>",
            "<info name=\"",
            "0xffffffff",
            ",",
            "0x0",
            "\"",
            "/>",
            ">",
            "<",
        ],
    },
    Target {
        name: "trace",
        run: trace,
        seeds: trace_seeds,
        dictionary: &[
            "{\"event\":",
            "\"arrive\"",
            "\"start\"",
            "\"exit\"",
            "\"plan\"",
            "\"applied\"",
            "\"obs\"",
            "\"threads\"",
            "\"end\"",
            "\"app\":{\"app\":",
            "\"rep\":",
            "\"t\":",
            "4000000000",
            "18446744073709551615",
            "-1",
            "1e308",
            "null",
            "[]",
            "{}",
            "\n",
        ],
    },
    Target {
        name: "profiles",
        run: profiles,
        seeds: profile_seeds,
        dictionary: &[
            "\"format\":\"coloc-profiles\"",
            "\"version\":",
            "\"profiles\":",
            "\"identity\":",
            "\"platform\":",
            "\"levels\":",
            "\"score\":",
            "NaN",
            "1e308",
            "-0",
            "null",
            "[]",
            "{}",
            "\"",
        ],
    },
    Target {
        name: "request",
        run: request,
        seeds: request_seeds,
        dictionary: &[
            "{\"v\":1,",
            "\"request\":",
            "\"exec\"",
            "\"exited\"",
            "\"attach\"",
            "\"release\"",
            "\"status\"",
            "\"set_policy\"",
            "\"name\":",
            "\"class\":\"batch\"",
            "\"malleable\":true",
            "\"threads\":",
            "\"pid\":",
            "\"argv\":[",
            "\"policy\":",
            "\"status\":{\"kind\":\"code\",\"value\":",
            "\"v\":",
            "4294967295",
            "4194304",
            "4097",
            "-1",
            "1e308",
            "null",
            "\\u0000",
            "\\u001b[2J",
            "\\ud800",
            "[]",
            "{}",
            "\"",
            "\n",
        ],
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn workload(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_workload("fuzz.toml", text) {
        Ok(w) => {
            serde_json::to_string(&w).expect("a parsed workload serialises");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fn hwloc(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_hwloc_xml("fuzz", text) {
        Ok(t) => {
            let _ = t.render_tree();
            let _ = t.shared_resources();
            let _ = t.shape_hash();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// As `coloc report` reads a trace: parse, check the app indices, metrics.
fn trace(data: &[u8]) {
    let Ok(t) = Trace::read(data) else { return };
    if t.check_app_indices().is_err() {
        return;
    }
    let m = RunMetrics::from_trace(&t, None);
    let _ = m.render();
    let _ = serde_json::to_string(&m);
}

/// As `coloc profiles import` does, into a store in memory.
fn profiles(data: &[u8]) {
    let store = Store::open(":memory:").expect("an in-memory store opens");
    let _ = store.import_json(data, &fuzz_platform());
}

/// As the daemon reads a request line from any local user: the parser must
/// answer every input, and what it accepts is within bounds and reads back
/// the same once written again (what a client writes).
fn request(data: &[u8]) {
    match parse_request(data) {
        Ok(r) => {
            assert!(data.len() <= MAX_REQUEST, "a line over the bound was read");
            r.validate().expect("an accepted request is valid");
            let again = serde_json::to_vec(&Envelope {
                v: PROTOCOL_VERSION,
                request: r.clone(),
            })
            .expect("a request serialises");
            assert_eq!(parse_request(&again), Ok(r), "a request reads back");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fn request_seeds() -> Vec<Vec<u8>> {
    files(&repo().join("crates/fuzz/seeds/request"), ".jsonl")
        .into_iter()
        .flat_map(|f| {
            f.split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| l.to_vec())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn fuzz_platform() -> PlatformFingerprint {
    PlatformFingerprint::of(&Topology::synthetic("fuzz", "package:1 l3(8M):1 core:2").unwrap())
}

/// The repository's root, where seed files are read from.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` with a name ending in `suffix`, recursively.
fn files(dir: &Path, suffix: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            out.extend(files(&p, suffix));
        } else if p.to_string_lossy().ends_with(suffix) {
            if let Ok(bytes) = std::fs::read(&p) {
                out.push(bytes);
            }
        }
    }
    out
}

fn workload_seeds() -> Vec<Vec<u8>> {
    let root = repo();
    let mut seeds = files(&root.join("examples"), ".toml");
    seeds.extend(files(
        &root.join("crates/model/tests/fixtures/workloads"),
        ".toml",
    ));
    seeds
}

fn hwloc_seeds() -> Vec<Vec<u8>> {
    files(&repo().join("crates/model/tests/fixtures/hwloc"), ".xml")
}

fn trace_seeds() -> Vec<Vec<u8>> {
    files(&repo().join("crates/fuzz/seeds/trace"), ".jsonl")
}

fn profile_seeds() -> Vec<Vec<u8>> {
    let platform = fuzz_platform();
    let profile = AppProfile {
        sharing: None,
        identity: AppIdentity::model("streamcluster", "streamcluster"),
        platform,
        levels: vec![
            LevelProfile {
                level: ResourceKind::Cache { level: 3 },
                result: LevelResult::Scored(
                    Sensitivity::from_runs(
                        Signal::TaskClock,
                        2,
                        vec![1000.0, 1010.0],
                        vec![800.0, 790.0],
                    )
                    .expect("a valid sensitivity"),
                ),
            },
            LevelProfile {
                level: ResourceKind::Package,
                result: LevelResult::NotCharacterizable {
                    reason: NotCharacterizable::SingleInstance,
                },
            },
        ],
    };
    let export = serde_json::json!({
        "format": coloc_store::EXPORT_FORMAT,
        "version": coloc_store::EXPORT_VERSION,
        "profiles": [profile],
    });
    vec![serde_json::to_vec_pretty(&export).expect("serialises")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_seeds_and_takes_them() {
        for t in TARGETS {
            let seeds = (t.seeds)();
            assert!(!seeds.is_empty(), "{}: no seeds", t.name);
            for s in &seeds {
                (t.run)(s);
            }
        }
    }
}
