//! A profile as a table: per level the runs' means, the score of Equation 1 and
//! its spread over repetitions, and the signal (ReSense §2.2; docs/signals.md:
//! every profile says what it was measured with), then why the other levels have
//! no score.

use super::shared_cache::ONE_CORE;
use super::{AppProfile, LevelResult, SharingCharacteristics, Signal};
use crate::metrics::table::{finish, new_table, NONE};

/// The table of `profile`'s levels, innermost first, followed by one line per
/// level that could not be characterized, with the reason.
pub fn render(profile: &AppProfile) -> String {
    let mut table = new_table(&[
        "level",
        "threads",
        "runs",
        "baseline (mean)",
        "contention (mean)",
        "score",
        "spread of runs",
        "signal",
    ]);
    let mut reasons = String::new();
    for l in &profile.levels {
        let label = l.level.label();
        match &l.result {
            LevelResult::Scored(s) => {
                table.add_row(vec![
                    label,
                    s.threads.to_string(),
                    s.baseline.len().to_string(),
                    amount(mean(&s.baseline), s.signal),
                    amount(mean(&s.contention), s.signal),
                    format!("{:+.2}", s.score),
                    format!(
                        "{:+.2} .. {:+.2}, sd {:.2}",
                        s.spread.min, s.spread.max, s.spread.sd
                    ),
                    s.signal.to_string(),
                ]);
            }
            LevelResult::NotCharacterizable { reason } => {
                let mut row = vec![label.clone()];
                row.extend(std::iter::repeat_n(NONE.to_string(), 7));
                table.add_row(row);
                reasons.push_str(&format!("{label}: not characterizable: {reason}\n"));
            }
        }
    }
    format!(
        "{}{reasons}{}",
        finish(&table),
        profile
            .sharing
            .as_ref()
            .map(render_sharing)
            .unwrap_or_default()
    )
}

