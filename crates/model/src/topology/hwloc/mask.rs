//! hwloc's bitmap strings: comma-separated 32-bit hex words, most significant
//! first (`0x000000ff,0xffffffff` is CPUs 0-39).

use crate::cpuset::{Cpu, CpuSet, MAX_CPU};

/// Why a bitmap string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaskError {
    #[error("the bitmap is empty")]
    Empty,
    #[error("`{0}` is not a 32-bit hex word such as 0x000000ff")]
    Word(String),
    #[error("the bitmap is infinite (`0xf...f`), which no object's cpuset can be")]
    Infinite,
    #[error("CPU {0} is above the largest supported CPU number {MAX_CPU}")]
    TooLarge(u64),
}

/// Parses an hwloc bitmap (`cpuset="0x00000003"`) into the CPUs it holds.
pub fn parse_cpuset_mask(text: &str) -> Result<CpuSet, MaskError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(MaskError::Empty);
    }
    if text.starts_with("0xf...f") {
        return Err(MaskError::Infinite);
    }
    let words: Vec<&str> = text.split(',').collect();
    let mut set = CpuSet::new();
    for (i, word) in words.iter().rev().enumerate() {
        let hex = word
            .trim()
            .strip_prefix("0x")
            .filter(|h| (1..=8).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| MaskError::Word(word.trim().to_string()))?;
        let bits = u32::from_str_radix(hex, 16).map_err(|_| MaskError::Word(word.to_string()))?;
        for bit in (0..32u64).filter(|b| bits & (1 << b) != 0) {
            let cpu = 32 * i as u64 + bit;
            if cpu > u64::from(MAX_CPU) {
                return Err(MaskError::TooLarge(cpu));
            }
            set.insert(cpu as Cpu);
        }
    }
    Ok(set)
}

/// Writes `set` the way hwloc does: `0x0` for no CPUs, otherwise 8-digit words
/// from the highest non-zero one down.
pub fn format_cpuset_mask(set: &CpuSet) -> String {
    let Some(max) = set.iter().next_back() else {
        return "0x0".into();
    };
    let mut words = vec![0u32; max as usize / 32 + 1];
    for cpu in set.iter() {
        words[cpu as usize / 32] |= 1 << (cpu % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("0x{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn parses_masks() {
        let cases = [
            ("0x00000003", Ok("0-1")),
            ("0x0", Ok("")),
            ("0x00000000", Ok("")),
            ("0x000000ff,0xffffffff", Ok("0-39")),
            ("0x0000000f,0xff000fff", Ok("0-11,24-35")),
            ("0x1,0x0,0x0", Ok("64")),
            (" 0x80000000\n", Ok("31")),
            ("", Err(MaskError::Empty)),
            ("0xf...f,0x0", Err(MaskError::Infinite)),
            ("3", Err(MaskError::Word("3".into()))),
            ("0x", Err(MaskError::Word("0x".into()))),
            ("0x1ffffffff", Err(MaskError::Word("0x1ffffffff".into()))),
            ("0xzz", Err(MaskError::Word("0xzz".into()))),
            ("0x1,,0x1", Err(MaskError::Word("".into()))),
        ];
        for (text, want) in cases {
            let want = want.map(|l| CpuSet::parse_list(l).unwrap());
            assert_eq!(parse_cpuset_mask(text), want, "mask {text:?}");
        }
        let huge = format!("0x1{}", ",0x0".repeat(256));
        assert_eq!(parse_cpuset_mask(&huge), Err(MaskError::TooLarge(8192)));
    }

    #[test]
    fn formats_like_hwloc() {
        let cases = [
            ("", "0x0"),
            ("0-1", "0x00000003"),
            ("0-11,24-35", "0x0000000f,0xff000fff"),
            ("32", "0x00000001,0x00000000"),
        ];
        for (list, want) in cases {
            assert_eq!(format_cpuset_mask(&CpuSet::parse_list(list).unwrap()), want);
        }
    }

    proptest! {
        #[test]
        fn mask_round_trips(cpus in proptest::collection::btree_set(0u32..=MAX_CPU, 0..64)) {
            let set: CpuSet = cpus.into_iter().collect();
            prop_assert_eq!(parse_cpuset_mask(&format_cpuset_mask(&set)), Ok(set));
        }

        #[test]
        fn mask_parser_never_panics(s in "(0x[0-9a-fA-Fz]{0,9},?){0,4}") {
            let _ = parse_cpuset_mask(&s);
        }
    }
}
