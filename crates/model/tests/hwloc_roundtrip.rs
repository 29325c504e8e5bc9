//! Property tests: any topology written as hwloc XML reads back as itself, and a
//! truncated document is an error, never a smaller machine.

use std::fmt::Write as _;
use std::path::Path;

use coloc_model::topology::hwloc::{format_cpuset_mask, parse_hwloc_xml};
use coloc_model::topology::{ObjId, ObjKind, Topology};
use proptest::prelude::*;

/// Writes `t` the way lstopo would (hwloc 2.x object names), with NUMA nodes as
/// ordinary parents as hwloc 1.x nests them.
fn to_hwloc_xml(t: &Topology) -> String {
    fn object(t: &Topology, id: ObjId, depth: usize, out: &mut String) {
        let o = &t.objects[id];
        let mut attrs = String::new();
        let kind = match (o.kind, &o.cache) {
            (ObjKind::Machine, _) => "Machine".to_string(),
            (ObjKind::Package, _) => "Package".to_string(),
            (ObjKind::NumaNode, _) => "NUMANode".to_string(),
            (ObjKind::Group, _) => {
                let name = o.name.as_deref().unwrap_or("group");
                let _ = write!(attrs, " subtype=\"{name}\"");
                "Group".to_string()
            }
            (ObjKind::Cache, Some(c)) => {
                let _ = write!(
                    attrs,
                    " cache_size=\"{}\" depth=\"{}\" cache_type=\"0\"",
                    c.size_bytes, c.level
                );
                format!("L{}Cache", c.level)
            }
            (ObjKind::Cache, None) => unreachable!("caches carry their level"),
            (ObjKind::Core, _) => "Core".to_string(),
            (ObjKind::Pu, _) => "PU".to_string(),
        };
        if let Some(m) = o.memory_bytes {
            let _ = write!(attrs, " local_memory=\"{m}\"");
        }
        let os = o
            .os_index
            .map(|i| format!(" os_index=\"{i}\""))
            .unwrap_or_default();
        let _ = write!(
            out,
            "{:depth$}<object type=\"{kind}\"{os} cpuset=\"{}\"{attrs}",
            "",
            format_cpuset_mask(&o.cpus),
            depth = depth * 2
        );
        if o.children.is_empty() {
            out.push_str("/>\n");
            return;
        }
        out.push_str(">\n");
        if o.kind == ObjKind::Machine {
            let _ = writeln!(out, "<info name=\"CPUModel\" value=\"{}\"/>", t.cpu_model);
        }
        for &c in &o.children {
            object(t, c, depth + 1, out);
        }
        let _ = writeln!(out, "{:depth$}</object>", "", depth = depth * 2);
    }
    let mut out =
        String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n");
    object(t, 0, 1, &mut out);
    out.push_str("</topology>\n");
    out
}

fn description() -> impl Strategy<Value = String> {
    (1u32..4, 1u32..3, proptest::option::of(1u32..3), 1u32..3, 1u32..5, 1u32..3, 1u64..64).prop_map(
        |(packages, nodes, group, l3, cores, pus, mib)| {
            let group = group.map(|g| format!(" group(cluster):{g}")).unwrap_or_default();
            format!(
                "package:{packages} numa:{nodes}{group} l3({mib}M):{l3} l2(512K):{cores} core:1 pu:{pus}"
            )
        },
    )
}

proptest! {
    #[test]
    fn topologies_round_trip_through_hwloc_xml(desc in description()) {
        let t = Topology::synthetic("roundtrip", &desc).unwrap();
        let xml = to_hwloc_xml(&t);
        let back = parse_hwloc_xml("roundtrip", &xml).unwrap();
        prop_assert_eq!(&back, &t, "{}\n{}", desc, xml);
    }

    #[test]
    fn truncated_documents_are_errors(cut in 0usize..35_000) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hwloc/intel-xeon-e5-2680v3-2s.v2.xml");
        let xml = std::fs::read_to_string(path).unwrap();
        let complete = xml.rfind("</topology>").unwrap() + "</topology>".len();
        let end = (0..=cut.min(xml.len())).rev().find(|&i| xml.is_char_boundary(i)).unwrap();
        let result = parse_hwloc_xml("cut", &xml[..end]);
        // Never a partial machine from a partial file.
        prop_assert_eq!(result.is_ok(), end >= complete, "cut at {}", end);
    }
}
