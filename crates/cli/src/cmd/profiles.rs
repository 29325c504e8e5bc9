//! `coloc profiles`: what the profile store holds, and moving profiles between
//! machines.
//!
//! A profile is an app's sensitivity vector on one platform (ReSense §2.2: the
//! characterization "needs to be done only once for a particular shared resource
//! on the target platform"), so `list` and `show` name the platform of every
//! profile, and `import` keeps only the profiles measured on the importing
//! platform (this machine, or the simulated platform given with `--sim`). The
//! others are refused with the reason rather than stored: no run here would ever
//! hand them to a policy. An import that refused anything exits non-zero after
//! storing what it accepted, so a script notices.
//!
//! Reading commands (`list`, `show`, `export`) never create a store: without the
//! file there is nothing to list. A damaged, foreign or newer store file is the
//! store's error, naming the file; it is left as it was.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use coloc_harness::target::platform_fingerprint;
use coloc_model::metrics::table::{finish, new_table, NONE};
use coloc_model::profile::{render, PlatformFingerprint};
use coloc_store::{ImportReport, ProfileSummary, Store};

use crate::db::DbArgs;

#[derive(Debug, Args)]
pub struct ProfilesArgs {
    #[command(subcommand)]
    pub command: ProfilesCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// Every stored profile: the app, its platform, the score of each level with
    /// the signal it was measured with, and when it was written.
    List {
        #[command(flatten)]
        db: DbArgs,
    },
    /// The stored profiles of one app in full: per level the runs, their spread
    /// and the score.
    Show {
        /// The app's name, or its identity key (`model:NAME`, or
        /// `program:HASH:ARGV` for a program).
        app: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Write every stored profile as one JSON document.
    Export {
        /// The file to write; `-` is standard output.
        #[arg(default_value = "-")]
        file: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Store the profiles of an export that were measured on this platform; the
    /// others are refused with the reason (exit status 1).
    Import {
        /// A `coloc profiles export` file; `-` is standard input.
        file: PathBuf,
        /// Import for this simulated platform (built-in name, hwloc XML or TOML
        /// platform file) instead of this machine.
        #[arg(long, value_name = "PLATFORM")]
        sim: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
}

pub fn main(args: ProfilesArgs) -> Result<()> {
    match args.command {
        ProfilesCommand::List { db } => list(&db),
        ProfilesCommand::Show { app, db } => show(&app, &db),
        ProfilesCommand::Export { file, db } => export(&file, &db),
        ProfilesCommand::Import { file, sim, db } => import(&file, sim.as_deref(), &db),
    }
}

/// `platform`, marked when it is this machine's, so a listing shows which
/// profiles a run here can use.
fn describe_platform(platform: &PlatformFingerprint, here: Option<&PlatformFingerprint>) -> String {
    if here == Some(platform) {
        format!("{platform} (this machine)")
    } else {
        platform.to_string()
    }
}

fn list(db: &DbArgs) -> Result<()> {
    let path = db.path();
    let Some(store) = db.open_existing()? else {
        println!(
            "no profile store at {} (`coloc profile` creates it)",
            path.display()
        );
        return Ok(());
    };
    let summaries = store.list()?;
    if summaries.is_empty() {
        println!("no profiles in {}", path.display());
        return Ok(());
    }
    // Only the marker needs this machine's topology; a listing works without it.
    let here = platform_fingerprint(None).ok();
    print!("{}", list_table(&summaries, here.as_ref()));
    println!("{} profile(s) in {}", summaries.len(), path.display());
    Ok(())
}

/// One row per profile: app, platform, `LEVEL SCORE` per level, signals,
/// update time (RFC 3339, UTC).
fn list_table(summaries: &[ProfileSummary], here: Option<&PlatformFingerprint>) -> String {
    let mut table = new_table(&["app", "platform", "scores", "signal", "updated"]);
    for s in summaries {
        let scores: Vec<String> = s
            .levels
            .iter()
            .map(|(level, score)| match score {
                Some(v) => format!("{level} {v:+.2}"),
                None => format!("{level} {NONE}"),
            })
            .collect();
        let signals: Vec<String> = s.signals.iter().map(ToString::to_string).collect();
        table.add_row(vec![
            s.identity.to_string(),
            describe_platform(&s.platform, here),
            if scores.is_empty() {
                NONE.to_string()
            } else {
                scores.join(", ")
            },
            if signals.is_empty() {
                NONE.to_string()
            } else {
                signals.join(", ")
            },
            rfc3339(s.updated_unix),
        ]);
    }
    finish(&table)
}

pub(crate) fn rfc3339(unix_secs: i64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(unix_secs.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

fn show(app: &str, db: &DbArgs) -> Result<()> {
    let path = db.path();
    let Some(store) = db.open_existing()? else {
        bail!(
            "no profile store at {}: no profile of \"{app}\"",
            path.display()
        );
    };
    let chosen = store.named(app)?;
    let here = platform_fingerprint(None).ok();
    for (i, s) in chosen.iter().enumerate() {
        // Listed a moment ago; gone now only if another coloc replaced the store.
        let profile = store
            .get(&s.identity, &s.platform)?
            .with_context(|| format!("the profile of {} vanished from the store", s.identity))?;
        if i > 0 {
            println!();
        }
        println!("{}", profile.identity);
        println!(
            "  key: {}\n  platform: {}\n  updated: {}",
            profile.identity.key(),
            describe_platform(&profile.platform, here.as_ref()),
            rfc3339(s.updated_unix)
        );
        print!("{}", render(&profile));
    }
    Ok(())
}

fn export(file: &Path, db: &DbArgs) -> Result<()> {
    let path = db.path();
    let Some(store) = db.open_existing()? else {
        bail!("no profile store at {}: nothing to export", path.display());
    };
    // The whole document first, so a failing store leaves no half-written file.
    let mut json = Vec::new();
    let n = store.export_json(&mut json)?;
    json.push(b'\n');
    if file == Path::new("-") {
        std::io::stdout()
            .write_all(&json)
            .context("writing the export to standard output")?;
    } else {
        std::fs::write(file, &json).with_context(|| format!("writing {}", file.display()))?;
    }
    eprintln!(
        "exported {n} profile(s) from {} to {}",
        path.display(),
        if file == Path::new("-") {
            "standard output".to_string()
        } else {
            file.display().to_string()
        }
    );
    Ok(())
}

/// The bytes of `file`, or of standard input for `-`.
pub(crate) fn read_input(file: &Path) -> Result<Vec<u8>> {
    if file == Path::new("-") {
        let mut text = Vec::new();
        std::io::stdin()
            .read_to_end(&mut text)
            .context("reading the export from standard input")?;
        Ok(text)
    } else {
        Ok(coloc_model::user_file::read_user_file(
            file,
            coloc_model::user_file::MAX_PROFILES,
        )?)
    }
}

fn import(file: &Path, sim: Option<&str>, db: &DbArgs) -> Result<()> {
    let text = read_input(file)?;
    let platform = platform_fingerprint(sim)?;
    let store = db.open()?;
    let report = store
        .import_json(text.as_slice(), &platform)
        .with_context(|| format!("importing {}", file.display()))?;
    print!("{}", import_summary(&report, &store));
    if !report.refused.is_empty() {
        bail!(
            "{} profile(s) refused: a profile applies only on the platform it was measured on \
             (import it there, or for a simulated platform with --sim PLATFORM)",
            report.refused.len()
        );
    }
    Ok(())
}

/// What an import did, one line per profile.
fn import_summary(report: &ImportReport, store: &Store) -> String {
    let mut out = String::new();
    for id in &report.imported {
        out.push_str(&format!("imported: {id}\n"));
    }
    for r in &report.refused {
        out.push_str(&format!("refused: {}\n", r.reason));
    }
    out.push_str(&format!(
        "{} imported into {}, {} refused\n",
        report.imported.len(),
        store.path().display(),
        report.refused.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use coloc_model::profile::{
        AppIdentity, LevelProfile, LevelResult, NotCharacterizable, Signal,
    };
    use coloc_model::topology::ResourceKind;
    use coloc_model::Topology;

    use super::*;

    fn yorkfield() -> PlatformFingerprint {
        PlatformFingerprint::of(
            &Topology::synthetic("yorkfield", "package:1 l2(6M):2 core:2").unwrap(),
        )
    }

    /// The row of a profile scored at L2 (task-clock) and not at L3, and of one
    /// with no level scored.
    #[test]
    fn list_rows_show_scores_signals_and_the_platform() {
        let scored = ProfileSummary {
            identity: AppIdentity::model("sc", "streamcluster"),
            platform: yorkfield(),
            levels: vec![("L2".into(), Some(-12.345)), ("L3".into(), None)],
            signals: vec![Signal::TaskClock],
            updated_unix: 86_400,
        };
        let unscored = ProfileSummary {
            identity: AppIdentity::model("mg", "mg"),
            levels: vec![("L3".into(), None)],
            signals: vec![],
            ..scored.clone()
        };
        let text = list_table(&[scored, unscored], Some(&yorkfield()));
        let rows: Vec<&str> = text.lines().skip(2).collect();
        let cases = [
            (
                rows[0],
                [
                    "sc (model streamcluster)",
                    "(this machine)",
                    "L2 -12.35, L3 -",
                    "task-clock",
                    "1970-01-02T00:00:00Z",
                ],
            ),
            (rows[1], ["model mg", "(this machine)", "L3 -", "-", "1970"]),
        ];
        for (row, want) in cases {
            let got: Vec<&str> = row.split('|').map(str::trim).skip(1).collect();
            for (cell, part) in got.iter().zip(want) {
                assert!(cell.contains(part), "{part:?} missing in {row}");
            }
        }
    }

    /// Refusals give their reason; the count line adds up.
    #[test]
    fn import_summary_lists_each_profile() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        let profile = coloc_model::profile::AppProfile {
            sharing: None,
            identity: AppIdentity::model("sc", "streamcluster"),
            platform: yorkfield(),
            levels: vec![LevelProfile {
                level: ResourceKind::Cache { level: 2 },
                result: LevelResult::NotCharacterizable {
                    reason: NotCharacterizable::SingleInstance,
                },
            }],
        };
        store.put(&profile).unwrap();
        let mut json = Vec::new();
        store.export_json(&mut json).unwrap();
        let other = PlatformFingerprint {
            shape_hash: 1,
            ..yorkfield()
        };
        let report = store.import_json(json.as_slice(), &other).unwrap();
        let text = import_summary(&report, &store);
        assert!(
            text.contains("refused: sc (model streamcluster) was measured on"),
            "{text}"
        );
        let last = format!("0 imported into {}, 1 refused\n", store.path().display());
        assert!(text.ends_with(&last), "{text}");
    }
}
