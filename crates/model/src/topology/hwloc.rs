//! hwloc XML topologies (`lstopo --of xml`), the format HPC users already have for
//! their servers (docs/architecture.md, Topology), so offline platforms can be described
//! without access to the machine.
//!
//! Both the hwloc 2.x format and the older 1.x one are read. Only the CPU side is
//! kept: packages, NUMA nodes with their local memory, groups and dies, data and
//! unified caches, cores and PUs; I/O objects, memory-side caches, distances and
//! info attributes (except `CPUModel`) are skipped. Objects are reduced to their
//! CPU sets and re-nested by [`TopologyBuilder`], like every other reader's, so an
//! XML file and sysfs describing the same machine give the same tree.

mod mask;
mod object;

use std::collections::{BTreeMap, BTreeSet};

pub use mask::{format_cpuset_mask, parse_cpuset_mask, MaskError};
use object::{describe, Attrs, Desc};
use quick_xml::errors::IllFormedError;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{Group, Topology, TopologyBuilder, TopologyError};
use crate::cpuset::{Cpu, CpuSet};

/// Why an hwloc XML file could not be read. Every variant that points into the
/// file carries its line number.
#[derive(Debug, thiserror::Error)]
pub enum HwlocError {
    #[error("line {line}: malformed XML")]
    Xml {
        line: usize,
        #[source]
        source: quick_xml::Error,
    },
    #[error("line {line}: {object} object: attribute `{attr}` = {value:?}: {reason}")]
    Attribute {
        line: usize,
        object: String,
        attr: String,
        value: String,
        reason: String,
    },
    #[error("line {line}: {object} object has no `{attr}` attribute")]
    MissingAttribute {
        line: usize,
        object: String,
        attr: &'static str,
    },
    #[error("line {line}: unknown object type {object:?}")]
    UnknownType { line: usize, object: String },
    #[error("line {line}: PU {cpu} is not inside a Package, but other PUs are")]
    PuOutsidePackage { line: usize, cpu: Cpu },
    #[error("not an hwloc topology: there is no <topology> element")]
    NotHwloc,
    #[error("the objects do not form a topology")]
    Topology(#[source] TopologyError),
}

/// Parses an hwloc XML document into a topology called `name`.
pub fn parse_hwloc_xml(name: &str, xml: &str) -> Result<Topology, HwlocError> {
    let raw = Collector::default().run(xml)?;
    raw.build(name)
}

/// The 1-based line of byte offset `pos`.
fn line_of(xml: &str, pos: u64) -> usize {
    Lines::default().at(xml, pos)
}

/// Line numbers of offsets met in increasing order, counting each byte once
/// (counting from the start for every element made parsing quadratic in
/// the document's size).
#[derive(Debug, Default)]
struct Lines {
    /// The last offset asked for, and the newlines before it.
    pos: usize,
    newlines: usize,
}

impl Lines {
    /// The 1-based line of byte offset `pos` (from the start again when
    /// `pos` is before the last one).
    fn at(&mut self, xml: &str, pos: u64) -> usize {
        let end = usize::try_from(pos).unwrap_or(usize::MAX).min(xml.len());
        if end < self.pos {
            *self = Lines::default();
        }
        self.newlines += xml.as_bytes()[self.pos..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.pos = end;
        self.newlines + 1
    }
}

/// The innermost package and core an element sits in (indexes into
/// [`Collector::packages`] and [`Collector::cores`]).
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    package: Option<usize>,
    core: Option<usize>,
}

#[derive(Debug)]
struct RawPu {
    cpu: Cpu,
    line: usize,
    package: Option<usize>,
    core: Option<usize>,
}

/// The flat description gathered from the document, in document order.
#[derive(Debug, Default)]
struct Collector {
    /// Open elements; non-object elements inherit their parent's frame.
    stack: Vec<Frame>,
    /// Names of the open elements, to report the first one a truncated file
    /// leaves open (quick-xml does not check at the end of input).
    open: Vec<String>,
    seen_topology: bool,
    cpu_model: Option<String>,
    packages: Vec<Option<u32>>,
    /// Each Core element's os_index.
    cores: Vec<Option<u32>>,
    pus: Vec<RawPu>,
    groups: Vec<Group>,
}

impl Collector {
    fn run(mut self, xml: &str) -> Result<Self, HwlocError> {
        let mut reader = Reader::from_str(xml);
        let mut lines = Lines::default();
        loop {
            let pos = reader.buffer_position();
            let event = reader.read_event().map_err(|source| HwlocError::Xml {
                line: line_of(xml, reader.error_position()),
                source,
            })?;
            match event {
                Event::Start(e) => {
                    let frame = self.element(&e, lines.at(xml, pos))?;
                    self.stack.push(frame);
                    self.open.push(e.name().as_ref().to_string());
                }
                Event::Empty(e) => {
                    self.element(&e, lines.at(xml, pos))?;
                }
                Event::End(_) => {
                    self.stack.pop();
                    self.open.pop();
                }
                Event::Eof => break,
                _ => {}
            }
        }
        if let Some(name) = self.open.pop() {
            return Err(HwlocError::Xml {
                line: line_of(xml, reader.buffer_position()),
                source: IllFormedError::MissingEndTag(name).into(),
            });
        }
        if !self.seen_topology {
            return Err(HwlocError::NotHwloc);
        }
        Ok(self)
    }

