//! The sysfs reader over recorded trees (tests/fixtures/sysfs/: two reconstructed
//! servers written by generate.py, and this development VM recorded by
//! record-host.sh).

use std::path::{Path, PathBuf};

use coloc_linux::topology::{read_sysfs, SysfsError};
use coloc_model::cpuset::CpuSet;
use coloc_model::topology::{ObjKind, ResourceKind, SharedResource, Topology, TopologyError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(name)
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn count(t: &Topology, kind: ObjKind) -> usize {
    t.objects_of(kind).count()
}

/// The CPU sets of the caches of one level, sorted.
fn caches(t: &Topology, level: u8) -> Vec<CpuSet> {
    let mut v: Vec<CpuSet> = t
        .objects_of(ObjKind::Cache)
        .filter(|(_, o)| o.cache.unwrap().level == level)
        .map(|(_, o)| o.cpus.clone())
        .collect();
    v.sort();
    v
}

fn cache_sizes(t: &Topology, level: u8) -> Vec<u64> {
    let mut v: Vec<u64> = t
        .objects_of(ObjKind::Cache)
        .filter_map(|(_, o)| o.cache.filter(|c| c.level == level))
        .map(|c| c.size_bytes)
        .collect();
    v.dedup();
    v
}

/// Copies a fixture tree into a temp dir, so a test can break one file.
fn scratch_copy(name: &str) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let dest = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &dest);
            } else {
                std::fs::copy(entry.path(), dest).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(&fixture(name), dir.path());
    dir
}

