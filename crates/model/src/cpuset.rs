//! Sets of logical CPU numbers, with the kernel's list format (`0-3,8,10-11`).
//!
//! The list format is what `/sys/devices/system/cpu/online`, `Cpus_allowed_list` in
//! `/proc/<pid>/status` and cache `shared_cpu_list` files use, so one parser serves
//! every reader and the output of coloc can be pasted into `taskset -c`.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A logical CPU number as the kernel numbers them (`cpuN` in sysfs).
pub type Cpu = u32;

/// The largest CPU number coloc accepts in a list; guards against `0-4294967295`
/// allocating the world. Linux's own `NR_CPUS` maximum is 8192.
pub const MAX_CPU: Cpu = 8191;

/// An ordered set of CPUs.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(BTreeSet<Cpu>);

/// Why a CPU list did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("`{0}` is not a CPU number")]
    NotANumber(String),
    #[error("range `{0}` runs backwards")]
    Backwards(String),
    #[error("CPU {0} is above the largest supported CPU number {MAX_CPU}")]
    TooLarge(Cpu),
}

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn single(cpu: Cpu) -> Self {
        Self(BTreeSet::from([cpu]))
    }

    /// Parses the kernel list format. Surrounding white space and an empty string
    /// (an empty set) are accepted, as sysfs files end with a newline.
    pub fn parse_list(s: &str) -> Result<Self, CpuListError> {
        let mut set = BTreeSet::new();
        for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_cpu(a)?, parse_cpu(b)?),
                None => {
                    let c = parse_cpu(part)?;
                    (c, c)
                }
            };
            if hi < lo {
                return Err(CpuListError::Backwards(part.to_string()));
            }
            set.extend(lo..=hi);
        }
        Ok(Self(set))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: Cpu) -> bool {
        self.0.contains(&cpu)
    }

    pub fn insert(&mut self, cpu: Cpu) -> bool {
        self.0.insert(cpu)
    }

    pub fn remove(&mut self, cpu: Cpu) -> bool {
        self.0.remove(&cpu)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Cpu> + ExactSizeIterator + '_ {
        self.0.iter().copied()
    }

    pub fn first(&self) -> Option<Cpu> {
        self.0.first().copied()
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.union(&other.0).copied().collect())
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.intersection(&other.0).copied().collect())
    }

    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.difference(&other.0).copied().collect())
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    pub fn is_disjoint(&self, other: &CpuSet) -> bool {
        self.0.is_disjoint(&other.0)
    }

    /// The kernel list format, ranges collapsed: `{0,1,2,3,8}` → `0-3,8`.
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut iter = self.0.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap_or(end);
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

fn parse_cpu(s: &str) -> Result<Cpu, CpuListError> {
    let cpu: Cpu = s
        .trim()
        .parse()
        .map_err(|_| CpuListError::NotANumber(s.trim().to_string()))?;
    if cpu > MAX_CPU {
        return Err(CpuListError::TooLarge(cpu));
    }
    Ok(cpu)
}

impl FromIterator<Cpu> for CpuSet {
    fn from_iter<I: IntoIterator<Item = Cpu>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl Extend<Cpu> for CpuSet {
    fn extend<I: IntoIterator<Item = Cpu>>(&mut self, iter: I) {
        self.0.extend(iter)
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_list(s)
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list())
    }
}

/// Serialized as the list string, so traces and JSON output read like sysfs.
impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn parses_kernel_lists() {
        let cases = [
            ("", vec![]),
            ("0\n", vec![0]),
            ("0-3,8", vec![0, 1, 2, 3, 8]),
            (" 2 , 0-1 ", vec![0, 1, 2]),
            ("5-5", vec![5]),
        ];
        for (text, want) in cases {
            let set = CpuSet::parse_list(text).unwrap();
            assert_eq!(set.iter().collect::<Vec<_>>(), want, "input {text:?}");
        }
    }

    #[test]
    fn rejects_bad_lists() {
        assert_eq!(
            CpuSet::parse_list("3-1"),
            Err(CpuListError::Backwards("3-1".into()))
        );
        assert_eq!(
            CpuSet::parse_list("a"),
            Err(CpuListError::NotANumber("a".into()))
        );
        assert_eq!(
            CpuSet::parse_list("0-99999"),
            Err(CpuListError::TooLarge(99999))
        );
    }

    proptest! {
        #[test]
        fn list_round_trips(cpus in proptest::collection::btree_set(0u32..300, 0..64)) {
            let set: CpuSet = cpus.iter().copied().collect();
            let back = CpuSet::parse_list(&set.to_list()).unwrap();
            prop_assert_eq!(back, set);
        }

        #[test]
        fn parser_never_panics(s in "[0-9,\\- ]{0,20}") {
            let _ = CpuSet::parse_list(&s);
        }
    }
}
