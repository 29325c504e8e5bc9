//! Sets of logical CPU numbers, with the kernel's list format (`0-3,8,10-11`).
//!
//! The list format is what `/sys/devices/system/cpu/online`, `Cpus_allowed_list` in
//! `/proc/<pid>/status` and cache `shared_cpu_list` files use, so one parser serves
//! every reader and the output of coloc can be pasted into `taskset -c`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

/// A logical CPU number as the kernel numbers them (`cpuN` in sysfs).
pub type Cpu = u32;

/// The largest CPU number coloc accepts in a list; guards against `0-4294967295`
/// allocating the world. Linux's own `NR_CPUS` maximum is 8192.
pub const MAX_CPU: Cpu = 8191;

/// Bits per word of a [`CpuSet`].
const WORD: u32 = u64::BITS;

/// An ordered set of CPUs: a bitset, one bit a CPU, in words of 64 CPUs;
/// the first 128 CPUs without allocating (every built-in platform of the
/// simulator has at most 72), so the policies' and the Manager's set
/// operations, taken per thread at every epoch, cost a few word operations
/// (docs/simulator.md, Speed).
///
/// It behaves as the ordered set of its CPU numbers did when it was a
/// `BTreeSet<Cpu>`: it iterates in ascending order, orders two sets by
/// their elements lexicographically and hashes the same bytes, so no order
/// or hash anything observes changed.
#[derive(Clone, Default, Eq)]
pub struct CpuSet {
    /// Word `w` holds CPUs `64w ..= 64w + 63`, CPU `c` at bit `c % 64`; never
    /// a zero word last, so that equal sets have equal words.
    words: SmallVec<[u64; 2]>,
}

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
        let mut set = Self::new();
        set.insert(cpu);
        set
    }

    /// Parses the kernel list format. Surrounding white space and an empty string
    /// (an empty set) are accepted, as sysfs files end with a newline.
    pub fn parse_list(s: &str) -> Result<Self, CpuListError> {
        let mut set = Self::new();
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
        Ok(set)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn contains(&self, cpu: Cpu) -> bool {
        let (w, bit) = place(cpu);
        self.words.get(w).is_some_and(|x| x & bit != 0)
    }

    pub fn insert(&mut self, cpu: Cpu) -> bool {
        let (w, bit) = place(cpu);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let new = self.words[w] & bit == 0;
        self.words[w] |= bit;
        new
    }

    pub fn remove(&mut self, cpu: Cpu) -> bool {
        let (w, bit) = place(cpu);
        let Some(x) = self.words.get_mut(w) else {
            return false;
        };
        let had = *x & bit != 0;
        *x &= !bit;
        self.trim();
        had
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Cpu> + ExactSizeIterator + '_ {
        Iter {
            words: &self.words,
            lo: 0,
            hi: self.words.len() as u64 * u64::from(WORD),
            left: self.len(),
        }
    }

    pub fn first(&self) -> Option<Cpu> {
        self.iter().next()
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut out = long.clone();
        for (o, s) in out.words.iter_mut().zip(&short.words) {
            *o |= s;
        }
        out
    }

    /// Adds every CPU of `other`: [`CpuSet::union`] in place, without a new
    /// set per step when many sets are folded into one.
    pub fn union_with(&mut self, other: &CpuSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (o, s) in self.words.iter_mut().zip(&other.words) {
            *o |= s;
        }
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let (a, b) = (&self.words[..], &other.words[..]);
        let used = (0..a.len().min(b.len()))
            .rev()
            .find(|&w| a[w] & b[w] != 0)
            .map_or(0, |w| w + 1);
        Self {
            words: (0..used).map(|w| a[w] & b[w]).collect(),
        }
    }

    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let a = &self.words[..];
        let used = (0..a.len())
            .rev()
            .find(|&w| a[w] & !other.word(w) != 0)
            .map_or(0, |w| w + 1);
        Self {
            words: (0..used).map(|w| a[w] & !other.word(w)).collect(),
        }
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(w, a)| a & !other.word(w) == 0)
    }

    pub fn is_disjoint(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).all(|(a, b)| a & b == 0)
    }

    /// The kernel list format, ranges collapsed: `{0,1,2,3,8}` → `0-3,8`.
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut iter = self.iter().peekable();
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

    /// Word `w`, zero past the last.
    fn word(&self, w: usize) -> u64 {
        self.words.get(w).copied().unwrap_or(0)
    }

    /// Drops the zero words at the end.
    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

