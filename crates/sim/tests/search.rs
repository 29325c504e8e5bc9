//! The adversarial search (docs/simulator.md, Adversarial search): random
//! mixes of apps auto has never seen, with nothing stored, judged against
//! native and equal on the simulator's `kvm-2cpu`.

use coloc_sim::platform;
use coloc_sim::search::{judge, search, MixSpec, Outcome, LIMIT};
use proptest::prelude::*;

fn kvm() -> (coloc_sim::Platform, MixSpec) {
    on("kvm-2cpu", 2)
}

/// A built-in platform of `cpus` CPUs and the search's mixes for it.
fn on(name: &str, cpus: u32) -> (coloc_sim::Platform, MixSpec) {
    let p = platform(name).unwrap();
    let spec = MixSpec::for_platform(cpus, p.params.freq_ghz);
    (p, spec)
}

/// The same report whatever the worker count: each mix runs alone, seeded
/// by its own seed, and the report is in seed order.
#[test]
fn a_search_is_the_same_whatever_the_thread_count() {
    let (p, spec) = kvm();
    let one = search(&p, &spec, (100, 6), 1, &|_| {}).unwrap();
    let two = search(&p, &spec, (100, 6), 2, &|_| {}).unwrap();
    assert_eq!(one, two);
    let seeds: Vec<u64> = one.outcomes.iter().map(|o| o.seed).collect();
    assert_eq!(seeds, (100..106).collect::<Vec<_>>());
}

/// The bound on one mix: auto within LIMIT of native and of equal.
fn within_the_limit(seed: u64) {
    within_the_limit_on(kvm(), seed);
}

fn within_the_limit_on((p, spec): (coloc_sim::Platform, MixSpec), seed: u64) {
    let o = judge(&p, &spec, seed).unwrap();
    assert!(o.vs_native() <= LIMIT, "seed {seed}: {o:?}");
    assert!(o.vs_equal() <= LIMIT, "seed {seed}: {o:?}");
}

// Counterexamples the search found (seeds 1..=1000 on kvm-2cpu at the
// commit that added it: 45 of 1,000 mixes above 1.02x, worst 1.076x
// equal's and 1.028x native's; auto is between equal and native in all but
// 4). Those not fixed are ignored with why, and run with
// `cargo test -p coloc-sim --test search -- --ignored`.

/// A serial-phase program (no barriers, memory traffic 9.3 per 1000
/// instructions) beside a one-long-region program, neither malleable: the
/// trial's windows read own / Linux 0.82–0.88 (a window's work depended on
/// which phase it landed in: a serial phase reports none), so it went back
/// to Linux after 4 pairs, while own partitions (equal) finish the mix
/// 7.82 s against native's 8.90 s; auto took 8.24 s (1.053x equal). The
/// trial now measures each phase apart (docs/policies/auto.md, Phases).
#[test]
fn counterexample_103_serial_phases_beside_one_long_region_misread_by_the_trial() {
    within_the_limit(103);
}

/// The worst against native: auto 11.17 s ties equal's 11.14 s, and
/// native's 10.86 s beats both (1.028x). Not diagnosed.
#[test]
#[ignore = "not fixed, not diagnosed: the worst against native of the 1,000-mix sample"]
fn counterexample_306_worst_against_native() {
    within_the_limit(306);
}

/// The worst against equal in the first 1,000-mix sample: auto 7.86 s,
/// native 8.19 s, equal 7.31 s (1.076x). A one-long-region program beside
/// a serial-phase one: after 4 pairs the trial's bounds still straddled
/// 0.98, and an undecided trial went back to Linux. It now keeps the side
/// of its point estimate, own here (docs/policies/auto.md, Verdict).
#[test]
fn counterexample_224_an_undecided_trial_fell_back_to_linux() {
    within_the_limit(224);
}

/// A serial-phase program (memory traffic 17 per 1000 instructions) beside
/// a pthreads team with kernel-barrier's barriers, judged by its CPU time.
/// Under Linux the team took 1.4 CPUs while its partner was serial (against
/// 1 on its own CPU), time the serial thread lost, so its CPU ratio read
/// 0.71–0.84 while it progressed no faster (it ends at 6.58 s in all three
/// arrangements); pairs read 0.91–1.09, 0.999 after 4, and the trial went
/// back to Linux: auto 7.30 s, native 7.23 s, equal 6.62 s (1.103x). CPU
/// time moved from the serial program to the team was counted as the
/// team's gain and, in the serial program's own ratio, as its loss; the
/// team now reads the set's summed CPU rates (docs/policies/auto.md,
/// Pairs).
#[test]
fn counterexample_1751_cpu_time_taken_from_a_serial_phase_read_as_a_gain() {
    within_the_limit(1751);
}

/// A serial-phase program (a parallel section, then a serial phase, about
/// 0.8 s in all) beside a one-long-region team, on kvm-2cpu: the run's first
/// set was tried at once, and its windows (4 intervals each) kept step with
/// the program's period, every Linux window in its serial phase, every own
/// window in its parallel one. The pairs could compare no phase of it (its
/// CPU time stood in: 1.0) and the team made the same progress both ways,
/// so own was kept after the least a verdict takes, 2 pairs, but the two
/// Linux windows had halved the serial phase's CPU: auto 4.02 s, equal
/// 3.85 s (1.042x). Before any set ended, the set's age is now its expected
/// life, as for a cut (docs/policies/auto.md, The cost of trying): the set
/// runs the own arrangement unmeasured until its age pays for a trial, and
/// ends before it does.
#[test]
fn counterexample_405_a_first_trial_tried_at_once_in_step_with_a_serial_phase_program() {
    within_the_limit(405);
}

