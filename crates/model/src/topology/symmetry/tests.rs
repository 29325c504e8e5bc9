//! Counting, enumeration and canonical forms, checked by hand on a 4-CPU
//! machine of two L2 pairs and by brute force over every raw placement on
//! larger ones.

use std::collections::HashMap;

use crate::Topology;

use super::*;

fn tree(desc: &str) -> SymTree {
    SymTree::new(&Topology::synthetic("t", desc).unwrap())
}

/// Two L2s, two CPUs each: CPUs 0,1 share one L2, 2,3 the other.
const PAIRS: &str = "package:1 l2(1M):2 core:2";

/// (threads per app, configurations, raw placements), by hand on PAIRS:
/// - a:2 b:2 — {aa}{bb} or {ab}{ab}: 2 configurations of 4!/(2!·2!) = 6 raw
///   placements (2 of the first kind, 2·2 of the second);
/// - a:2 — both threads under one L2 or one under each: 2 of C(4,2) = 6;
/// - a:2 b:1 c:1 — {aa}{bc} or {ab}{ac}: 2 of 4!/2! = 12;
/// - a:5 — more threads than CPUs, so up to 2 per CPU: L2 totals 4+1 (cores
///   2,2 and 1,0: one way) or 3+2 (2,1 and then 2,0 or 1,1: two ways) = 3
///   configurations of [x^5](1 + x + x²)^4 = 16 raw placements.
#[test]
fn counts_by_hand() {
    let t = tree(PAIRS);
    let cases: [(&[u16], f64, f64); 4] = [
        (&[2, 2], 2.0, 6.0),
        (&[2], 2.0, 6.0),
        (&[2, 1, 1], 2.0, 12.0),
        (&[5], 3.0, 16.0),
    ];
    for (target, configs, raw) in cases {
        let mut s = Space::new(&t, target.to_vec());
        assert_eq!(s.configurations(), Some(configs), "{target:?}");
        assert_eq!(s.raw_placements(), Some(raw), "{target:?}");
        assert_eq!(s.enumerate().len(), configs as usize, "{target:?}");
    }
}

