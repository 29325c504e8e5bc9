//! What one `<object>` element describes, from its attributes.
//!
//! hwloc 2.x names caches by level (`L3Cache`, `L1iCache`) and hangs NUMA nodes
//! off their parent as memory children; hwloc 1.x writes `type="Cache"` with a
//! `depth` attribute and nests everything under `NUMANode` like any other parent.
//! Both become the same flat description here; nesting is redone by CPU sets.

use super::mask::parse_cpuset_mask;
use super::HwlocError;
use crate::cpuset::{Cpu, CpuSet};
use crate::topology::{CacheInfo, Group, ObjKind};

/// One object, reduced to what the coloc tree keeps.
#[derive(Debug)]
pub(super) enum Desc {
    /// Machine, System, I/O objects, memory-side caches, Misc, instruction caches.
    Ignored,
    Package {
        os_index: Option<u32>,
    },
    Core {
        os_index: Option<u32>,
    },
    /// A PU; `None` when its cpuset leaves it out (offline or disallowed in 1.x).
    Pu(Option<Cpu>),
    Group(Group),
}

/// The attributes of one element, with the line for error messages.
pub(super) struct Attrs {
    pub line: usize,
    pub object: String,
    pub pairs: Vec<(String, String)>,
}

impl Attrs {
    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn bad(&self, attr: &str, value: &str, reason: impl Into<String>) -> HwlocError {
        HwlocError::Attribute {
            line: self.line,
            object: self.object.clone(),
            attr: attr.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    fn required(&self, attr: &'static str) -> Result<&str, HwlocError> {
        self.get(attr).ok_or_else(|| HwlocError::MissingAttribute {
            line: self.line,
            object: self.object.clone(),
            attr,
        })
    }

    fn number<T: std::str::FromStr>(&self, attr: &str) -> Result<Option<T>, HwlocError> {
        self.get(attr)
            .map(|v| {
                v.trim()
                    .parse::<T>()
                    .map_err(|_| self.bad(attr, v, "not a non-negative integer"))
            })
            .transpose()
    }

    fn cpuset(&self) -> Result<CpuSet, HwlocError> {
        let v = self.required("cpuset")?;
        parse_cpuset_mask(v).map_err(|e| self.bad("cpuset", v, e.to_string()))
    }
}

/// Classifies an `<object>` element.
pub(super) fn describe(a: &Attrs) -> Result<Desc, HwlocError> {
    let os_index = a.number::<u32>("os_index")?;
    let kind = a.object.as_str();
    Ok(match kind {
        "Machine" | "System" | "Misc" | "MemCache" | "Bridge" | "PCIDev" | "OSDev" => Desc::Ignored,
        "L1iCache" | "L2iCache" | "L3iCache" => Desc::Ignored,
        "Package" | "Socket" => Desc::Package { os_index },
        "Core" => Desc::Core { os_index },
        "PU" => {
            let cpu = os_index.ok_or_else(|| HwlocError::MissingAttribute {
                line: a.line,
                object: a.object.clone(),
                attr: "os_index",
            })?;
            let present = a.get("cpuset").is_none() || a.cpuset()?.contains(cpu);
            Desc::Pu(present.then_some(cpu))
        }
        "NUMANode" => Desc::Group(Group {
            memory_bytes: a.number::<u64>("local_memory")?,
            ..Group::new(ObjKind::NumaNode, os_index, a.cpuset()?)
        }),
        "Group" | "Die" => {
            let name = match (kind, a.get("subtype")) {
                ("Die", _) => "die".to_string(),
                (_, Some(sub)) => sub.to_string(),
                (_, None) => "group".to_string(),
            };
            Desc::Group(Group {
                name: Some(name),
                ..Group::new(ObjKind::Group, os_index, a.cpuset()?)
            })
        }
        _ => match cache_level(a)? {
            None => Desc::Ignored,
            Some(level) => {
                let size: u64 =
                    a.number("cache_size")?
                        .ok_or_else(|| HwlocError::MissingAttribute {
                            line: a.line,
                            object: a.object.clone(),
                            attr: "cache_size",
                        })?;
                Desc::Group(Group {
                    cache: Some(CacheInfo {
                        level,
                        size_bytes: size,
                        line_bytes: a.number("cache_linesize")?.filter(|&l| l > 0),
                    }),
                    ..Group::new(ObjKind::Cache, None, a.cpuset()?)
                })
            }
        },
    })
}

/// The level of a data or unified cache object, `None` for an instruction cache,
/// an error for a type that is no cache either.
fn cache_level(a: &Attrs) -> Result<Option<u8>, HwlocError> {
    let kind = a.object.as_str();
    let level_from_name = kind
        .strip_prefix('L')
        .and_then(|rest| rest.strip_suffix("Cache"))
        .and_then(|digits| digits.parse::<u8>().ok());
    let level = match (kind, level_from_name) {
        (_, Some(level)) => level,
        ("Cache", None) => a.required("depth").and_then(|v| {
            v.trim()
                .parse::<u8>()
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| a.bad("depth", v, "not a cache level (1-255)"))
        })?,
        _ => {
            return Err(HwlocError::UnknownType {
                line: a.line,
                object: a.object.clone(),
            })
        }
    };
    // cache_type: 0 unified, 1 data, 2 instruction (hwloc_obj_cache_type_e).
    match a.number::<u8>("cache_type")? {
        None | Some(0) | Some(1) => Ok(Some(level)),
        Some(2) => Ok(None),
        Some(t) => Err(a.bad(
            "cache_type",
            &t.to_string(),
            "not a cache type (0 unified, 1 data, 2 instruction)",
        )),
    }
}
