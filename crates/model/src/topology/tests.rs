use super::*;

fn kinds(t: &Topology) -> Vec<(String, usize)> {
    t.shared_resources()
        .iter()
        .map(|r| (r.kind.label(), r.instances.len()))
        .collect()
}

#[test]
fn synthetic_harpertown_nests_fsb_over_l2() {
    let t = Topology::synthetic("harpertown", "package:2 group(FSB):1 l2(6M):2 core:2").unwrap();
    assert_eq!(t.cpus().len(), 8);
    assert_eq!(t.cores().len(), 8);
    // L2 pairs innermost, then the FSB (same CPUs as the socket).
    assert_eq!(kinds(&t), vec![("L2".into(), 4), ("FSB".into(), 2)]);
    let fsb = &t.shared_resources()[1];
    assert_eq!(fsb.same_as, vec![ResourceKind::Package]);
    assert_eq!(fsb.instances[1].to_list(), "4-7");
}

#[test]
fn synthetic_smt_siblings_share_a_core() {
    let t = Topology::synthetic("x", "package:2 l3(8M):1 core:2 pu:2").unwrap();
    assert_eq!(t.cpus().len(), 8);
    assert_eq!(t.core_of(1).unwrap().to_list(), "0-1");
    // A core is shared by PUs, not by cores, so it is not a shared resource.
    assert_eq!(kinds(&t), vec![("L3".into(), 2)]);
}

#[test]
fn restricting_drops_empty_objects() {
    let mut b = TopologyBuilder::new("r");
    for cpu in 0..4 {
        b.pu(cpu, cpu / 2, cpu % 2).unwrap();
    }
    b.group(Group::cache(3, 1 << 20, CpuSet::parse_list("0-1").unwrap()));
    b.group(Group::cache(3, 1 << 20, CpuSet::parse_list("2-3").unwrap()));
    let t = b.build(Some(&CpuSet::parse_list("0-1").unwrap())).unwrap();
    assert_eq!(t.cpus().to_list(), "0-1");
    assert_eq!(t.objects_of(ObjKind::Package).count(), 1);
    assert_eq!(t.objects_of(ObjKind::Cache).count(), 1);
    assert_eq!(
        b.build(Some(&CpuSet::parse_list("9").unwrap())),
        Err(TopologyError::NoCpus)
    );
}

#[test]
fn duplicate_and_unknown_cpus_are_errors() {
    let mut b = TopologyBuilder::new("bad");
    b.pu(0, 0, 0).unwrap();
    assert_eq!(b.pu(0, 0, 1).unwrap_err(), TopologyError::DuplicateCpu(0));
    b.group(Group::cache(2, 1, CpuSet::parse_list("0-1").unwrap()));
    assert!(matches!(
        b.build(None),
        Err(TopologyError::UnknownCpus { .. })
    ));
}

#[test]
fn tree_renders_and_hash_ignores_name() {
    let a = Topology::synthetic("a", "package:1 l3(4M):1 core:2").unwrap();
    let b = Topology::synthetic("b", "package:1 l3(4M):1 core:2").unwrap();
    let c = Topology::synthetic("c", "package:1 l3(8M):1 core:2").unwrap();
    assert_eq!(a.shape_hash(), b.shape_hash());
    assert_ne!(a.shape_hash(), c.shape_hash());
    let tree = a.render_tree();
    assert!(tree.contains("L3 (4 MiB)  cpus 0-1"), "{tree}");
    assert!(tree.contains("    Core#1  cpus 1"), "{tree}");
}

#[test]
fn synthetic_errors_name_the_item() {
    assert_eq!(
        Topology::synthetic("x", "package:2"),
        Err(SyntheticError::NoCore)
    );
    assert_eq!(
        Topology::synthetic("x", "l4(1M):1 core:2"),
        Err(SyntheticError::Level("l4(1M)".into()))
    );
    assert_eq!(
        Topology::synthetic("x", "core:0"),
        Err(SyntheticError::Item("core:0".into()))
    );
}
