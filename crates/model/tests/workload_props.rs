//! Property tests for the workload parser: whatever `to_toml` writes reads back
//! unchanged, and no input, however broken, makes the parser panic or point
//! outside the text.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::workload::caps::CAPPED_VARS;
use coloc_model::workload::{parse_workload, to_toml, MetricSpec};
use coloc_model::{AppClass, AppSpec, CpuSet, MemPolicy, SchedSettings, StaticMapping, Workload};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::option;
use proptest::prelude::*;

fn duration(max_secs: u64) -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0..=max_secs).prop_map(Duration::from_secs),
        (0..=max_secs * 1_000).prop_map(Duration::from_millis),
        (0..=max_secs * 1_000_000_000).prop_map(Duration::from_nanos),
    ]
}

fn cpuset() -> impl Strategy<Value = CpuSet> {
    btree_set(0u32..=8191, 1..6).prop_map(|s| s.into_iter().collect())
}

fn metric() -> impl Strategy<Value = MetricSpec> {
    (
        prop::sample::select(vec![
            r"coloc-metric: ([0-9.eE+-]+)",
            r"^t=(\d+)ms$",
            r"(?:a|b)+ (\S+)",
        ]),
        option::of("[a-z/._]{0,5}[a-z]"),
        any::<bool>(),
        option::of(".{0,8}"),
    )
        .prop_map(|(regex, file, higher_is_better, unit)| MetricSpec {
            regex: regex.to_string(),
            file,
            higher_is_better,
            unit,
        })
}

fn app(index: usize) -> impl Strategy<Value = AppSpec> {
    let program = prop_oneof![
        ("[^\\x00\\s][^\\x00]{0,10}", vec("[^\\x00]{0,6}", 0..4)).prop_map(|(argv0, rest)| {
            let mut argv = vec![argv0];
            argv.extend(rest);
            (Some(argv), None)
        }),
        "[^\\s\\x00]{1,8}".prop_map(|m| (None, Some(m))),
    ];
    (
        ("[a-zA-Z0-9_][a-zA-Z0-9._-]{0,12}", program),
        (0u32..=4096, duration(30 * 24 * 3600), 1u32..=u32::MAX),
        (
            prop_oneof![Just(AppClass::Batch), Just(AppClass::Latency)],
            any::<bool>(),
            any::<bool>(),
        ),
        option::of(prop_oneof![
            cpuset().prop_map(StaticMapping::Shared),
            vec(cpuset(), 1..4).prop_map(StaticMapping::PerThread),
        ]),
        btree_map("[A-Za-z_][A-Za-z0-9_ .]{0,8}", "[^\\x00]{0,8}", 0..3),
        option::of(prop_oneof![
            Just(MemPolicy::Default),
            Just(MemPolicy::Local),
            Just(MemPolicy::Interleave)
        ]),
        option::of((option::of(-20i8..=19), option::of(100u32..=100_000))),
        option::of(metric()),
    )
        .prop_map(
            move |(
                (name, (command, model)),
                (threads, arrive_at, repeat),
                (class, malleable, cap_threads),
                cpus,
                env,
                memory,
                sched,
                metric,
            )| {
                let env: BTreeMap<String, String> = env
                    .into_iter()
                    .filter(|(k, _)| k != "OMP_NUM_THREADS")
                    .filter(|(k, _)| !(cap_threads && CAPPED_VARS.contains(&k.as_str())))
                    .collect();
                AppSpec {
                    // The index keeps names unique.
                    name: format!("{name}{index}"),
                    command,
                    model,
                    threads,
                    arrive_at,
                    repeat,
                    class,
                    metric,
                    env,
                    malleable,
                    cap_threads,
                    cpus,
                    memory,
                    sched: sched.map(|(nice, slice_us)| SchedSettings { nice, slice_us }),
                }
            },
        )
}

fn workload() -> impl Strategy<Value = Workload> {
    (
        "[^\\x00]{0,6}[^\\s\\x00]",
        option::of(duration(30 * 24 * 3600).prop_map(|d| d.max(Duration::from_millis(1)))),
        (1usize..5).prop_flat_map(|n| (0..n).map(app).collect::<Vec<_>>()),
    )
        .prop_map(|(name, epoch, apps)| Workload { name, epoch, apps })
}

proptest! {
    #[test]
    fn written_workloads_read_back_unchanged(w in workload()) {
        let text = to_toml(&w);
        let back = parse_workload("gen.toml", &text);
        prop_assert_eq!(back.as_ref(), Ok(&w), "{}", text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        check_error_position(&text);
    }

    #[test]
    fn damaged_examples_never_panic_and_errors_point_into_the_file(
        which in 0usize..6,
        cut in any::<prop::sample::Index>(),
        len in 0usize..20,
        insert in prop::sample::select(vec!["", "-", "0", "\"", "[", "]", "[[app]]\n", "=", "\n", "x = 1\n", "{", "'", "é"]),
    ) {
        let mut paths: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        let text = std::fs::read_to_string(&paths[which % paths.len()]).unwrap();
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + len).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let damaged = format!("{}{insert}{}", &text[..at], &text[end..]);
        check_error_position(&damaged);
    }
}

/// Parses `text`; an error must name the file and a place inside the text.
fn check_error_position(text: &str) {
    if let Err(e) = parse_workload("f.toml", text) {
        assert_eq!(e.file, "f.toml");
        let p = e.position.expect("parse errors have a place");
        let lines = text.split('\n').count();
        assert!(p.line >= 1 && p.line <= lines, "{e} in {text:?}");
        let line = text.split('\n').nth(p.line - 1).unwrap();
        assert!(
            p.column >= 1 && p.column <= line.chars().count() + 1,
            "{e} in {text:?}"
        );
        assert!(!e.message.is_empty());
    }
}