    /// Handles one start or empty element and returns the frame its children see.
    fn element(&mut self, e: &BytesStart<'_>, line: usize) -> Result<Frame, HwlocError> {
        let parent = self.stack.last().copied().unwrap_or_default();
        match e.name().as_ref() {
            "topology" => {
                self.seen_topology = true;
                Ok(parent)
            }
            "object" => self.object(&attrs(e, line)?, parent),
            "info" => {
                let a = attrs(e, line)?;
                let get = |k: &str| a.pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v);
                if self.cpu_model.is_none() && get("name").is_some_and(|n| n == "CPUModel") {
                    self.cpu_model = get("value").cloned();
                }
                Ok(parent)
            }
            _ => Ok(parent),
        }
    }

    fn object(&mut self, a: &Attrs, parent: Frame) -> Result<Frame, HwlocError> {
        let mut frame = parent;
        match describe(a)? {
            Desc::Ignored | Desc::Pu(None) => {}
            Desc::Package { os_index } => {
                frame.package = Some(self.packages.len());
                self.packages.push(os_index);
            }
            Desc::Core { os_index } => {
                frame.core = Some(self.cores.len());
                self.cores.push(os_index);
            }
            Desc::Pu(Some(cpu)) => self.pus.push(RawPu {
                cpu,
                line: a.line,
                package: parent.package,
                core: parent.core,
            }),
            Desc::Group(g) => self.groups.push(g),
        }
        Ok(frame)
    }