/// CPU `cpu`'s word and its bit there.
fn place(cpu: Cpu) -> (usize, u64) {
    ((cpu / WORD) as usize, 1 << (cpu % WORD))
}

/// A [`CpuSet`]'s CPUs in ascending order: the bit positions in `lo..hi`,
/// `left` of them set.
struct Iter<'a> {
    words: &'a [u64],
    lo: u64,
    hi: u64,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = Cpu;

    fn next(&mut self) -> Option<Cpu> {
        if self.left == 0 {
            return None;
        }
        let word = u64::from(WORD);
        let mut w = (self.lo / word) as usize;
        // Bits below `lo` in its word are gone; `left` > 0 means a set bit
        // remains below `hi`.
        let mut bits = self.words[w] & (!0u64 << (self.lo % word));
        while bits == 0 {
            w += 1;
            bits = self.words[w];
        }
        let cpu = w as u64 * word + u64::from(bits.trailing_zeros());
        self.lo = cpu + 1;
        self.left -= 1;
        Some(cpu as Cpu)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Cpu> {
        if self.left == 0 {
            return None;
        }
        let word = u64::from(WORD);
        let top = self.hi - 1;
        let mut w = (top / word) as usize;
        let mut bits = self.words[w] & (!0u64 >> (word - 1 - top % word));
        while bits == 0 {
            w -= 1;
            bits = self.words[w];
        }
        let cpu = w as u64 * word + u64::from(WORD - 1 - bits.leading_zeros());
        self.hi = cpu;
        self.left -= 1;
        Some(cpu as Cpu)
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// The order of the sorted CPU lists, compared element by element (that of
/// `BTreeSet`): at the lowest CPU in one set only, the set holding it is
/// the smaller one if the other goes on past that CPU, else the other is a
/// prefix of it and smaller.
impl Ord for CpuSet {
    fn cmp(&self, other: &Self) -> Ordering {
        let words = self.words.len().max(other.words.len());
        for w in 0..words {
            let (a, b) = (self.word(w), other.word(w));
            let differ = a ^ b;
            if differ == 0 {
                continue;
            }
            let bit = differ & differ.wrapping_neg();
            let above = !(bit | (bit - 1));
            let (holder_smaller, rest) = if a & bit != 0 {
                (Ordering::Less, other)
            } else {
                (Ordering::Greater, self)
            };
            let rest_goes_on = rest.word(w) & above != 0 || rest.words.len() > w + 1;
            return if rest_goes_on {
                holder_smaller
            } else {
                holder_smaller.reverse()
            };
        }
        Ordering::Equal
    }
}

/// Equal sets have equal words (no zero word last), compared word by word
/// in line rather than as a slice, which calls the C library's `memcmp`:
/// sets of the built-in platforms have one or two words, and a policy
/// comparing a whole topology's sets at every decision paid a library call
/// per set (`coloc_policy`'s `per_topology.rs`; docs/simulator.md, Speed).
impl PartialEq for CpuSet {
    fn eq(&self, other: &Self) -> bool {
        self.words.len() == other.words.len()
            && self.words.iter().zip(&other.words).all(|(a, b)| a == b)
    }
}

impl PartialOrd for CpuSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The bytes `BTreeSet<Cpu>` hashes: the length, then each CPU in order.
impl Hash for CpuSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for cpu in self.iter() {
            cpu.hash(state);
        }
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
        let mut set = Self::new();
        set.extend(iter);
        set
    }
}