/// Every raw placement of `target` (per-leaf count vectors, at most `q`
/// threads per leaf), by brute force.
fn all_raw(leaves: usize, target: &[u16], q: u16) -> Vec<Vec<u16>> {
    fn go(
        leaf: usize,
        leaves: usize,
        left: &mut Vec<u16>,
        q: u16,
        cur: &mut Vec<u16>,
        out: &mut Vec<Vec<u16>>,
    ) {
        if leaf == leaves {
            if left.iter().all(|&x| x == 0) {
                out.push(cur.clone());
            }
            return;
        }
        // Every vector at or below `left` with at most q threads.
        let n = left.len();
        let mut v = vec![0u16; n];
        loop {
            if v.iter().sum::<u16>() <= q {
                for a in 0..n {
                    left[a] -= v[a];
                }
                cur.extend(&v);
                go(leaf + 1, leaves, left, q, cur, out);
                cur.truncate(cur.len() - n);
                for a in 0..n {
                    left[a] += v[a];
                }
            }
            let mut k = 0;
            loop {
                if k == n {
                    return;
                }
                if v[k] < left[k] {
                    v[k] += 1;
                    break;
                }
                v[k] = 0;
                k += 1;
            }
        }
    }
    let mut out = Vec::new();
    go(
        0,
        leaves,
        &mut target.to_vec(),
        q,
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// On asymmetric-looking but symmetric trees (sockets of L2 pairs, NUMA
/// nodes of L3s, SMT): the configurations counted equal the distinct
/// canonical keys of all raw placements, each key's orbit equals how many raw
/// placements have it, and enumeration yields each key exactly once.
#[test]
fn counts_match_brute_force() {
    let cases: [(&str, &[u16]); 5] = [
        ("package:2 l2(1M):2 core:2", &[2, 2, 1]),
        ("package:2 l2(1M):2 core:2", &[3, 3]),
        ("package:2 numa:1 l3(4M):1 l2(256K):3 core:1", &[2, 2, 2]),
        ("package:2 l3(4M):1 core:2 pu:2", &[3, 2]),
        ("package:1 l2(1M):3 core:2", &[4, 5]),
    ];
    for (desc, target) in cases {
        let t = tree(desc);
        let n = target.len();
        let mut s = Space::new(&t, target.to_vec());
        let raw = all_raw(t.leaves.len(), target, s.per_cpu);
        let mut keys: HashMap<Vec<u16>, (f64, f64)> = HashMap::new();
        for p in &raw {
            let c = t.canonical(n, p);
            let e = keys.entry(c.key).or_insert((0.0, c.orbit));
            e.0 += 1.0;
            assert_eq!(e.1, c.orbit, "{desc} {target:?}: one orbit size per key");
        }
        for (k, (seen, orbit)) in &keys {
            assert_eq!(seen, orbit, "{desc} {target:?}: orbit of {k:?}");
        }
        assert_eq!(
            s.raw_placements(),
            Some(raw.len() as f64),
            "{desc} {target:?}"
        );
        assert_eq!(
            s.configurations(),
            Some(keys.len() as f64),
            "{desc} {target:?}"
        );
        let forms = s.enumerate();
        let mut enumerated: Vec<Vec<u16>> = forms.iter().map(|f| t.canonical(n, f).key).collect();
        enumerated.sort();
        enumerated.dedup();
        assert_eq!(
            enumerated.len(),
            forms.len(),
            "{desc} {target:?}: no duplicates"
        );
        assert_eq!(enumerated.len(), keys.len(), "{desc} {target:?}: every key");
    }
}

/// The Opteron 6174 (8 six-core dies over 4 sockets) with 4 apps × 8
/// threads: raw placements are 48! / (8!^4 · 16!), and the configurations are
/// a tiny fraction of them.
#[test]
fn opteron_space_is_counted() {
    let t = tree("package:4 numa:2 l3(5M):1 l2(512K):6 core:1");
    let mut s = Space::new(&t, vec![8, 8, 8, 8]);
    let ln_fact = |n: u32| (1..=n).map(|k| f64::from(k).ln()).sum::<f64>();
    let want = (ln_fact(48) - 4.0 * ln_fact(8) - ln_fact(16)).exp();
    let raw = s.raw_placements().unwrap();
    assert!((raw / want - 1.0).abs() < 1e-9, "{raw} vs {want}");
    let configs = s.configurations().unwrap();
    assert!(configs > 1e6 && configs < raw / 1e15, "{configs}");
}

/// Canonical forms: swapping the two L2s (or the CPUs under one) changes
/// nothing; the layout puts the larger child first; the rendering groups CPUs
/// by cache; the scatter order alternates between the L2s.
#[test]
fn canonical_form_and_rendering() {
    let t = tree(PAIRS);
    assert_eq!(t.leaves, [0, 1, 2, 3]);
    // a on CPU 0 and 2, b on CPU 1 and 3 — and the mirror images.
    let p1 = [1, 0, 0, 1, 1, 0, 0, 1];
    let p2 = [0, 1, 1, 0, 0, 1, 1, 0];
    let p3 = [1, 0, 0, 1, 0, 1, 1, 0];
    let c1 = t.canonical(2, &p1);
    assert_eq!(c1, t.canonical(2, &p2));
    assert_eq!(c1.key, t.canonical(2, &p3).key);
    assert_eq!(c1.orbit, 4.0);
    // a on one L2, b on the other: 2 raw placements.
    let packed = [0, 1, 0, 1, 1, 0, 1, 0];
    let c = t.canonical(2, &packed);
    assert_eq!(c.orbit, 2.0);
    assert_eq!(t.render(2, &c.layout), "[a2] [b2]");
    assert_eq!(t.render(2, &p1), "[a1 b1] [a1 b1]");
    assert_eq!(t.scatter_order(), [0, 2, 1, 3]);
}

/// The vectors a class table combines with `u` are exactly those at or
/// above it digit by digit, each once, `u` first (targets of one to three
/// apps, every `u`).
#[test]
fn at_least_lists_the_vectors_above() {
    for target in [&[3u16][..], &[2, 0, 3], &[1, 4, 2]] {
        let r = Radix::new(target).unwrap();
        let mut got = Vec::new();
        for u in 0..r.size {
            r.at_least(u, &mut got);
            assert_eq!(got[0], u, "{target:?}");
            let mut want: Vec<usize> = (0..r.size).filter(|&v| r.fits(v, u, 1)).collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{target:?} u={u}");
        }
    }
}

/// A class table takes k children of vector u into v for every k up to
/// `times(v, u)`: exactly the k for which `fits(v, u, k)` holds (targets of
/// one to three apps, every non-zero u and every v, k up to 9).
#[test]
fn times_is_the_largest_k_that_fits() {
    for target in [&[3u16][..], &[2, 0, 3], &[1, 4, 2], &[8, 8]] {
        let r = Radix::new(target).unwrap();
        for u in 1..r.size {
            for v in 0..r.size {
                let most = r.times(v, u);
                for k in 1..=9u16 {
                    assert_eq!(
                        r.fits(v, u, k),
                        usize::from(k) <= most,
                        "{target:?} v={v} u={u} k={k}"
                    );
                }
            }
        }
    }
}

/// The class-table knapsack as it was before [`multisets`] read the rows'
/// non-zero entries: every v ≥ u, every k up to what v holds.
fn multisets_dense(r: &Radix, child: &[f64], m: usize) -> Vec<Vec<f64>> {
    let mut dp = vec![vec![0.0; r.size]; m + 1];
    dp[0][0] = 1.0;
    let mut above = Vec::new();
    for u in 1..r.size {
        let n = child[u];
        if n == 0.0 {
            continue;
        }
        r.at_least(u, &mut above);
        let choose: Vec<f64> = (0..=m).map(|k| multichoose(n, k)).collect();
        let most: Vec<usize> = above.iter().map(|&v| r.times(v, u).min(m)).collect();
        for s in (1..=m).rev() {
            for (&v, &most) in above.iter().zip(&most) {
                let mut add = 0.0;
                for k in 1..=s.min(most) {
                    let rest = dp[s - k][v - k * u];
                    if rest != 0.0 {
                        add += rest * choose[k];
                    }
                }
                dp[s][v] += add;
            }
        }
    }
    dp
}

/// Reading only the rows' non-zero entries builds the same table as the
/// dense knapsack, to the bit: child tables of whole and fractional counts
/// with zeros among them, targets of one to four apps, up to 6 children
/// (the two ways of gathering a term meet in one sum, so an order changed
/// anywhere would show in the last bits of the fractional ones).
#[test]
fn multisets_match_the_dense_knapsack_to_the_bit() {
    let targets: [&[u16]; 5] = [&[5], &[3, 2], &[2, 0, 3], &[4, 4, 4], &[3, 2, 3, 2]];
    for target in targets {
        let r = Radix::new(target).unwrap();
        for (seed, m) in [(1u64, 1usize), (2, 2), (3, 4), (4, 6)] {
            // A small deterministic generator: a third of the vectors have
            // no child, the rest 1 to 4 children or a fraction.
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let child: Vec<f64> = (0..r.size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 6 {
                        0 | 1 => 0.0,
                        2 => 0.37 * (x % 11) as f64 + 0.1,
                        k => (k - 2) as f64,
                    }
                })
                .collect();
            let got = multisets(&r, &child, m, &vec![0; m + 1]);
            let want = multisets_dense(&r, &child, m);
            for (s, (g, w)) in got.iter().zip(&want).enumerate() {
                for v in 0..r.size {
                    assert_eq!(
                        g[v].to_bits(),
                        w[v].to_bits(),
                        "{target:?} m={m} s={s} v={v}: {} vs {}",
                        g[v],
                        w[v]
                    );
                }
            }
        }
    }
}

/// Counting a root of one class of children computes only the entries its
/// count depends on, and gives the count the whole table gives, to the bit:
/// machines of one, two and four packages, whole-thread and shared CPUs.
#[test]
fn the_count_of_a_one_class_root_is_its_tables_top_entry() {
    let cases: [(&str, &[u16]); 6] = [
        (PAIRS, &[2, 2]),
        (PAIRS, &[5]),
        ("package:2 l3(1M):1 core:3", &[2, 2, 1]),
        ("package:4 numa:2 l3(5M):1 l2(512K):2 core:1", &[4, 3, 2]),
        ("package:4 numa:2 l3(5M):1 l2(512K):2 core:1", &[6, 6, 6, 6]),
        ("package:3 l2(1M):2 core:2", &[3, 3, 4]),
    ];
    for (desc, target) in cases {
        let t = tree(desc);
        let root = t.nodes[t.root].shape;
        assert_eq!(t.shapes[root].classes.len(), 1, "{desc}");
        let counted = Space::new(&t, target.to_vec()).configurations().unwrap();
        let mut whole = Space::new(&t, target.to_vec());
        let top = whole.radix.as_ref().unwrap().index(target);
        let want = whole.table(root)[top];
        assert!(want > 0.0, "{desc} {target:?}");
        assert_eq!(
            counted.to_bits(),
            want.to_bits(),
            "{desc} {target:?}: {counted} vs {want}"
        );
    }
}

/// Whether a sum stays within the target, and whether a vector holds k
/// copies of another, read from digit sums, answer as digit by digit does:
/// every pair of vectors of targets of one to four apps (a digit with
/// target 0 among them), k up to 3.
#[test]
fn digit_sums_tell_a_carry_and_a_borrow() {
    for target in [&[3u16][..], &[2, 0, 3], &[1, 4, 2], &[8, 8], &[2, 1, 0, 2]] {
        let r = Radix::new(target).unwrap();
        for a in 0..r.size {
            for b in 0..r.size {
                for k in 1..=3usize {
                    let (x, y) = (r.digits(a), r.digits(b));
                    let fits_sum = x.iter().zip(y).zip(target).all(|((&x, &y), &t)| {
                        usize::from(x) + k * usize::from(y) <= usize::from(t)
                    });
                    let holds = x
                        .iter()
                        .zip(y)
                        .all(|(&x, &y)| usize::from(x) >= k * usize::from(y));
                    assert_eq!(r.adds_times(a, b, k), fits_sum, "{target:?} {a} + {k}·{b}");
                    assert_eq!(r.holds(a, b, k), holds, "{target:?} {a} ≥ {k}·{b}");
                }
                assert_eq!(r.adds(a, b), r.adds_times(a, b, 1));
            }
        }
    }
}