    fn build(self, name: &str) -> Result<Topology, HwlocError> {
        let package_ids = unique_or_ordinal(&self.packages);
        // Each core is a Core element, or a PU with no Core above it.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        enum CoreKey {
            Element(usize),
            Lone(Cpu),
        }
        let mut pu_keys = Vec::with_capacity(self.pus.len());
        for pu in &self.pus {
            let package = match (pu.package, self.packages.is_empty()) {
                (Some(p), _) => package_ids[p],
                (None, true) => 0,
                (None, false) => {
                    return Err(HwlocError::PuOutsidePackage {
                        line: pu.line,
                        cpu: pu.cpu,
                    })
                }
            };
            let core = match pu.core {
                Some(c) => CoreKey::Element(c),
                None => CoreKey::Lone(pu.cpu),
            };
            pu_keys.push((package, core));
        }
        // Per package, number cores by their os_index when those tell them apart,
        // otherwise 0.. in CPU order (hwloc copies the kernel's core_id, which some
        // kernels restart on every die of a package).
        let mut per_package: BTreeMap<u32, BTreeMap<CoreKey, (Cpu, Option<u32>)>> = BTreeMap::new();
        for (pu, &(package, core)) in self.pus.iter().zip(&pu_keys) {
            let os_index = match core {
                CoreKey::Element(c) => self.cores[c],
                CoreKey::Lone(_) => None,
            };
            let entry = per_package
                .entry(package)
                .or_default()
                .entry(core)
                .or_insert((pu.cpu, os_index));
            entry.0 = entry.0.min(pu.cpu);
        }
        let mut core_ids: BTreeMap<(u32, CoreKey), u32> = BTreeMap::new();
        for (package, cores) in per_package {
            let mut by_cpu: Vec<(Cpu, CoreKey, Option<u32>)> = cores
                .into_iter()
                .map(|(k, (cpu, os))| (cpu, k, os))
                .collect();
            by_cpu.sort();
            let os: Vec<Option<u32>> = by_cpu.iter().map(|c| c.2).collect();
            for ((_, key, _), id) in by_cpu.iter().zip(unique_or_ordinal(&os)) {
                core_ids.insert((package, *key), id);
            }
        }

        let mut builder = TopologyBuilder::new(name).cpu_model(self.cpu_model.unwrap_or_default());
        let mut present = CpuSet::new();
        for (pu, key) in self.pus.iter().zip(&pu_keys) {
            builder
                .pu(pu.cpu, key.0, core_ids[key])
                .map_err(HwlocError::Topology)?;
            present.insert(pu.cpu);
        }
        // Object cpusets may name PUs the file leaves out (disallowed or offline
        // ones in some exports); the tree holds only the PUs that are there.
        for g in self.groups {
            let cpus = g.cpus.intersection(&present);
            builder.group(Group { cpus, ..g });
        }
        builder.build(None).map_err(HwlocError::Topology)
    }
}

/// The given indexes if all are present and distinct, else 0, 1, 2, ... in order.
fn unique_or_ordinal(ids: &[Option<u32>]) -> Vec<u32> {
    let distinct: BTreeSet<u32> = ids.iter().flatten().copied().collect();
    if ids.iter().all(Option::is_some) && distinct.len() == ids.len() {
        ids.iter().flatten().copied().collect()
    } else {
        (0..ids.len() as u32).collect()
    }
}

/// The element's attributes, unescaped, with its type for error messages.
fn attrs(e: &BytesStart<'_>, line: usize) -> Result<Attrs, HwlocError> {
    let mut pairs = Vec::new();
    for attr in e.attributes() {
        let attr = attr.map_err(|err| HwlocError::Xml {
            line,
            source: err.into(),
        })?;
        let value = attr
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|source| HwlocError::Xml { line, source })?;
        pairs.push((attr.key.as_ref().to_string(), value.into_owned()));
    }
    let object = pairs
        .iter()
        .find(|(k, _)| k == "type")
        .map(|(_, v)| v.clone());
    let is_object = e.name().as_ref() == "object";
    match object {
        Some(object) => Ok(Attrs {
            line,
            object,
            pairs,
        }),
        None if is_object => Err(HwlocError::MissingAttribute {
            line,
            object: "an".into(),
            attr: "type",
        }),
        None => Ok(Attrs {
            line,
            object: e.name().as_ref().to_string(),
            pairs,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parsing an export of 1,024 PUs took 44 s: each element's line was
    /// counted from the document's start. Counted incrementally, each line
    /// is the same as counted from the start, for offsets in any order.
    #[test]
    fn lines_counted_as_they_come_are_those_counted_from_the_start() {
        let xml = "a\nbb\n\nccc\nd";
        let naive = |pos: usize| {
            xml.as_bytes()[..pos]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        };
        let mut lines = Lines::default();
        for pos in [0, 1, 2, 5, 5, 6, 11, 3, 12, 99] {
            assert_eq!(
                lines.at(xml, pos as u64),
                naive(pos.min(xml.len())),
                "offset {pos}"
            );
        }
    }
}
