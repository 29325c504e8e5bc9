//! Walking `/sys/devices/system/{cpu,node}` and `/proc/cpuinfo` under a root.

use std::collections::BTreeMap;
use std::path::Path;

use coloc_model::cpuset::{Cpu, CpuSet};
use coloc_model::topology::{CacheInfo, Group, ObjKind, Topology, TopologyBuilder};

use super::cores::{core_numbers, PuIds};
use super::files::{cpu_list, numbered_entries, parsed, read, read_optional};
use super::{parse, SysfsError};

const CPU_DIR: &str = "sys/devices/system/cpu";
const NODE_DIR: &str = "sys/devices/system/node";

/// Reads the topology of the machine whose `/sys` and `/proc` are under `root`
/// (`/` for this machine, a fixture tree in tests), keeping only the CPUs in
/// `allowed` when given.
///
/// Only online CPUs are read: offline ones have no `topology` directory. The name
/// is the host name (`proc/sys/kernel/hostname`) or, failing that, the root path.
pub fn read_sysfs(root: &Path, allowed: Option<&CpuSet>) -> Result<Topology, SysfsError> {
    let online = cpu_list(&root.join(CPU_DIR).join("online"))?;
    let nodes = read_nodes(root, &online)?;
    let node_of: BTreeMap<Cpu, u32> = nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(move |c| (c, n.os_index.unwrap_or(0))))
        .collect();
    let mut pus = Vec::with_capacity(online.len());
    for cpu in online.iter() {
        pus.push(read_pu(root, cpu, node_of.get(&cpu).copied())?);
    }

    let name = match read_optional(&root.join("proc/sys/kernel/hostname"))? {
        Some(host) if !host.trim().is_empty() => host.trim().to_string(),
        _ => root.display().to_string(),
    };
    let model = parse::model_name(&read(&root.join("proc/cpuinfo"))?);
    let mut builder = TopologyBuilder::new(name).cpu_model(model);
    for (p, core) in pus.iter().zip(core_numbers(&pus)) {
        builder
            .pu(p.cpu, p.package, core)
            .map_err(|source| SysfsError::Topology {
                root: root.to_path_buf(),
                source,
            })?;
    }
    for die in dies(&pus) {
        builder.group(die);
    }
    for node in nodes {
        builder.group(node);
    }
    for cache in read_caches(root, &online)? {
        builder.group(cache);
    }
    builder
        .build(allowed)
        .map_err(|source| SysfsError::Topology {
            root: root.to_path_buf(),
            source,
        })
}

/// One CPU's package, core and die ids.
fn read_pu(root: &Path, cpu: Cpu, node: Option<u32>) -> Result<PuIds, SysfsError> {
    let dir = root.join(CPU_DIR).join(format!("cpu{cpu}/topology"));
    let id = |file: &str, required: bool| -> Result<Option<u32>, SysfsError> {
        let path = dir.join(file);
        let text = if required {
            read(&path)?
        } else {
            match read_optional(&path)? {
                Some(t) => t,
                None => return Ok(None),
            }
        };
        parsed(&path, &text, "a topology id (a number or -1)", |t| {
            parse::topology_id(t).ok()
        })
    };
    Ok(PuIds {
        cpu,
        // An unknown package (-1) means the kernel sees one undivided package.
        package: id("physical_package_id", true)?.unwrap_or(0),
        die: id("die_id", false)?,
        node,
        // An unknown core id: treat every CPU as its own core.
        core_id: id("core_id", true)?.unwrap_or(cpu),
    })
}

/// A `die` group for each die of the packages that have more than one (a die that
/// is the whole package adds nothing to the tree).
fn dies(pus: &[PuIds]) -> Vec<Group> {
    let mut by_package: BTreeMap<u32, BTreeMap<u32, CpuSet>> = BTreeMap::new();
    for p in pus {
        if let Some(die) = p.die {
            by_package
                .entry(p.package)
                .or_default()
                .entry(die)
                .or_default()
                .insert(p.cpu);
        }
    }
    by_package
        .into_values()
        .filter(|dies| dies.len() > 1)
        .flat_map(|dies| dies.into_iter())
        .map(|(die, cpus)| Group {
            name: Some("die".into()),
            ..Group::new(ObjKind::Group, Some(die), cpus)
        })
        .collect()
}

