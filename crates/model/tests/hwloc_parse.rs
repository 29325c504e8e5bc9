//! The hwloc XML reader over lstopo's own output (tests/fixtures/hwloc/, see
//! regenerate.sh there) and over small hand-written documents for the edge cases.

use std::path::Path;

use coloc_model::cpuset::CpuSet;
use coloc_model::topology::hwloc::{parse_hwloc_xml, HwlocError};
use coloc_model::topology::{ObjKind, ResourceKind, SharedResource, Topology, TopologyError};

fn fixture(name: &str) -> Topology {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hwloc")
        .join(name);
    let xml = std::fs::read_to_string(&path).unwrap();
    parse_hwloc_xml(name, &xml).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn count(t: &Topology, kind: ObjKind) -> usize {
    t.objects_of(kind).count()
}

fn caches(t: &Topology, level: u8) -> Vec<(CpuSet, u64)> {
    let mut v: Vec<(CpuSet, u64)> = t
        .objects_of(ObjKind::Cache)
        .filter_map(|(_, o)| {
            o.cache
                .filter(|c| c.level == level)
                .map(|c| (o.cpus.clone(), c.size_bytes))
        })
        .collect();
    v.sort();
    v
}

fn memory(t: &Topology) -> Vec<Option<u64>> {
    t.objects_of(ObjKind::NumaNode)
        .map(|(_, o)| o.memory_bytes)
        .collect()
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
fn intel_two_socket_v2() {
    let t = fixture("intel-xeon-e5-2680v3-2s.v2.xml");
    assert_eq!(t.cpu_model, "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz");
    assert_eq!(
        [
            ObjKind::Package,
            ObjKind::NumaNode,
            ObjKind::Core,
            ObjKind::Pu
        ]
        .map(|k| count(&t, k)),
        [2, 2, 24, 48]
    );
    assert_eq!(caches(&t, 1).len(), 24, "L1d only, L1i left out");
    assert!(caches(&t, 2)
        .iter()
        .all(|(c, s)| c.len() == 2 && *s == 256 << 10));
    assert_eq!(
        caches(&t, 3),
        vec![
            (cpus("0-11,24-35"), 30 << 20),
            (cpus("12-23,36-47"), 30 << 20)
        ]
    );
    assert_eq!(
        memory(&t),
        vec![Some(65_926_744 * 1024), Some(66_060_260 * 1024)]
    );
    assert_eq!(t.core_of(30), Some(&cpus("6,30")));
    // hwloc keeps the kernel's core ids, gaps included.
    let core_of_6 = t
        .objects_of(ObjKind::Core)
        .find(|(_, o)| o.cpus.contains(6))
        .map(|(_, o)| o.os_index);
    assert_eq!(core_of_6, Some(Some(8)));
    assert_eq!(
        t.shared_resources(),
        vec![resource(
            ResourceKind::Cache { level: 3 },
            vec![ResourceKind::MemoryController, ResourceKind::Package],
            12,
            &["0-11,24-35", "12-23,36-47"],
        )]
    );
}

#[test]
fn amd_magny_cours_v1() {
    let t = fixture("amd-opteron-6174-4s.v1.xml");
    assert_eq!(t.cpu_model, "AMD Opteron(tm) Processor 6174");
    assert_eq!(
        [
            ObjKind::Package,
            ObjKind::NumaNode,
            ObjKind::Core,
            ObjKind::Pu
        ]
        .map(|k| count(&t, k)),
        [4, 8, 48, 48]
    );
    // Core os_index restarts on each die in this file: the two dies' cores must
    // stay separate cores.
    assert!(t.cores().iter().all(|c| c.len() == 1));
    let l3: Vec<(CpuSet, u64)> = (0..8)
        .map(|n| (cpus(&format!("{}-{}", n * 6, n * 6 + 5)), 5118 << 10))
        .collect();
    assert_eq!(caches(&t, 3), l3);
    assert_eq!(caches(&t, 2).len(), 48);
    assert_eq!(memory(&t)[0], Some(8_379_356 * 1024));
    assert_eq!(
        t.shared_resources(),
        vec![
            resource(
                ResourceKind::Cache { level: 3 },
                vec![ResourceKind::MemoryController],
                6,
                &["0-5", "6-11", "12-17", "18-23", "24-29", "30-35", "36-41", "42-47"],
            ),
            resource(
                ResourceKind::Package,
                vec![],
                12,
                &["0-11", "12-23", "24-35", "36-47"]
            ),
        ]
    );
}

#[test]
fn this_vm_v2() {
    let t = fixture("host-kvm-epyc-2c.v2.xml");
    assert_eq!(t.cpu_model, "AMD EPYC");
    assert_eq!(t.cores(), vec![cpus("0"), cpus("1")]);
    assert_eq!(caches(&t, 3), vec![(cpus("0-1"), 32 << 20)]);
    assert_eq!(
        caches(&t, 2),
        vec![(cpus("0"), 512 << 10), (cpus("1"), 512 << 10)]
    );
    assert_eq!(memory(&t), vec![Some(5_328_633_856)]);
    let line = t
        .objects_of(ObjKind::Cache)
        .map(|(_, o)| o.cache.unwrap().line_bytes);
    assert!(line.into_iter().all(|l| l == Some(64)));
}

#[test]
fn dies_and_groups() {
    let t = fixture("synthetic-2pack-2die-groups.v2.xml");
    let mut groups: Vec<(String, CpuSet)> = t
        .objects_of(ObjKind::Group)
        .map(|(_, o)| (o.name.clone().unwrap(), o.cpus.clone()))
        .collect();
    groups.sort();
    let want: Vec<(String, CpuSet)> = (0..4)
        .map(|d| ("die".to_string(), cpus(&format!("{}-{}", d * 8, d * 8 + 7))))
        .chain((0..8).map(|g| {
            (
                "group".to_string(),
                cpus(&format!("{}-{}", g * 4, g * 4 + 3)),
            )
        }))
        .collect();
    assert_eq!(groups, want);
    // Die > L3 > group > core: the group sits inside the L3 it shares.
    let chain: Vec<ObjKind> = t
        .ancestors_of_cpu(9)
        .iter()
        .map(|&id| t.objects[id].kind)
        .collect();
    assert_eq!(
        chain,
        [
            ObjKind::Pu,
            ObjKind::Core,
            ObjKind::Group,
            ObjKind::Cache,
            ObjKind::Group,
            ObjKind::NumaNode,
            ObjKind::Package,
            ObjKind::Machine
        ]
    );
    assert_eq!(
        memory(&t),
        vec![None; 4],
        "synthetic nodes have no memory size"
    );
    assert_eq!(t.core_of(5), Some(&cpus("4-5")));
    use ResourceKind::*;
    assert_eq!(
        t.shared_resources(),
        vec![
            resource(
                Group {
                    name: "group".into()
                },
                vec![],
                2,
                &["0-3", "4-7", "8-11", "12-15", "16-19", "20-23", "24-27", "28-31"],
            ),
            resource(
                Cache { level: 3 },
                vec![Group { name: "die".into() }, MemoryController],
                4,
                &["0-7", "8-15", "16-23", "24-31"],
            ),
            resource(Package, vec![], 8, &["0-15", "16-31"]),
        ]
    );
}

/// A one-package document with `body` inside the package.
fn doc(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n\
         <object type=\"Machine\" os_index=\"0\" cpuset=\"0x0000000f\">\n\
         <object type=\"Package\" os_index=\"0\" cpuset=\"0x0000000f\">\n{body}\n</object>\n\
         </object>\n</topology>\n"
    )
}

#[test]
fn hand_written_edge_cases() {
    // PUs without Core parents are cores of their own; a 1.x PU whose cpuset
    // leaves it out (offline) is skipped; NUMA nodes may sit below the package.
    let xml = doc(concat!(
        "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000007\" local_memory=\"1024\"/>\n",
        "<object type=\"Cache\" depth=\"2\" cache_size=\"4096\" cpuset=\"0x0000000f\">\n",
        "<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"/>\n",
        "<object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\"/>\n",
        "<object type=\"PU\" os_index=\"2\"/>\n",
        "<object type=\"PU\" os_index=\"3\" cpuset=\"0x0\"/>\n",
        "</object>",
    ));
    let t = parse_hwloc_xml("edge", &xml).unwrap();
    assert_eq!(t.cpus(), &cpus("0-2"));
    assert_eq!(t.cores(), vec![cpus("0"), cpus("1"), cpus("2")]);
    assert_eq!(caches(&t, 2), vec![(cpus("0-2"), 4096)]);
    assert_eq!(memory(&t), vec![Some(1024)]);
    assert_eq!(t.cpu_model, "");
}

#[test]
fn errors_name_the_line_and_attribute() {
    let cases: Vec<(String, &str)> = vec![
        (
            doc("<object type=\"L3Cache\" cache_size=\"8\" cpuset=\"0xzz\"/>"),
            "line 5: L3Cache object: attribute `cpuset` = \"0xzz\": `0xzz` is not a 32-bit hex word",
        ),
        (
            doc("<object type=\"L3Cache\" cpuset=\"0x1\"/>"),
            "line 5: L3Cache object has no `cache_size` attribute",
        ),
        (
            doc("<object type=\"PU\" os_index=\"x\"/>"),
            "line 5: PU object: attribute `os_index` = \"x\": not a non-negative integer",
        ),
        (doc("<object type=\"PU\"/>"), "line 5: PU object has no `os_index` attribute"),
        (
            doc("\n\n<object type=\"Blob\" cpuset=\"0x1\"/>"),
            "line 7: unknown object type \"Blob\"",
        ),
        (
            doc("<object type=\"L2Cache\" cache_size=\"8\" cache_type=\"7\" cpuset=\"0x1\"/>"),
            "line 5: L2Cache object: attribute `cache_type` = \"7\": not a cache type",
        ),
        (
            doc("<object type=\"Cache\" depth=\"0\" cache_size=\"8\" cpuset=\"0x1\"/>"),
            "line 5: Cache object: attribute `depth` = \"0\": not a cache level",
        ),
        (
            doc("<object type=\"NUMANode\" local_memory=\"-5\" cpuset=\"0x1\"/>"),
            "line 5: NUMANode object: attribute `local_memory` = \"-5\"",
        ),
        (doc("<object os_index=\"3\"/>"), "line 5: an object has no `type` attribute"),
        (doc("<object type=\"PU\" os_index=\"1\">"), "malformed XML"),
        (doc("<object type=\"PU\" os_index=\"1/>"), "malformed XML"),
        ("<lstopo/>".to_string(), "not an hwloc topology"),
    ];
    for (xml, want) in cases {
        let err = parse_hwloc_xml("bad", &xml).unwrap_err();
        assert!(
            err.to_string().contains(want),
            "{err} lacks {want:?}\n{xml}"
        );
    }
}

#[test]
fn malformed_xml_reports_where() {
    let xml = "<topology>\n<object type=\"Machine\">\n<object type=\"PU\" os_index=\"0\"/>\n</topology>\n";
    match parse_hwloc_xml("bad", xml).unwrap_err() {
        HwlocError::Xml { line, .. } => assert_eq!(line, 4),
        e => panic!("{e:?}"),
    }
}

#[test]
fn duplicate_pus_are_rejected() {
    let xml = doc("<object type=\"PU\" os_index=\"1\"/>\n<object type=\"PU\" os_index=\"1\"/>");
    assert!(matches!(
        parse_hwloc_xml("dup", &xml),
        Err(HwlocError::Topology(TopologyError::DuplicateCpu(1)))
    ));
}

#[test]
fn truncated_document_is_an_error() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hwloc/host-kvm-epyc-2c.v2.xml");
    let xml = std::fs::read_to_string(path).unwrap();
    // Cut after a complete element, so only the missing end tags are wrong.
    let cut = xml.find("</object>").unwrap() + "</object>".len();
    let err = parse_hwloc_xml("cut", &xml[..cut]).unwrap_err();
    assert!(matches!(err, HwlocError::Xml { .. }), "{err:?}");
}