/// Tang et al.'s characteristics (§5) as one block: each figure with its
/// unit, `-` where it was not measured, then why.
pub fn render_sharing(c: &SharingCharacteristics) -> String {
    let fig = |v: Option<f64>, unit: &str| match v {
        Some(v) => format!("{v:.3}{unit}"),
        None => NONE.to_string(),
    };
    let mut out = format!(
        "sharing characteristics (Tang et al. §5, {} thread(s), {}): data sharing {}, \
         bandwidth {} per thread, LLC miss rate {}, LLC footprint (Equation 1) {}\n",
        c.threads,
        c.signal,
        fig(c.data_sharing, ""),
        fig(c.bandwidth_gbs, " GB/s"),
        fig(c.llc_miss_rate, " misses/ms"),
        fig(c.llc_footprint, " misses/ms"),
    );
    if let Some(r) = &c.data_sharing_runs {
        let s = &r.runs;
        let shared = match r.cache.as_str() {
            ONE_CORE => "one core's caches against two cores'".to_string(),
            cache => format!("one {cache} against two"),
        };
        out.push_str(&format!(
            "  data sharing by substitute: the share of CPU time saved by {} threads sharing \
             {shared}: {} together, {} apart ({}, {} run(s) each; Equation 1 of ReSense \
             {:+.2}, runs {:+.2} .. {:+.2})\n",
            s.threads,
            amount(mean(&s.contention), s.signal),
            amount(mean(&s.baseline), s.signal),
            s.signal,
            s.baseline.len(),
            s.score,
            s.spread.min,
            s.spread.max,
        ));
    }
    for m in &c.missing {
        out.push_str(&format!("  not measured: {m}\n"));
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// A measurement in its signal's unit: cycles in scientific notation, times
/// (stored in ns) in seconds.
fn amount(v: f64, signal: Signal) -> String {
    match signal {
        Signal::Cycles => format!("{v:.4e} cycles"),
        Signal::TaskClock | Signal::Wall => format!("{:.4} s", v * 1e-9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{
        AppIdentity, LevelProfile, NotCharacterizable, PlatformFingerprint, Sensitivity,
    };
    use crate::topology::{ResourceKind, Topology};

    /// Task-clock runs of 2.0 and 2.2 s against 1.8 and 1.8 s: means 2.1 and
    /// 1.8 s, score (2.1 − 1.8) × 100 / 2.1 = +14.29, runs +10.00 and +18.18.
    #[test]
    fn renders_scores_and_reasons() {
        let topo = Topology::synthetic("y", "package:1 l2(6M):2 core:2").unwrap();
        let profile = AppProfile {
            sharing: None,
            identity: AppIdentity::model("sc", "streamcluster"),
            platform: PlatformFingerprint::of(&topo),
            levels: vec![
                LevelProfile {
                    level: ResourceKind::Cache { level: 2 },
                    result: LevelResult::Scored(
                        Sensitivity::from_runs(
                            Signal::TaskClock,
                            2,
                            vec![2.0e9, 2.2e9],
                            vec![1.8e9, 1.8e9],
                        )
                        .unwrap(),
                    ),
                },
                LevelProfile {
                    level: ResourceKind::Cache { level: 3 },
                    result: LevelResult::NotCharacterizable {
                        reason: NotCharacterizable::SingleInstance,
                    },
                },
            ],
        };
        let text = render(&profile);
        let l2 = text.lines().find(|l| l.starts_with("| L2")).unwrap();
        for cell in [
            "2.1000 s",
            "1.8000 s",
            "+14.29",
            "+10.00 .. +18.18",
            "task-clock",
        ] {
            assert!(l2.contains(cell), "{cell} missing in {l2}");
        }
        assert!(
            text.contains("L3: not characterizable: a single instance on this machine"),
            "{text}"
        );
    }

    #[test]
    fn cycles_are_shown_as_cycles() {
        assert_eq!(amount(5.0e9, Signal::Cycles), "5.0000e9 cycles");
        assert_eq!(amount(1.5e9, Signal::Wall), "1.5000 s");
    }

    /// `coloc profiles show` prints the characteristics after the levels,
    /// with units, `-` for a missing figure and why it is missing.
    #[test]
    fn renders_sharing_characteristics() {
        let c = SharingCharacteristics {
            signal: crate::profile::SharingSignal::StreamCoRuns,
            threads: 2,
            data_sharing: None,
            bandwidth_gbs: Some(1.5),
            llc_miss_rate: None,
            llc_footprint: None,
            missing: vec!["data sharing: no LLC counters".into()],
            data_sharing_runs: None,
        };
        let text = render_sharing(&c);
        assert!(
            text.contains("2 thread(s), substitute: co-runs with the stream kernel"),
            "{text}"
        );
        assert!(text.contains("data sharing -"), "{text}");
        assert!(text.contains("bandwidth 1.500 GB/s per thread"), "{text}");
        assert!(
            text.contains("not measured: data sharing: no LLC counters"),
            "{text}"
        );
    }

    /// Data sharing from the substitute names its runs: 2.0 and 2.2 s of CPU
    /// apart, 1.8 and 1.9 s together on one core: means 2.1 and 1.85 s, a
    /// score of +11.90 (runs +10.00 and +13.64), 0.119 of the CPU time saved;
    /// a footprint of Equation 1, 1000 × (1 − 0.119) = 880.952.
    #[test]
    fn renders_the_data_sharing_substitute() {
        let runs =
            Sensitivity::from_runs(Signal::TaskClock, 2, vec![2.0e9, 2.2e9], vec![1.8e9, 1.9e9])
                .unwrap();
        let r = crate::profile::SharedCacheRuns {
            cache: ONE_CORE.into(),
            runs,
        };
        let c = SharingCharacteristics {
            signal: crate::profile::SharingSignal::StreamCoRuns,
            threads: 1,
            data_sharing: Some(r.data_sharing()),
            bandwidth_gbs: Some(0.064),
            llc_miss_rate: Some(1000.0),
            llc_footprint: Some(1000.0 * (1.0 - r.data_sharing())),
            missing: Vec::new(),
            data_sharing_runs: Some(r),
        };
        let text = render_sharing(&c);
        for want in [
            "data sharing 0.119,",
            "LLC footprint (Equation 1) 880.952 misses/ms",
            "saved by 2 threads sharing one core's caches against two cores': 1.8500 s \
             together, 2.1000 s apart (task-clock, 2 run(s) each; Equation 1 of ReSense \
             +11.90, runs +10.00 .. +13.64)",
        ] {
            assert!(text.contains(want), "{want} missing in {text}");
        }
        assert!(!text.contains("not measured"), "{text}");
    }
}
