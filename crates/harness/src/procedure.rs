//! The steps of a measurement procedure that need no machine
//! ([`coloc_model::profile::procedure`], docs/trace-format.md, Measurement
//! procedures): the workload of one planned run, the traces of a procedure's
//! runs read back, the profile they give (what `coloc profile` stores and
//! `coloc profile --from DIR` recomputes, so a recomputation gives exactly
//! what the run printed), and a procedure's manifest written and read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use coloc_model::profile::procedure::{level_from_traces, ManifestApp, PlannedRun};
use coloc_model::profile::substitute::sharing_from_traces;
use coloc_model::profile::{
    AppProfile, LevelProfile, LevelResult, NotCharacterizable, PlatformFingerprint,
    SharingCharacteristics, Signal,
};
use coloc_model::{AppSpec, CpuSet, StaticMapping, Trace, Workload};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{read_trace, HarnessError};

/// `app`'s profile from the traces under `dir/APP`, as the manifest entry
/// plans its runs: what `coloc profile` stores and `coloc profile --from`
/// prints. ReSense's levels take each run's figure from its trace, or its
/// metered cycles ([`level_from_traces`]); the sharing characteristics come
/// from the counter run or the stream-probe runs with the data sharing runs
/// (the app's own, or the LLC level's among the levels:
/// [`sharing_from_traces`]).
pub fn profile_from_dir(
    dir: &Path,
    platform: &PlatformFingerprint,
    signal: Signal,
    app: &ManifestApp,
) -> Result<AppProfile, HarnessError> {
    let app_dir = dir.join(&app.name);
    let levels = app
        .levels
        .iter()
        .map(|l| {
            let result = match &l.not_characterizable {
                Some(reason) => LevelResult::NotCharacterizable {
                    reason: reason.clone(),
                },
                None => {
                    let traces = read_traces(&app_dir, dirs(&l.runs))?;
                    let scored = level_from_traces(l, &app.name, signal, &traces);
                    match scored {
                        Ok(s) => LevelResult::Scored(s),
                        Err(reason) => LevelResult::NotCharacterizable {
                            reason: NotCharacterizable::Failed {
                                reason: reason.to_string(),
                            },
                        },
                    }
                }
            };
            Ok(LevelProfile {
                level: l.level.clone(),
                result,
            })
        })
        .collect::<Result<Vec<_>, HarnessError>>()?;
    let sharing = match &app.sharing_not_measured {
        Some(why) => SharingCharacteristics::not_measured(why.clone()),
        None => sharing_from_traces(
            &app.name,
            &app.sharing_runs,
            &read_traces(&app_dir, dirs(&app.sharing_runs))?,
            &levels,
        )
        .unwrap_or_else(|why| SharingCharacteristics::not_measured(why.to_string())),
    };
    Ok(AppProfile {
        identity: app.identity.clone(),
        platform: platform.clone(),
        levels,
        sharing: Some(sharing),
    })
}

/// The traces of the runs in `dirs` under `dir`, in their order.
pub fn read_traces<'a>(
    dir: &Path,
    dirs: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Trace>, HarnessError> {
    dirs.into_iter()
        .map(|d| read_trace(&dir.join(d).join("trace.jsonl")))
        .collect()
}

/// The directories of `runs`.
pub fn dirs(runs: &[PlannedRun]) -> impl Iterator<Item = &str> {
    runs.iter().map(|r| r.dir.as_str())
}

/// The workload of one planned run: each app it names, taken from `specs`,
/// started at once, once, with thread i pinned to `cpus[i]` by the `static`
/// policy and its DoP fixed (not malleable), the run's `args` appended to its
/// command, everything else of the app (environment, memory and scheduling
/// settings, metric) as it is.
pub fn pinned_workload(
    workload: &Workload,
    run: &PlannedRun,
    specs: &[AppSpec],
) -> Result<Workload, HarnessError> {
    let apps = run
        .apps
        .iter()
        .map(|p| {
            let spec =
                specs
                    .iter()
                    .find(|s| s.name == p.name)
                    .ok_or_else(|| HarnessError::NoApp {
                        run: run.dir.clone(),
                        app: p.name.clone(),
                    })?;
            let mut app = spec.clone();
            app.arrive_at = Duration::ZERO;
            app.repeat = 1;
            app.threads = p.cpus.len() as u32;
            app.malleable = false;
            app.cpus = Some(StaticMapping::PerThread(
                p.cpus.iter().map(|&c| CpuSet::single(c)).collect(),
            ));
            if !p.args.is_empty() {
                app.command
                    .as_mut()
                    .ok_or_else(|| HarnessError::NoCommand {
                        run: run.dir.clone(),
                        app: p.name.clone(),
                        args: p.args.clone(),
                    })?
                    .extend(p.args.iter().cloned());
            }
            Ok(app)
        })
        .collect::<Result<Vec<_>, HarnessError>>()?;
    let names: Vec<&str> = run.apps.iter().map(|a| a.name.as_str()).collect();
    Ok(Workload {
        name: format!("{}-{}-{}", workload.name, run.role, names.join("-")),
        epoch: workload.epoch,
        apps,
    })
}