struct Expect {
    fixture: &'static str,
    model: &'static str,
    packages: usize,
    nodes: usize,
    cores: usize,
    pus: usize,
    l1: usize,
    l2: usize,
    /// (level, size in bytes) of the largest cache.
    l3_size: u64,
    l3: Vec<&'static str>,
    node_memory: Vec<u64>,
    /// A CPU and its core's PUs.
    smt: (u32, &'static str),
}

#[test]
fn reads_fixture_trees() {
    let cases = [
        Expect {
            fixture: "intel-xeon-e5-2680v3-2s",
            model: "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz",
            packages: 2,
            nodes: 2,
            cores: 24,
            pus: 48,
            l1: 24,
            l2: 24,
            l3_size: 30 << 20,
            l3: vec!["0-11,24-35", "12-23,36-47"],
            node_memory: vec![65_926_744 * 1024, 66_060_260 * 1024],
            smt: (17, "17,41"),
        },
        Expect {
            fixture: "amd-opteron-6174-4s",
            model: "AMD Opteron(tm) Processor 6174",
            packages: 4,
            nodes: 8,
            cores: 48,
            pus: 48,
            l1: 48,
            l2: 48,
            l3_size: 5118 << 10,
            l3: vec![
                "0-5", "6-11", "12-17", "18-23", "24-29", "30-35", "36-41", "42-47",
            ],
            node_memory: [8_379_356u64]
                .into_iter()
                .chain([8_388_608; 7])
                .map(|kb| kb * 1024)
                .collect(),
            smt: (7, "7"),
        },
        Expect {
            fixture: "host-kvm-epyc-2c",
            model: "AMD EPYC",
            packages: 1,
            nodes: 1,
            cores: 2,
            pus: 2,
            l1: 2,
            l2: 2,
            l3_size: 32 << 20,
            l3: vec!["0-1"],
            node_memory: vec![5_203_744 * 1024],
            smt: (1, "1"),
        },
    ];
    for e in cases {
        let t = read_sysfs(&fixture(e.fixture), None).unwrap();
        let f = e.fixture;
        assert_eq!(t.cpu_model, e.model, "{f}");
        assert_eq!(count(&t, ObjKind::Package), e.packages, "{f} packages");
        assert_eq!(count(&t, ObjKind::NumaNode), e.nodes, "{f} nodes");
        assert_eq!(count(&t, ObjKind::Core), e.cores, "{f} cores");
        assert_eq!(count(&t, ObjKind::Pu), e.pus, "{f} PUs");
        assert_eq!(count(&t, ObjKind::Group), 0, "{f} groups");
        assert_eq!(caches(&t, 1).len(), e.l1, "{f} L1d (L1i left out)");
        assert_eq!(caches(&t, 2).len(), e.l2, "{f} L2");
        assert_eq!(cache_sizes(&t, 3), vec![e.l3_size], "{f} L3 size");
        let l3: Vec<CpuSet> = e.l3.iter().map(|l| cpus(l)).collect();
        assert_eq!(caches(&t, 3), l3, "{f} L3 CPU sets");
        let memory: Vec<u64> = t
            .objects_of(ObjKind::NumaNode)
            .map(|(_, o)| o.memory_bytes.unwrap())
            .collect();
        assert_eq!(memory, e.node_memory, "{f} node memory");
        assert_eq!(t.core_of(e.smt.0), Some(&cpus(e.smt.1)), "{f} SMT siblings");
        assert!(
            t.objects_of(ObjKind::Cache)
                .all(|(_, o)| o.cache.unwrap().line_bytes == Some(64)),
            "{f} line size"
        );
    }
}

fn resource(
    kind: ResourceKind,
    same_as: Vec<ResourceKind>,
    per: usize,
    lists: &[&str],
) -> SharedResource {
    SharedResource {
        kind,
        instances: lists.iter().map(|l| cpus(l)).collect(),
        same_as,
        cores_per_instance: per,
    }
}

#[test]
fn shared_resources_of_fixtures() {
    use ResourceKind::*;
    let cases = [
        (
            "intel-xeon-e5-2680v3-2s",
            // L1 and L2 are per core (shared only by SMT siblings): not shared
            // resources. L3, memory controller and socket coincide.
            vec![resource(
                Cache { level: 3 },
                vec![MemoryController, Package],
                12,
                &["0-11,24-35", "12-23,36-47"],
            )],
        ),
        (
            "amd-opteron-6174-4s",
            // ReSense's machine: L3 = memory controller per die, then the socket.
            vec![
                resource(
                    Cache { level: 3 },
                    vec![MemoryController],
                    6,
                    &[
                        "0-5", "6-11", "12-17", "18-23", "24-29", "30-35", "36-41", "42-47",
                    ],
                ),
                resource(Package, vec![], 12, &["0-11", "12-23", "24-35", "36-47"]),
            ],
        ),
        (
            "host-kvm-epyc-2c",
            vec![resource(
                Cache { level: 3 },
                vec![MemoryController, Package],
                2,
                &["0-1"],
            )],
        ),
    ];
    for (name, want) in cases {
        let t = read_sysfs(&fixture(name), None).unwrap();
        assert_eq!(t.shared_resources(), want, "{name}");
    }
}

#[test]
fn nests_by_inclusion() {
    let t = read_sysfs(&fixture("amd-opteron-6174-4s"), None).unwrap();
    // PU 13 sits in Core < L1 < L2 < L3 < node 2 < package 1 < machine.
    let chain: Vec<(ObjKind, Option<u32>)> = t
        .ancestors_of_cpu(13)
        .into_iter()
        .map(|id| (t.objects[id].kind, t.objects[id].os_index))
        .collect();
    assert_eq!(
        chain,
        vec![
            (ObjKind::Pu, Some(13)),
            (ObjKind::Core, Some(1)),
            (ObjKind::Cache, None),
            (ObjKind::Cache, None),
            (ObjKind::Cache, None),
            (ObjKind::NumaNode, Some(2)),
            (ObjKind::Package, Some(1)),
            (ObjKind::Machine, None),
        ]
    );
}

#[test]
fn core_ids_keep_kernel_numbers_or_disambiguate() {
    // Haswell-EP 12-core dies number their cores 0-5, 8-13: kept as the kernel says.
    let intel = read_sysfs(&fixture("intel-xeon-e5-2680v3-2s"), None).unwrap();
    let core_ids: Vec<u32> = intel
        .objects_of(ObjKind::Core)
        .filter(|(_, o)| o.cpus.is_subset(&cpus("0-11,24-35")))
        .map(|(_, o)| o.os_index.unwrap())
        .collect();
    assert_eq!(core_ids, vec![0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]);
    // Magny-Cours kernels restart core_id on each die: the reader must not merge the
    // two dies' core 0 into one two-PU core.
    let amd = read_sysfs(&fixture("amd-opteron-6174-4s"), None).unwrap();
    assert!(amd.cores().iter().all(|c| c.len() == 1));
    let pkg1: Vec<u32> = amd
        .objects_of(ObjKind::Core)
        .filter(|(_, o)| o.cpus.is_subset(&cpus("12-23")))
        .map(|(_, o)| o.os_index.unwrap())
        .collect();
    assert_eq!(pkg1, (0..12).collect::<Vec<_>>());
}

#[test]
fn restricts_to_allowed_cpus() {
    let allowed = cpus("0-5,24-29");
    let t = read_sysfs(&fixture("intel-xeon-e5-2680v3-2s"), Some(&allowed)).unwrap();
    assert_eq!(t.cpus(), &allowed);
    assert_eq!(count(&t, ObjKind::Package), 1);
    assert_eq!(count(&t, ObjKind::NumaNode), 1);
    assert_eq!(count(&t, ObjKind::Core), 6);
    assert_eq!(count(&t, ObjKind::Pu), 12);
    assert_eq!(caches(&t, 3), vec![allowed.clone()]);
    assert_eq!(
        t.shared_resources(),
        vec![resource(
            ResourceKind::Cache { level: 3 },
            vec![ResourceKind::MemoryController, ResourceKind::Package],
            6,
            &["0-5,24-29"],
        )]
    );
    // CPUs the machine does not have are ignored; none at all is an error.
    let t = read_sysfs(&fixture("host-kvm-epyc-2c"), Some(&cpus("1,7"))).unwrap();
    assert_eq!(t.cpus(), &cpus("1"));
    let err = read_sysfs(&fixture("host-kvm-epyc-2c"), Some(&cpus("7"))).unwrap_err();
    assert!(
        matches!(
            err,
            SysfsError::Topology {
                source: TopologyError::NoCpus,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn offline_cpus_are_left_out() {
    let dir = scratch_copy("intel-xeon-e5-2680v3-2s");
    let cpu = dir.path().join("sys/devices/system/cpu");
    std::fs::write(cpu.join("online"), "0-46\n").unwrap();
    // The kernel removes an offline CPU's topology directory.
    std::fs::remove_dir_all(cpu.join("cpu47/topology")).unwrap();
    let t = read_sysfs(dir.path(), None).unwrap();
    assert_eq!(t.cpus(), &cpus("0-46"));
    assert_eq!(t.core_of(23), Some(&cpus("23")));
    // The stale sibling entries in the cache lists do not make objects of CPU 47.
    assert_eq!(caches(&t, 3)[1], cpus("12-23,36-46"));
}

#[test]
fn machines_without_numa_or_cache_info_still_read() {
    let dir = scratch_copy("host-kvm-epyc-2c");
    std::fs::remove_dir_all(dir.path().join("sys/devices/system/node")).unwrap();
    for cpu in 0..2 {
        let index3 = format!("sys/devices/system/cpu/cpu{cpu}/cache/index3/size");
        std::fs::remove_file(dir.path().join(index3)).unwrap();
        let topo = format!("sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id");
        std::fs::write(dir.path().join(topo), "-1\n").unwrap();
    }
    let t = read_sysfs(dir.path(), None).unwrap();
    assert_eq!(count(&t, ObjKind::NumaNode), 0);
    assert!(caches(&t, 3).is_empty(), "a cache with no size is skipped");
    assert_eq!(count(&t, ObjKind::Package), 1);
    assert_eq!(t.cores(), vec![cpus("0"), cpus("1")]);
}

#[test]
fn bad_files_are_named_in_errors() {
    let cases: [(&str, Option<&str>, &str); 7] = [
        (
            "sys/devices/system/cpu/cpu1/cache/index2/size",
            Some("abc\n"),
            r#"cpu1/cache/index2/size: "abc" is not a cache size such as 32K"#,
        ),
        (
            "sys/devices/system/cpu/cpu0/cache/index3/type",
            Some("Trace\n"),
            r#"cpu0/cache/index3/type: "Trace" is not a cache type"#,
        ),
        (
            "sys/devices/system/cpu/cpu0/cache/index0/level",
            Some("0\n"),
            r#"cpu0/cache/index0/level: "0" is not a cache level"#,
        ),
        (
            "sys/devices/system/cpu/cpu1/topology/core_id",
            Some("one\n"),
            r#"cpu1/topology/core_id: "one" is not a topology id"#,
        ),
        (
            "sys/devices/system/cpu/online",
            Some("0-x\n"),
            "sys/devices/system/cpu/online: bad CPU list",
        ),
        (
            "sys/devices/system/node/node0/meminfo",
            Some("Node 0 MemFree: 1 kB\n"),
            "node0/meminfo: \"Node 0 MemFree: 1 kB\" is not a node meminfo",
        ),
        (
            "sys/devices/system/cpu/cpu1/topology/physical_package_id",
            None,
            "cannot read ",
        ),
    ];
    for (file, contents, want) in cases {
        let dir = scratch_copy("host-kvm-epyc-2c");
        let path = dir.path().join(file);
        match contents {
            Some(text) => std::fs::write(&path, text).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        let err = read_sysfs(dir.path(), None).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(want), "{file}: {msg:?} lacks {want:?}");
        assert!(msg.contains(file), "{file}: {msg:?} does not name the file");
    }
}