#[test]
fn packages_and_cores_without_usable_indexes() {
    // No Package at all: one package 0. Packages without os_index, or with the
    // same one twice, are numbered in document order.
    let cases = [
        (
            "<object type=\"Core\"><object type=\"PU\" os_index=\"0\"/></object>\
             <object type=\"PU\" os_index=\"1\"/>",
            vec![(0, "0-1")],
        ),
        (
            "<object type=\"Package\"><object type=\"PU\" os_index=\"0\"/></object>\
             <object type=\"Package\"><object type=\"PU\" os_index=\"1\"/></object>",
            vec![(0, "0"), (1, "1")],
        ),
        (
            "<object type=\"Package\" os_index=\"3\"><object type=\"PU\" os_index=\"0\"/></object>\
             <object type=\"Package\" os_index=\"3\"><object type=\"PU\" os_index=\"1\"/></object>",
            vec![(0, "0"), (1, "1")],
        ),
    ];
    for (body, want) in cases {
        let xml = format!("<topology><object type=\"Machine\">{body}</object></topology>");
        let t = parse_hwloc_xml("idx", &xml).unwrap();
        let got: Vec<(u32, CpuSet)> = t
            .objects_of(ObjKind::Package)
            .map(|(_, o)| (o.os_index.unwrap(), o.cpus.clone()))
            .collect();
        let want: Vec<(u32, CpuSet)> = want.into_iter().map(|(i, l)| (i, cpus(l))).collect();
        assert_eq!(got, want, "{body}");
        assert_eq!(t.cores().len(), 2, "{body}");
    }
}

#[test]
fn pu_outside_a_package_is_an_error_when_others_are_inside() {
    let xml = "<topology>\n<object type=\"Machine\">\n\
               <object type=\"Package\" os_index=\"0\"><object type=\"PU\" os_index=\"0\"/></object>\n\
               <object type=\"PU\" os_index=\"1\"/>\n</object>\n</topology>\n";
    let err = parse_hwloc_xml("stray", xml).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 4: PU 1 is not inside a Package, but other PUs are"
    );
}
