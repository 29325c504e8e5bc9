//! The sysfs reader and the hwloc XML reader agree: on the recorded trees (whose
//! XML was written by lstopo reading those very trees, see
//! crates/model/tests/fixtures/hwloc/regenerate.sh), and, where lstopo is
//! installed, on this machine.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use coloc_linux::topology::{read_host, read_sysfs};
use coloc_model::cpuset::CpuSet;
use coloc_model::topology::hwloc::parse_hwloc_xml;
use coloc_model::topology::{ObjKind, Topology};

/// Everything both readers should report, independent of object order and of
/// attributes only one format carries.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    Package(Option<u32>, CpuSet),
    Node(Option<u32>, CpuSet, Option<u64>),
    Group(Option<String>, CpuSet),
    /// level, size, line size, CPUs
    Cache(u8, u64, Option<u32>, CpuSet),
    Core(Option<u32>, CpuSet),
    Pu(Option<u32>),
}

fn items(t: &Topology) -> Vec<Item> {
    let mut v: Vec<Item> = t
        .objects
        .iter()
        .filter_map(|o| {
            let cpus = o.cpus.clone();
            Some(match o.kind {
                ObjKind::Machine => return None,
                ObjKind::Package => Item::Package(o.os_index, cpus),
                ObjKind::NumaNode => Item::Node(o.os_index, cpus, o.memory_bytes),
                ObjKind::Group => Item::Group(o.name.clone(), cpus),
                ObjKind::Cache => {
                    let c = o.cache?;
                    Item::Cache(c.level, c.size_bytes, c.line_bytes, cpus)
                }
                ObjKind::Core => Item::Core(o.os_index, cpus),
                ObjKind::Pu => Item::Pu(o.os_index),
            })
        })
        .collect();
    v.sort();
    v
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn readers_agree_on_recorded_machines() {
    let cases = [
        ("intel-xeon-e5-2680v3-2s", "intel-xeon-e5-2680v3-2s.v2.xml"),
        ("amd-opteron-6174-4s", "amd-opteron-6174-4s.v1.xml"),
        ("host-kvm-epyc-2c", "host-kvm-epyc-2c.v2.xml"),
    ];
    let hwloc_dir = fixtures().join("../../../model/tests/fixtures/hwloc");
    for (tree, xml_file) in cases {
        let sysfs = read_sysfs(&fixtures().join("sysfs").join(tree), None).unwrap();
        let xml = std::fs::read_to_string(hwloc_dir.join(xml_file)).unwrap();
        let hwloc = parse_hwloc_xml(xml_file, &xml).unwrap();
        assert_eq!(items(&sysfs), items(&hwloc), "{tree} vs {xml_file}");
        assert_eq!(sysfs.cpu_model, hwloc.cpu_model, "{tree}");
        assert_eq!(sysfs.shared_resources(), hwloc.shared_resources(), "{tree}");
        assert_eq!(sysfs.shape_hash(), hwloc.shape_hash(), "{tree}");
    }
}

/// lstopo's XML of this machine, including CPUs a cgroup keeps from this process
/// (read_host(None) reads them all), or why there is none.
fn lstopo_xml() -> Result<String, String> {
    for bin in ["lstopo-no-graphics", "lstopo"] {
        let out = Command::new(bin)
            .args(["--disallowed", "--no-io", "--of", "xml", "-"])
            .output();
        match out {
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{bin} did not start: {e}")),
            Ok(out) if !out.status.success() => {
                return Err(format!(
                    "{bin} failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ))
            }
            Ok(out) => return String::from_utf8(out.stdout).map_err(|e| e.to_string()),
        }
    }
    Err("neither lstopo-no-graphics nor lstopo is on PATH (install hwloc)".into())
}

#[test]
fn readers_agree_on_this_machine() {
    let xml = match lstopo_xml() {
        Ok(xml) => xml,
        Err(why) => {
            // A skip, not a failure: the comparison needs hwloc, which CI installs.
            eprintln!("skipping the live sysfs/hwloc comparison: {why}");
            return;
        }
    };
    let hwloc = parse_hwloc_xml("lstopo", &xml).expect("lstopo's XML parses");
    let sysfs = read_host(None).expect("this machine's sysfs reads");
    assert_eq!(items(&sysfs), items(&hwloc));
    assert_eq!(sysfs.shared_resources(), hwloc.shared_resources());
}
