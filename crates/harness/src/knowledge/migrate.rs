//! The files earlier coloc versions kept per workload and machine in
//! `solo/` under the data directory — solo times (`W-M.json`), solo times
//! per thread count (`W-M-threads.json`) and co-run rates (`W-M-coruns.json`)
//! — taken into the store once, under the programs the workload's apps run
//! now (the files named apps, not programs), and renamed `….migrated`.
//!
//! The files kept rates, not the seconds a record keeps, so a rate `r` of an
//! app whose fastest solo time is `T` is stored as a life of `T / r` seconds
//! shared throughout with one other: the same rate comes back
//! (`coloc_model::knowledge::derive`). The files did not say how the
//! machine was shared, so these records count as `mixed`.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use coloc_model::knowledge::{Arrangement, Partner, ProgramKey, Record, Source};
use coloc_model::metrics::corun::CoRun;
use coloc_model::metrics::{CoRuns, SoloCurves, SoloTimes};
use coloc_model::Workload;
use serde::de::DeserializeOwned;

use super::Knowledge;
use crate::data::data_dir;
use crate::{HarnessError, Target};

/// Migrates whichever of `workload`'s files on `target` exist and were not
/// migrated; says what it did with each.
pub fn legacy_files(
    k: &Knowledge,
    target: &Target,
    workload: &Workload,
) -> Result<Vec<String>, HarnessError> {
    let dir = data_dir().join("solo");
    let base = format!("{}-{}", workload.name, target.key());
    let mut said = Vec::new();
    if k.programs.iter().any(Option::is_none) {
        // Records of an app whose program is not there would be lost: the
        // files wait for a run that can identify them all.
        return Ok(said);
    }
    let mut read = |file: &Path| -> Option<String> {
        match std::fs::read_to_string(file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                said.push(format!(
                    "warning: reading {}: {e}; left as it is",
                    file.display()
                ));
                None
            }
        }
    };
    let curves_file = dir.join(format!("{base}-threads.json"));
    let times_file = dir.join(format!("{base}.json"));
    let coruns_file = dir.join(format!("{base}-coruns.json"));
    let texts = [read(&curves_file), read(&times_file), read(&coruns_file)];
    let [curves, times, coruns] = texts;
    let curves: Option<SoloCurves> = parse(&curves_file, curves, &mut said);
    let times: Option<SoloTimes> = parse(&times_file, times, &mut said);
    let coruns: Option<CoRuns> = parse(&coruns_file, coruns, &mut said);
    let apps = Apps { k, workload };
    if let Some(c) = &curves {
        said.extend(put(k, &curves_file, apps.of_curves(&curves_file, c))?);
    }
    if let Some(t) = &times {
        said.extend(put(k, &times_file, apps.of_times(&times_file, t))?);
    }
    if let Some(c) = &coruns {
        let records = apps.of_coruns(&coruns_file, c, &curves.unwrap_or_default());
        said.extend(put(k, &coruns_file, records)?);
    }
    Ok(said)
}

/// `text` of `file` parsed; a file that does not parse is left alone, said.
fn parse<T: DeserializeOwned>(
    file: &Path,
    text: Option<String>,
    said: &mut Vec<String>,
) -> Option<T> {
    match serde_json::from_str(&text?) {
        Ok(v) => Some(v),
        Err(e) => {
            said.push(format!(
                "warning: {} is not a solo-time or co-run file ({e}); left as it is",
                file.display()
            ));
            None
        }
    }
}

/// Stores `records` as migrated from `file` (once), then renames the file.
fn put(k: &Knowledge, file: &Path, records: Vec<Record>) -> Result<Option<String>, HarnessError> {
    let name = file.display().to_string();
    let added = k.store.put_migrated(&name, &k.platform, &records)?;
    let mut done = file.as_os_str().to_owned();
    done.push(".migrated");
    let renamed = std::fs::rename(file, PathBuf::from(&done)).is_ok();
    Ok(added.then(|| {
        format!(
            "migrated {} record(s) of {name} into {}{}",
            records.len(),
            k.path().display(),
            if renamed {
                format!(" (the file is now {})", PathBuf::from(done).display())
            } else {
                String::new()
            }
        )
    }))
}