impl Extend<Cpu> for CpuSet {
    fn extend<I: IntoIterator<Item = Cpu>>(&mut self, iter: I) {
        for cpu in iter {
            self.insert(cpu);
        }
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
    use std::collections::BTreeSet;
    use std::hash::DefaultHasher;

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

        /// The bitset answers as the `BTreeSet<Cpu>` it replaced: the same
        /// elements in the same order from either end, the same set
        /// operations, the same order between two sets and the same hash.
        #[test]
        fn behaves_as_the_ordered_set_it_replaced(
            a in proptest::collection::btree_set(prop_oneof![0u32..8, 0u32..200], 0..24),
            b in proptest::collection::btree_set(prop_oneof![0u32..8, 0u32..200], 0..24),
            ends in proptest::collection::vec(any::<bool>(), 0..30),
            probe in 0u32..210,
        ) {
            let (x, y): (CpuSet, CpuSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            let cpus = |s: &BTreeSet<Cpu>| s.iter().copied().collect::<Vec<_>>();
            prop_assert_eq!(x.iter().collect::<Vec<_>>(), cpus(&a));
            prop_assert_eq!(x.iter().rev().collect::<Vec<_>>(), a.iter().rev().copied().collect::<Vec<_>>());
            // Taking from both ends, as a BTreeSet's iterator does.
            let (mut mine, mut theirs) = (x.iter(), a.iter().copied());
            for back in ends {
                prop_assert_eq!(mine.len(), theirs.len());
                let (m, t) = if back { (mine.next_back(), theirs.next_back()) } else { (mine.next(), theirs.next()) };
                prop_assert_eq!(m, t);
            }
            prop_assert_eq!(x.len(), a.len());
            prop_assert_eq!(x.is_empty(), a.is_empty());
            prop_assert_eq!(x.first(), a.first().copied());
            prop_assert_eq!(x.contains(probe), a.contains(&probe));
            prop_assert_eq!(x.union(&y).iter().collect::<Vec<_>>(), cpus(&(&a | &b)));
            prop_assert_eq!(x.intersection(&y).iter().collect::<Vec<_>>(), cpus(&(&a & &b)));
            prop_assert_eq!(x.difference(&y).iter().collect::<Vec<_>>(), cpus(&(&a - &b)));
            prop_assert_eq!(x.is_subset(&y), a.is_subset(&b));
            prop_assert_eq!(x.is_disjoint(&y), a.is_disjoint(&b));
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
            // Equal sets are equal however they were built (no zero words
            // left at the end).
            prop_assert_eq!(x.intersection(&y), y.intersection(&x));
            prop_assert_eq!(x.union(&y).difference(&y), x.difference(&y));
            let mut folded = x.clone();
            folded.union_with(&y);
            prop_assert_eq!(&folded, &x.union(&y));
            prop_assert_eq!(x.intersection(&y).difference(&x), CpuSet::new());
            let hash = |h: &dyn Fn(&mut DefaultHasher)| {
                let mut s = DefaultHasher::new();
                h(&mut s);
                s.finish()
            };
            prop_assert_eq!(hash(&|s| x.hash(s)), hash(&|s| a.hash(s)));
            let (mut m, mut t) = (x.clone(), a.clone());
            prop_assert_eq!(m.insert(probe), t.insert(probe));
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), cpus(&t));
            prop_assert_eq!(m.remove(probe), t.remove(&probe));
            prop_assert_eq!(m.remove(probe), t.remove(&probe));
            prop_assert_eq!(&m, &x.difference(&CpuSet::single(probe)));
        }

        #[test]
        fn parser_never_panics(s in "[0-9,\\- ]{0,20}") {
            let _ = CpuSet::parse_list(&s);
        }
    }
}