/// The same cause on yorkfield: auto 7.85 s against equal's 7.18 s
/// (1.093x) while its trial alternated in step with a serial-phase
/// program's phases.
#[test]
fn counterexample_1126_yorkfield_a_first_trial_in_step_with_serial_phases() {
    within_the_limit_on(on("yorkfield", 4), 1126);
}

/// The other mixes of seeds 1..=2,000 that the same change brought within
/// the bound (above 1.02x native's or equal's before): the run's first set
/// tried at once, where its trial cost more than its verdict won.
#[test]
fn first_sets_that_a_trial_at_once_cost_the_bound() {
    for seed in [521, 694, 928, 933, 994, 1279, 1348, 1728, 1955] {
        within_the_limit(seed);
    }
    for seed in [
        7, 137, 399, 493, 546, 571, 673, 709, 712, 780, 785, 830, 1023, 1096, 1099, 1151, 1360,
        1435, 1437, 1442, 1459, 1461, 1465, 1609, 1611, 1648, 1669, 1704, 1718, 1722, 1725, 1732,
        1801, 1838, 1935, 1941,
    ] {
        within_the_limit_on(on("yorkfield", 4), seed);
    }
}

/// yorkfield, a loan that could not raise the borrower's pace (1.053x
/// equal at `094d56c`: auto 14.91 s, native 19.63 s, equal 14.15 s): the
/// idle CPU of a partition was lent to a co-runner whose OpenMP team
/// outnumbered its partition's CPUs and ran no faster on one CPU more (its
/// slowest member's pace: 4 threads on 2 CPUs or 3 are 2 on the most
/// crowded), and when the lender used its CPU again it shared it with the
/// borrower until the next decision. A loan is now made only where it
/// raises the borrower's pace (docs/policies/auto.md, Own arrangement): one
/// of 70 mixes of seeds 1..=10,000 it brought within the bound, and this
/// change alone moved it (the same binary with the lending before: 1.053x).
#[test]
fn counterexample_4636_yorkfield_a_loan_that_could_not_raise_the_borrowers_pace() {
    within_the_limit_on(on("yorkfield", 4), 4636);
}

/// yorkfield's worst (1.176x equal at `094d56c`): a memory-bound
/// serial-phase program beside short co-runners, which it lent its idle
/// partition CPU while serial. Lending only where the loan raises the
/// borrower's pace took auto from 9.31 s to 8.68 s (equal 7.92 s: 1.097x);
/// with no lending at all it took 8.01 s. The loans the rule still makes
/// here (pthreads borrowers, or teams a loan does speed up) cost the rest:
/// not diagnosed (docs/policies/auto.md, Not done yet).
#[test]
#[ignore = "improved, not fixed: 1.097x equal; the loans the pace rule still makes are not diagnosed"]
fn counterexample_8577_yorkfield_a_serial_phase_lender_shares_its_cpu_with_a_borrower() {
    within_the_limit_on(on("yorkfield", 4), 8577);
}

/// Two of the mixes above that lending only where the loan raises the
/// borrower's pace pushed back over the bound on yorkfield: 425 (1.017x
/// equal with every loan made, 1.024x since; two loans to a team of 4 on 2
/// CPUs refused, its exits 0.06 s later) and 740 (1.00x, 1.029x since: the
/// serial-phase lender ended at 4.59 s instead of 4.47 s after its
/// co-runner was refused its CPU for 0.9 s). Not diagnosed
/// (docs/policies/auto.md, Not done yet).
#[test]
#[ignore = "pushed over the bound by the pace rule for loans (1.024x, 1.029x equal): not diagnosed"]
fn first_sets_pushed_back_over_by_refused_loans() {
    for seed in [425, 740] {
        within_the_limit_on(on("yorkfield", 4), seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        // A seed names a whole mix: shrinking it gives another mix, not a
        // smaller one, so failures are reported by seed (reproduce with
        // `coloc sim search --platform kvm-2cpu --mixes 1 --seed S`) and
        // kept as named tests rather than in a regressions file.
        failure_persistence: None,
        max_shrink_iters: 0,
        ..ProptestConfig::default()
    })]

    /// Auto is never slower than native, or than equal, by more than LIMIT
    /// on a random mix. Ignored: about 5% of mixes break it (above), so
    /// 12 random seeds fail about every other run.
    #[test]
    #[ignore = "the issue's property does not hold yet: 45 of 1,000 mixes break it (the counterexamples above)"]
    fn auto_is_within_the_limit_of_native_and_equal(seed in 10_000u64..1_000_000) {
        let (p, spec) = kvm();
        let o: Outcome = judge(&p, &spec, seed).unwrap();
        prop_assert!(o.vs_native() <= LIMIT, "seed {seed}: {o:?}");
        prop_assert!(o.vs_equal() <= LIMIT, "seed {seed}: {o:?}");
    }
}