/// The workload's apps by name, with their programs.
struct Apps<'a> {
    k: &'a Knowledge,
    workload: &'a Workload,
}

impl Apps<'_> {
    /// The program of the app named `name`, and its own thread count.
    fn program(&self, name: &str) -> Option<(ProgramKey, u32)> {
        let i = self.workload.apps.iter().position(|a| a.name == name)?;
        let p = self.k.programs.get(i)?.clone()?;
        Some((p, self.workload.apps[i].threads_on(self.k.cpus as usize)))
    }

    /// A migrated solo-time record.
    fn solo(&self, file: &Path, n: usize, app: &str, threads: u32, wall: f64) -> Option<Record> {
        let (program, _) = self.program(app)?;
        Some(Record::solo_time(
            program,
            app.to_string(),
            format!("migrated:{}:{n}", file.display()),
            threads,
            wall,
            Source::Migrated,
            modified(file),
        ))
    }

    fn of_times(&self, file: &Path, t: &SoloTimes) -> Vec<Record> {
        let mut out = Vec::new();
        for (app, walls) in t.runs() {
            let Some((_, threads)) = self.program(app) else {
                continue;
            };
            for w in walls {
                out.extend(self.solo(file, out.len(), app, threads, *w));
            }
        }
        out
    }

    fn of_curves(&self, file: &Path, c: &SoloCurves) -> Vec<Record> {
        let mut out = Vec::new();
        for (app, k, wall, cpu) in c.runs() {
            if let Some(mut r) = self.solo(file, out.len(), app, k, wall) {
                r.cpu_secs = cpu;
                out.push(r);
            }
        }
        out
    }

    /// A rate `rate` of `app` beside `partner` (None: others) as a life of
    /// `T / rate` seconds shared throughout (module docs).
    fn rate(
        &self,
        file: &Path,
        n: usize,
        app: &str,
        partner: Option<&str>,
        rate: f64,
        solo: &SoloCurves,
    ) -> Option<Record> {
        let (program, _) = self.program(app)?;
        let life = solo.fastest(app, self.k.cpus)? / rate;
        let partner = match partner {
            Some(p) => Partner::Program {
                program: self.program(p)?.0,
                name: p.to_string(),
            },
            None => Partner::Others { instances: 0 },
        };
        Some(Record {
            program,
            name: app.to_string(),
            instance: format!("migrated:{}:{n}", file.display()),
            threads: None,
            arrangement: Arrangement::Mixed,
            partner,
            source: Source::Migrated,
            at_unix: modified(file),
            ended: true,
            wall_secs: life,
            cpu_secs: None,
            shared_secs: life,
            weighted_secs: life,
            omp: None,
        })
    }

    fn of_coruns(&self, file: &Path, c: &CoRuns, solo: &SoloCurves) -> Vec<Record> {
        let mut out = Vec::new();
        for run in c.runs() {
            let sides: Vec<(&str, Option<&str>, f64)> = match run {
                CoRun::Pair(p) => vec![
                    (&p.apps[0], Some(&p.apps[1]), p.rates[0]),
                    (&p.apps[1], Some(&p.apps[0]), p.rates[1]),
                ],
                CoRun::Beside(b) => vec![(&b.app, Some(&b.partner), b.rate)],
                CoRun::Shared(s) => vec![(&s.app, None, s.rate)],
            };
            for (app, partner, rate) in sides {
                out.extend(self.rate(file, out.len(), app, partner, rate, solo));
            }
        }
        out
    }
}

/// When `file` was last written, seconds since the Unix epoch (0 unknown).
fn modified(file: &Path) -> i64 {
    std::fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}