/// Writes `value` as `dir/name` (a procedure's manifest).
pub fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), HarnessError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| HarnessError::ToJson {
        path: dir.join(name),
        source,
    })?;
    write_text(dir, name, &text).map(drop)
}

/// Writes `text` as `dir/name`, creating `dir` first; the file's path.
pub fn write_text(dir: &Path, name: &str, text: &str) -> Result<PathBuf, HarnessError> {
    std::fs::create_dir_all(dir).map_err(|source| HarnessError::Write {
        what: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| HarnessError::Write {
        what: "writing",
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Reads `dir/name` (a procedure's manifest).
pub fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<T, HarnessError> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).map_err(|source| HarnessError::ReadManifest {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| HarnessError::Manifest { path, source })
}

#[cfg(test)]
mod tests {
    use coloc_model::profile::procedure::PinnedApp;
    use coloc_model::profile::substitute::PROBE;
    use coloc_model::testutils::app_spec;

    use super::*;

    /// A planned run's workload pins thread i of each app it names on its
    /// CPU i, starts it at once, once, appends the run's arguments to its
    /// command, and keeps everything else of the app (environment, memory and
    /// scheduling settings) as it is; an app the run names and nobody gave,
    /// or arguments for an app without a command, are errors naming it.
    #[test]
    fn pinned_workload_keeps_the_apps_but_their_threads_and_cpus() {
        let mut app = app_spec("a", 8);
        app.arrive_at = Duration::from_secs(5);
        app.repeat = 4;
        app.malleable = true;
        app.env.insert("K".into(), "V".into());
        let probe = app_spec(PROBE, 1);
        let w = Workload {
            name: "w".into(),
            epoch: Some(Duration::from_millis(50)),
            apps: vec![app.clone()],
        };
        let run = PlannedRun {
            dir: "r".into(),
            role: "co-run".into(),
            apps: vec![
                PinnedApp {
                    name: "a".into(),
                    cpus: vec![2, 0],
                    args: Vec::new(),
                },
                PinnedApp {
                    name: PROBE.into(),
                    cpus: vec![1],
                    args: vec!["--mem-node".into(), "0".into()],
                },
            ],
        };
        let pinned = pinned_workload(&w, &run, &[app.clone(), probe]).unwrap();
        assert_eq!(pinned.epoch, w.epoch);
        /// Name, threads, repeat, arrival, malleable, CPUs.
        type Kept<'a> = (&'a str, u32, u32, Duration, bool, Option<StaticMapping>);
        let got: Vec<Kept> = pinned
            .apps
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    a.threads,
                    a.repeat,
                    a.arrive_at,
                    a.malleable,
                    a.cpus.clone(),
                )
            })
            .collect();
        let per_thread = |c: &[u32]| {
            Some(StaticMapping::PerThread(
                c.iter().map(|&c| CpuSet::single(c)).collect(),
            ))
        };
        assert_eq!(
            got,
            vec![
                ("a", 2, 1, Duration::ZERO, false, per_thread(&[2, 0])),
                (PROBE, 1, 1, Duration::ZERO, false, per_thread(&[1])),
            ]
        );
        assert_eq!(
            (&pinned.apps[0].env, &pinned.apps[0].command),
            (&app.env, &app.command)
        );
        assert_eq!(
            pinned.apps[1].command,
            Some(["true", "--mem-node", "0"].map(String::from).to_vec())
        );
        let mut model = app_spec(PROBE, 1);
        model.command = None;
        let e = pinned_workload(&w, &run, &[app.clone(), model])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "run r: app \"{PROBE}\" has no command for the arguments [\"--mem-node\", \"0\"]"
            )
        );
        let e = pinned_workload(&w, &run, &[app]).unwrap_err().to_string();
        assert_eq!(e, format!("run r: no app \"{PROBE}\""));
    }
}
