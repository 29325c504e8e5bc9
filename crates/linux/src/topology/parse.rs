//! Parsers for the text of individual sysfs and procfs files, kept apart from the
//! file walking so they can be tested (and property-tested) on strings.

/// A cache `size` file: the kernel prints `"%uK"` (`32K`, `30720K`); other suffixes
/// and a bare byte count are accepted too, since the format is not an ABI promise.
pub(crate) fn cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1u64 << 10),
        'M' | 'm' => (&t[..t.len() - 1], 1 << 20),
        'G' | 'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// A topology id (`physical_package_id`, `core_id`, `die_id`). `-1` is how the
/// kernel says it does not know (some VMs and non-x86 firmware); that is `Ok(None)`.
pub(crate) fn topology_id(text: &str) -> Result<Option<u32>, ()> {
    match text.trim() {
        "-1" => Ok(None),
        t => t.parse::<u32>().map(Some).map_err(|_| ()),
    }
}

/// `MemTotal` in bytes from a node's `meminfo` (`Node 0 MemTotal:  5203744 kB`).
/// `None` when the line is missing or malformed.
pub(crate) fn node_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.contains("MemTotal:"))?;
    let rest = line.split_once("MemTotal:")?.1;
    let mut words = rest.split_whitespace();
    let kb: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => kb.checked_mul(1024),
        _ => None,
    }
}

/// The first `model name` in `/proc/cpuinfo`. Architectures that have no such line
/// (arm64 prints `CPU part` codes instead) get an empty model, not an error: the
/// model only labels the platform.
pub(crate) fn model_name(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "model name")
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn cache_sizes() {
        let cases = [
            ("32K\n", Some(32 << 10)),
            ("30720K", Some(30720 << 10)),
            ("5118K", Some(5118 << 10)),
            ("2M", Some(2 << 20)),
            ("1G", Some(1 << 30)),
            ("4096", Some(4096)),
            ("abc", None),
            ("K", None),
            ("", None),
            ("-1K", None),
            ("3.5M", None),
            ("99999999999999999999K", None),
            ("18014398509481984K", None), // 2^54 KiB overflows u64 bytes
        ];
        for (text, want) in cases {
            assert_eq!(cache_size(text), want, "size {text:?}");
        }
    }

    #[test]
    fn topology_ids() {
        let cases = [
            ("0\n", Ok(Some(0))),
            ("13", Ok(Some(13))),
            ("-1\n", Ok(None)),
            ("", Err(())),
            ("x", Err(())),
            ("-2", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(topology_id(text), want, "id {text:?}");
        }
    }

    #[test]
    fn node_meminfo() {
        let real = "Node 0 MemTotal:        5203744 kB\nNode 0 MemFree:         4997928 kB\n";
        assert_eq!(node_mem_total(real), Some(5_203_744 * 1024));
        assert_eq!(node_mem_total("Node 0 MemFree: 1 kB\n"), None);
        assert_eq!(node_mem_total("Node 0 MemTotal: lots kB\n"), None);
        assert_eq!(node_mem_total("Node 0 MemTotal: 12 pages\n"), None);
    }

    #[test]
    fn model_names() {
        let intel = "processor\t: 0\nmodel\t\t: 63\nmodel name\t: Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz\n";
        assert_eq!(
            model_name(intel),
            "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz"
        );
        // `model` alone must not match `model name`.
        assert_eq!(model_name("model\t\t: 63\n"), "");
        assert_eq!(model_name("processor : 0\nCPU part : 0xd0c\n"), "");
    }

    proptest! {
        #[test]
        fn kernel_sizes_round_trip(kib in 0u64..(1 << 40)) {
            prop_assert_eq!(cache_size(&format!("{kib}K\n")), Some(kib << 10));
        }

        #[test]
        fn size_parser_never_panics(s in "\\PC{0,12}") {
            let _ = cache_size(&s);
        }

        #[test]
        fn meminfo_round_trips(node in 0u32..64, kb in 0u64..(1 << 40)) {
            let text = format!("Node {node} MemTotal: {kb:>15} kB\nNode {node} MemFree: 0 kB\n");
            prop_assert_eq!(node_mem_total(&text), Some(kb * 1024));
        }
    }
}
