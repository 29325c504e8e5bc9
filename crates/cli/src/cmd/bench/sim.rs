//! `coloc bench sim`'s table: the simulator's speed as
//! [`coloc_harness::timing::sim`] measures it, each figure beside a
//! baseline commit's ([`Baseline`]: `sim-baseline.toml`, the figures of the
//! commit before the simulator was made faster, unless `--baseline` names
//! another file).

use std::time::Duration;

use coloc_harness::timing::sim::{Baseline, SimSpeed, SimStep, ORACLE_CONFIGS};

/// The stored baseline's file.
const BASELINE: &str = include_str!("sim-baseline.toml");

/// The stored baseline (`sim-baseline.toml`).
pub fn stored_baseline() -> Baseline {
    Baseline::parse("sim-baseline.toml", BASELINE).expect("the stored baseline parses")
}

/// What starts next, as `bench sim` tells it on stderr.
pub fn step(s: SimStep<'_>) -> String {
    match s {
        SimStep::Engine(policy) => format!("engine: {policy} on nupoco-amd64"),
        SimStep::Oracle => format!("oracle: {ORACLE_CONFIGS} configurations on opteron48"),
    }
}

/// The engine's runs and the oracle's, each beside `base`'s figure with
/// their ratio. The first columns are those a single run printed before
/// figures were repeated (a script reading two builds' output reads the
/// same columns: `crates/sim/scripts/bench-sim-pairs.sh`), each now the
/// median over the repetitions; then the repetitions, the spread of events
/// per CPU second, and the CPU time per event.
pub fn render(speed: &SimSpeed, base: &Baseline) -> String {
    let secs = Duration::as_secs_f64;
    let beside = |now: f64, then: Option<f64>| match then {
        Some(b) if b > 0.0 => format!("{b:>12.0} {:>7.1}x", now / b),
        _ => format!("{:>12} {:>8}", "-", "-"),
    };
    let mut out = format!(
        "engine: 8-app dynamic workload on nupoco-amd64 (64 cores), 100 ms epochs; each policy's run repeated for {:.1} s or more: medians over the runs\n",
        secs(&speed.measure)
    );
    out += &format!(
        "{:<16} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>10} {:>10} {:>12} {:>8} {:>5} {:>17} {:>10}\n",
        "policy",
        "events",
        "solves",
        "rounds",
        "simulated",
        "wall",
        "cpu",
        "events/s",
        "per cpu s",
        base.commit.as_str(),
        "ratio",
        "runs",
        "per cpu s min-max",
        "cpu us/ev"
    );
    for e in &speed.engine {
        let (per_s, per_cpu) = e.steps_per_s();
        out += &format!(
            "{:<16} {:>8} {:>7} {:>8} {:>9.1}s {:>8.3}s {:>8.3}s {:>10.0} {:>10.0} {} {:>5} {:>17} {:>10.2}\n",
            e.policy,
            e.steps,
            e.solves,
            e.rounds,
            secs(&e.simulated),
            e.steps as f64 / per_s.median,
            e.steps as f64 / per_cpu.median,
            per_s.median,
            per_cpu.median,
            beside(per_s.median, base.events_per_s.get(e.policy).copied()),
            e.runs.len(),
            format!("{:.0}-{:.0}", per_cpu.min, per_cpu.max),
            1e6 / per_cpu.median
        );
    }
    let o = &speed.oracle;
    let (per_s, per_cpu) = o.configs_per_s();
    out += &format!(
        "oracle: 4 apps x 8 threads on opteron48 (48 cores), bounded search: {} configurations in {:.2} s on {} threads ({:.2} s CPU) = {:.2} configurations/s ({:.2} per CPU second); {}: {:.2}/s, {:.1}x; medians of {} searches, per CPU second {:.0}-{:.0}\n",
        o.evaluated,
        o.evaluated as f64 / per_s.median,
        o.threads,
        o.evaluated as f64 / per_cpu.median,
        per_s.median,
        per_cpu.median,
        base.commit,
        base.oracle_configs_per_s,
        per_s.median / base.oracle_configs_per_s,
        o.runs.len(),
        per_cpu.min,
        per_cpu.max
    );
    out
}

#[cfg(test)]
mod tests {
    use coloc_harness::timing::sim::{EngineSpeed, OracleSpeed, Timed};

    use super::*;

    /// The stored baseline parses and holds every default policy.
    #[test]
    fn the_stored_baseline_covers_the_default_policies() {
        let b = stored_baseline();
        for p in ["native", "equal", "resense", "nupoco"] {
            assert!(b.events_per_s.contains_key(p), "{p}");
        }
    }

    /// Each figure is the median over its runs, printed beside the
    /// baseline's with their ratio, then the runs, the spread and the CPU
    /// time per event; a policy the baseline lacks gets dashes.
    #[test]
    fn figures_are_printed_beside_the_baseline() {
        let secs = Duration::from_secs;
        let ms = Duration::from_millis;
        let timed = |wall, cpu| Timed { wall, cpu };
        let run = |policy, steps, runs: Vec<Timed>| EngineSpeed {
            policy,
            steps,
            solves: 1,
            rounds: 1,
            simulated: secs(10),
            runs,
        };
        // equal: 2,500, 5,000 and 10,000 events per wall second; 5,000,
        // 10,000 and 5,000 per CPU second.
        let equal = vec![
            timed(secs(2), secs(1)),
            timed(ms(1000), ms(500)),
            timed(ms(500), ms(1000)),
        ];
        let speed = SimSpeed {
            measure: secs(1),
            engine: vec![
                run("equal", 5000, equal),
                run("tang", 10, vec![timed(secs(1), secs(1))]),
            ],
            oracle: OracleSpeed {
                evaluated: 64,
                threads: 2,
                runs: vec![timed(secs(2), secs(4))],
            },
        };
        let base = Baseline {
            commit: "abc1234".into(),
            events_per_s: [("equal".to_string(), 1250.0)].into(),
            oracle_configs_per_s: 16.0,
        };
        let out = render(&speed, &base);
        let equal = out.lines().find(|l| l.starts_with("equal")).unwrap();
        // Medians: 5,000 events per wall second (1.000 s), 5,000 per CPU
        // second (1.000 s), 4.0x the baseline's 1,250; 3 runs, 5,000 to
        // 10,000 per CPU second, 200 us of CPU per event.
        let fields: Vec<&str> = equal.split_whitespace().collect();
        assert_eq!(
            fields[5..],
            [
                "1.000s",
                "1.000s",
                "5000",
                "5000",
                "1250",
                "4.0x",
                "3",
                "5000-10000",
                "200.00"
            ],
            "{equal}"
        );
        let tang = out.lines().find(|l| l.starts_with("tang")).unwrap();
        assert!(tang.contains("-        -"), "{tang}");
        assert!(
            out.contains("32.00 configurations/s (16.00 per CPU second); abc1234: 16.00/s, 2.0x; medians of 1 searches"),
            "{out}"
        );
    }
}