/// NUMA nodes with CPUs among `online`, with their memory. A kernel built without
/// NUMA has no `node` directory, and the machine then has no node objects.
/// Memory-only nodes (CXL, HBM without CPUs) are left out: the tree is made of CPUs.
fn read_nodes(root: &Path, online: &CpuSet) -> Result<Vec<Group>, SysfsError> {
    let dir = root.join(NODE_DIR);
    let mut out = Vec::new();
    for n in numbered_entries(&dir, "node")? {
        let cpus = cpu_list(&dir.join(format!("node{n}/cpulist")))?.intersection(online);
        if cpus.is_empty() {
            continue;
        }
        let path = dir.join(format!("node{n}/meminfo"));
        let text = read(&path)?;
        let memory = parsed(
            &path,
            &text,
            "a node meminfo with a `MemTotal: N kB` line",
            parse::node_mem_total,
        )?;
        out.push(Group {
            memory_bytes: Some(memory),
            ..Group::new(ObjKind::NumaNode, Some(n), cpus)
        });
    }
    Ok(out)
}

/// Every distinct data or unified cache seen by the online CPUs, restricted to
/// online CPUs. Each cache appears once per CPU sharing it, so they are keyed by
/// level and CPU set.
fn read_caches(root: &Path, online: &CpuSet) -> Result<Vec<Group>, SysfsError> {
    let mut caches: BTreeMap<(u8, CpuSet), CacheInfo> = BTreeMap::new();
    for cpu in online.iter() {
        let dir = root.join(CPU_DIR).join(format!("cpu{cpu}/cache"));
        for index in numbered_entries(&dir, "index")? {
            let index_dir = dir.join(format!("index{index}"));
            if let Some((cpus, info)) = read_cache(&index_dir)? {
                let cpus = cpus.intersection(online);
                if !cpus.is_empty() {
                    caches.entry((info.level, cpus)).or_insert(info);
                }
            }
        }
    }
    Ok(caches
        .into_iter()
        .map(|((_, cpus), info)| Group {
            cache: Some(info),
            ..Group::new(ObjKind::Cache, None, cpus)
        })
        .collect())
}

/// One `cache/indexK` directory: `None` for instruction caches (never shared, see
/// `coloc_model::topology`) and for caches whose level, type or size the kernel
/// hides because the firmware did not report it.
fn read_cache(dir: &Path) -> Result<Option<(CpuSet, CacheInfo)>, SysfsError> {
    let (Some(level_text), Some(kind), Some(size_text)) = (
        read_optional(&dir.join("level"))?,
        read_optional(&dir.join("type"))?,
        read_optional(&dir.join("size"))?,
    ) else {
        tracing::debug!(dir = %dir.display(), "cache without level, type or size: skipped");
        return Ok(None);
    };
    match kind.trim() {
        "Instruction" => return Ok(None),
        "Data" | "Unified" => {}
        _ => {
            return Err(SysfsError::Parse {
                path: dir.join("type"),
                value: kind.trim().to_string(),
                expected: "a cache type (Data, Instruction or Unified)",
            })
        }
    }
    let level = parsed(
        &dir.join("level"),
        &level_text,
        "a cache level (1-255)",
        |t| t.trim().parse::<u8>().ok().filter(|&l| l > 0),
    )?;
    let size_bytes = parsed(
        &dir.join("size"),
        &size_text,
        "a cache size such as 32K",
        parse::cache_size,
    )?;
    let line_path = dir.join("coherency_line_size");
    let line_bytes = match read_optional(&line_path)? {
        Some(t) => Some(parsed(&line_path, &t, "a line size in bytes", |t| {
            t.trim().parse::<u32>().ok()
        })?),
        None => None,
    };
    let cpus = cpu_list(&dir.join("shared_cpu_list"))?;
    Ok(Some((
        cpus,
        CacheInfo {
            level,
            size_bytes,
            line_bytes,
        },
    )))
}
