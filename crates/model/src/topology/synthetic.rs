//! Synthetic topologies from a one-line description, for tests and the simulator's
//! built-in platforms (in the spirit of hwloc's `--input "pack:2 core:4 pu:2"` and
//! scx's `make_test_topo`).
//!
//! Grammar: space-separated `level:count` items, outermost first, ending with `core`
//! and optionally `pu`. Levels: `package`, `numa`, `group(NAME)`, `l3(SIZE)`,
//! `l2(SIZE)`, `core`, `pu`. SIZE is a number with an optional `K`/`M`/`G` suffix
//! (binary units). Examples: `package:2 l3(12M):1 core:6` (Westmere),
//! `package:2 group(FSB):1 l2(6M):2 core:2` (Harpertown).
//! CPUs are numbered depth-first, so SMT siblings get adjacent numbers.

use super::{Group, ObjKind, Topology, TopologyBuilder};
use crate::cpuset::CpuSet;

/// Why a synthetic description did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntheticError {
    #[error("item `{0}` is not `level:count`")]
    Item(String),
    #[error("unknown level `{0}` (expected package, numa, group(NAME), l1(SIZE), l2(SIZE), l3(SIZE), core, pu)")]
    Level(String),
    #[error("bad size `{0}` (expected a number with optional K, M or G)")]
    Size(String),
    #[error("the description must contain `core:N`")]
    NoCore,
    #[error("`{0}` must come after `core`")]
    AfterCore(String),
}

#[derive(Clone, Debug)]
enum Level {
    Package,
    Numa,
    Group(String),
    Cache(u8, u64),
    Core,
    Pu,
}

fn parse_size(s: &str) -> Result<u64, SyntheticError> {
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| SyntheticError::Size(s.to_string()))
}

fn parse_level(s: &str) -> Result<Level, SyntheticError> {
    let (name, arg) = match s.split_once('(') {
        Some((n, rest)) => (n, rest.strip_suffix(')')),
        None => (s, None),
    };
    Ok(match (name.to_ascii_lowercase().as_str(), arg) {
        ("package" | "pack" | "socket", None) => Level::Package,
        ("numa" | "node", None) => Level::Numa,
        ("group", Some(a)) => Level::Group(a.to_string()),
        ("l1", Some(a)) => Level::Cache(1, parse_size(a)?),
        ("l2", Some(a)) => Level::Cache(2, parse_size(a)?),
        ("l3", Some(a)) => Level::Cache(3, parse_size(a)?),
        ("core", None) => Level::Core,
        ("pu", None) => Level::Pu,
        _ => return Err(SyntheticError::Level(s.to_string())),
    })
}

impl Topology {
    /// Builds a topology from a synthetic description (see the module docs).
    pub fn synthetic(name: &str, description: &str) -> Result<Topology, SyntheticError> {
        let mut levels = Vec::new();
        for item in description.split_whitespace() {
            let (l, n) = item
                .rsplit_once(':')
                .ok_or_else(|| SyntheticError::Item(item.to_string()))?;
            let n: u32 = n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| SyntheticError::Item(item.to_string()))?;
            levels.push((parse_level(l)?, n));
        }
        let core_at = levels
            .iter()
            .position(|(l, _)| matches!(l, Level::Core))
            .ok_or(SyntheticError::NoCore)?;
        let pus_per_core = match &levels[core_at + 1..] {
            [] => 1,
            [(Level::Pu, n)] => *n,
            [(other, _), ..] => return Err(SyntheticError::AfterCore(format!("{other:?}"))),
        };
        let outer = &levels[..core_at];
        let cores_per_leaf = levels[core_at].1;

        let mut b = TopologyBuilder::new(name).cpu_model(format!("synthetic {description}"));
        let leaves: u32 = outer.iter().map(|(_, n)| n).product();
        let pus_per_leaf = cores_per_leaf * pus_per_core;
        let total = leaves * pus_per_leaf;
        // Objects per outer level: each instance covers a contiguous CPU range.
        let mut span = total;
        let mut package_span = total;
        for (level, n) in outer {
            span /= n;
            let count = total / span;
            for i in 0..count {
                let cpus: CpuSet = (i * span..(i + 1) * span).collect();
                let g = match level {
                    Level::Package => {
                        package_span = span;
                        Group::new(ObjKind::Package, Some(i), cpus)
                    }
                    Level::Numa => Group::new(ObjKind::NumaNode, Some(i), cpus),
                    Level::Group(name) => Group {
                        name: Some(name.clone()),
                        ..Group::new(ObjKind::Group, Some(i), cpus)
                    },
                    Level::Cache(level, size) => Group::cache(*level, *size, cpus),
                    Level::Core | Level::Pu => unreachable!("only levels above core"),
                };
                b.group(g);
            }
        }
        for cpu in 0..total {
            let package = cpu / package_span;
            let core = (cpu % package_span) / pus_per_core;
            // Unique CPUs by construction, so `pu` cannot fail.
            let _ = b.pu(cpu, package, core);
        }
        Ok(b.build(None)
            .expect("a synthetic description always has CPUs"))
    }
}
