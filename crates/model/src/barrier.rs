//! libgomp's spin-then-sleep barrier wait: what a waiter loses at a barrier
//! while a teammate it waits for is descheduled (docs/simulator.md, Teams).
//! The simulator charges it to a packed spinning team; the DoP policies'
//! reversible-first rule prices a packed team's overhead with it
//! (`docs/policies/auto.md`, Reversible first).

/// libgomp's spin count when neither `OMP_WAIT_POLICY` nor `GOMP_SPINCOUNT`
/// is set: a waiter spins this many rounds, then sleeps on a futex
/// (libgomp's manual, GOMP_SPINCOUNT; docs/simulator.md, Teams).
pub const GOMP_SPINS: f64 = 300_000.0;

/// Core cycles of one round of libgomp's spin loop: a load of the futex word
/// and a PAUSE, about 10 cycles on the papers' pre-Skylake Intel and AMD cores
/// (docs/simulator.md, Teams).
pub const CYCLES_PER_SPIN: f64 = 10.0;

/// Expected seconds a spinning waiter loses per barrier while the teammate it
/// waits for is descheduled. The teammate comes back after U·S (S the slice,
/// U uniform on [0, 1]: where in its co-runner's slice the barrier fell) and
/// the waiter gives its CPU up after spinning T = [`GOMP_SPINS`] ×
/// [`CYCLES_PER_SPIN`] cycles, so it loses E[min(U·S, T)] = T − T²/(2S) when
/// T < S, else S/2 (a short slice ends before the spin does). At 2.4 GHz T is
/// 1.25 ms: a 3 ms slice costs 0.99 ms per barrier, a 100 ms one 1.24 ms, not
/// the 50 ms of a waiter that spins until its teammate runs.
pub fn spin_wait_s(slice_s: f64, freq_ghz: f64) -> f64 {
    let spin = GOMP_SPINS * CYCLES_PER_SPIN / (freq_ghz * 1e9);
    if spin < slice_s {
        spin - spin * spin / (2.0 * slice_s)
    } else {
        slice_s / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_barrier_loses_the_spin_or_half_the_slice() {
        // (slice s, GHz, expected loss s)
        let cases = [
            (0.003, 2.4, 0.00125 - 0.00125 * 0.00125 / 0.006),
            (0.1, 2.4, 0.00125 - 0.00125 * 0.00125 / 0.2),
            (0.001, 2.4, 0.0005),
        ];
        for (s, f, want) in cases {
            assert!((spin_wait_s(s, f) - want).abs() < 1e-12, "{s} {f}");
        }
    }
}
