//! `coloc knowledge`: what coloc learned of each program from the runs it
//! managed (docs/knowledge.md) — list, show one program, forget, and move it
//! between machines of one platform (export, import).
//!
//! Knowledge is per platform (this machine, or the simulated platform given
//! with `--sim`): a solo time measured on one machine says nothing of
//! another. So `import` refuses an export of another platform, whole.
//! Reading commands never create a store.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use coloc_harness::target::{platform_fingerprint, platform_topology};
use coloc_model::knowledge::derive::{overview, Overview};
use coloc_model::knowledge::{trials, ProgramKey};
use coloc_model::metrics::table::{finish, fixed, new_table, NONE};
use coloc_model::profile::{render, PlatformFingerprint};
use coloc_store::{ProgramSummary, Store};

use super::profiles::{read_input, rfc3339};
use crate::db::DbArgs;

#[derive(Debug, Args)]
pub struct KnowledgeArgs {
    #[command(subcommand)]
    pub command: KnowledgeCommand,
}

/// Which platform's knowledge, and in which store.
#[derive(Debug, Clone, Args)]
pub struct Where {
    /// A simulated platform's knowledge (built-in name, hwloc XML or TOML
    /// platform file) instead of this machine's.
    #[arg(long, value_name = "PLATFORM")]
    pub sim: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// Every program known on this platform: its name, its key (executable
    /// hash and arguments), how many records and when it last ran.
    List {
        #[command(flatten)]
        at: Where,
    },
    /// What is known of one program: solo times per team size, region
    /// structure and progress, rates beside others, and its profiles.
    Show {
        /// The program: a name it ran under (every build of it), or, when no
        /// program has that name, the start of its key (the executable's
        /// hash, at least 4 characters, or `model:NAME`) shared by no other
        /// executable.
        program: String,
        #[command(flatten)]
        at: Where,
    },
    /// Forget the programs PROGRAM names (every record, on this platform).
    Forget {
        /// As for `show`.
        program: String,
        #[command(flatten)]
        at: Where,
    },
    /// Write what is known on this platform (records and profiles) as one
    /// JSON document.
    Export {
        /// The file to write; `-` is standard output.
        #[arg(default_value = "-")]
        file: PathBuf,
        #[command(flatten)]
        at: Where,
    },
    /// Add an export made on a machine of this platform; one of another
    /// platform is refused.
    Import {
        /// A `coloc knowledge export` file; `-` is standard input.
        file: PathBuf,
        #[command(flatten)]
        at: Where,
    },
}

pub fn main(args: KnowledgeArgs) -> Result<()> {
    match args.command {
        KnowledgeCommand::List { at } => list(&at),
        KnowledgeCommand::Show { program, at } => show(&program, &at),
        KnowledgeCommand::Forget { program, at } => forget(&program, &at),
        KnowledgeCommand::Export { file, at } => export(&file, &at),
        KnowledgeCommand::Import { file, at } => import(&file, &at),
    }
}

/// The store if its file exists, and the platform asked for.
fn open_existing(at: &Where) -> Result<Option<(Store, PlatformFingerprint)>> {
    let Some(store) = at.db.open_existing()? else {
        return Ok(None);
    };
    Ok(Some((store, platform_fingerprint(at.sim.as_deref())?)))
}

fn list(at: &Where) -> Result<()> {
    let path = at.db.path();
    let Some((store, platform)) = open_existing(at)? else {
        println!("no store at {}: nothing learned yet", path.display());
        return Ok(());
    };
    let programs = store.programs(Some(&platform))?;
    if programs.is_empty() {
        println!("nothing learned on {platform} in {}", path.display());
        return Ok(());
    }
    print!("{}", list_table(&programs));
    println!(
        "{} program(s) on {platform} in {}",
        programs.len(),
        path.display()
    );
    Ok(())
}

fn list_table(programs: &[ProgramSummary]) -> String {
    let mut table = new_table(&["name", "program", "records", "last run"]);
    for p in programs {
        table.add_row(vec![
            p.name.clone(),
            p.program.to_string(),
            p.records.to_string(),
            rfc3339(p.last_unix),
        ]);
    }
    finish(&table)
}

fn show(what: &str, at: &Where) -> Result<()> {
    let Some((store, platform)) = open_existing(at)? else {
        bail!(
            "no store at {}: nothing learned yet",
            at.db.path().display()
        );
    };
    // Rates are shares of a program's fastest solo time on the platform's CPUs.
    let cpus = platform_topology(at.sim.as_deref())?.cpus().len() as u32;
    let profiles = store.for_platform(&platform)?;
    for (i, p) in store.chosen(&platform, what)?.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let records = store.records(&platform, &p.program)?;
        println!("{} ({})", p.name, p.program);
        println!("  key: {}\n  platform: {platform}", p.program.key());
        print!("{}", render_overview(&overview(&records, cpus)));
        let pairs = store.pairs_with(&platform, std::slice::from_ref(&p.program))?;
        print!("{}", render_sets(&trials::summaries(&pairs)));
        for profile in profiles
            .iter()
            .filter(|f| ProgramKey::of_identity(&f.identity) == p.program)
        {
            println!("profile ({}):", profile.identity);
            print!("{}", render(profile));
        }
    }
    Ok(())
}

/// The tables of `coloc knowledge show`.
fn render_overview(o: &Overview) -> String {
    let mut out = format!(
        "  {} record(s), {} of them snapshot(s) of a run still going\n",
        o.records, o.snapshots
    );
    if o.solo.is_empty() {
        out.push_str("solo times: none (it never ran alone on the whole machine)\n");
    } else {
        let mut t = new_table(&["team", "solo s", "runs"]);
        for (k, secs, n) in &o.solo {
            t.add_row(vec![k.to_string(), fixed(Some(*secs), 3), n.to_string()]);
        }
        out.push_str(&format!("solo times:\n{}", finish(&t)));
    }
    if !o.openmp.is_empty() {
        let mut t = new_table(&[
            "arrangement",
            "records",
            "regions",
            "s per region",
            "serial",
            "progress /s",
        ]);
        for r in &o.openmp {
            t.add_row(vec![
                r.arrangement.to_string(),
                r.records.to_string(),
                fixed(Some(r.regions), 0),
                fixed(r.mean_region_secs, 4),
                fixed(r.serial_fraction, 3),
                r.progress
                    .map_or(NONE.to_string(), |(v, unit)| format!("{v:.1} {unit}")),
            ]);
        }
        out.push_str(&format!("OpenMP regions and progress:\n{}", finish(&t)));
    }
    if !o.beside.is_empty() {
        let mut t = new_table(&["beside", "arrangement", "rate", "records"]);
        for b in &o.beside {
            t.add_row(vec![
                b.partner.clone().unwrap_or_else(|| "others".into()),
                b.arrangement.to_string(),
                fixed(Some(b.rate), 3),
                b.records.to_string(),
            ]);
        }
        out.push_str(&format!(
            "rates beside others (share of its speed alone):\n{}",
            finish(&t)
        ));
    }
    out
}

/// The sets of programs `auto`'s trials measured the program in
/// (docs/knowledge.md, Trials of a set of programs): what the next trial of
/// each starts from.
fn render_sets(sets: &[trials::SetSummary]) -> String {
    if sets.is_empty() {
        return String::new();
    }
    let mut t = new_table(&[
        "set",
        "arrangement",
        "pairs stored",
        "next trial starts from",
        "verdicts (Linux)",
        "newest",
    ]);
    for s in sets {
        let logs = &s.prior.logs;
        let mean = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
        t.add_row(vec![
            s.names.join(" + "),
            if s.round == 1 {
                "partitions".into()
            } else {
                format!("gang, {} turns", s.round)
            },
            s.pairs.to_string(),
            format!(
                "{} pair(s) of {} trial(s), own / Linux {mean:.3}",
                logs.len(),
                s.prior.trials
            ),
            format!("{} ({})", s.prior.verdicts, s.prior.linux),
            rfc3339(s.prior.newest_unix),
        ]);
    }
    format!(
        "auto's trials beside others (own arrangement against Linux):\n{}",
        finish(&t)
    )
}

fn forget(what: &str, at: &Where) -> Result<()> {
    let Some((store, platform)) = open_existing(at)? else {
        bail!("no store at {}: nothing to forget", at.db.path().display());
    };
    for p in store.chosen(&platform, what)? {
        let n = store.forget(&platform, &p.program)?;
        println!("forgot {} ({}): {n} record(s)", p.name, p.program);
    }
    Ok(())
}

fn export(file: &Path, at: &Where) -> Result<()> {
    let Some((store, platform)) = open_existing(at)? else {
        bail!("no store at {}: nothing to export", at.db.path().display());
    };
    // The whole document first, so a failing store leaves no half-written file.
    let mut json = Vec::new();
    let n = store.export_knowledge(&platform, &mut json)?;
    json.push(b'\n');
    if file == Path::new("-") {
        std::io::stdout()
            .write_all(&json)
            .context("writing the export to standard output")?;
    } else {
        std::fs::write(file, &json).with_context(|| format!("writing {}", file.display()))?;
    }
    eprintln!(
        "exported {n} record(s) of {platform} from {}",
        store.path().display()
    );
    Ok(())
}

fn import(file: &Path, at: &Where) -> Result<()> {
    let text = read_input(file)?;
    let platform = platform_fingerprint(at.sim.as_deref())?;
    let store = at.db.open()?;
    let got = store
        .import_knowledge(text.as_slice(), &platform)
        .with_context(|| format!("importing {}", file.display()))?;
    println!(
        "imported {} record(s), {} profile(s) and {} trial pair(s) into {}",
        got.records,
        got.profiles,
        got.pairs,
        store.path().display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set's stored trials: its names, the pairs its next trial starts
    /// from (those of the trial that dropped the stored verdict on, their
    /// geometric mean) and every trial's verdict.
    #[test]
    fn show_lists_the_sets_a_program_was_tried_in() {
        use coloc_model::knowledge::trials::SetPair;
        let pair = |trial: &str, ratio: f64, verdict, dropped_prior| SetPair {
            programs: vec![ProgramKey::model("a"), ProgramKey::model("b")],
            names: vec!["blas".into(), "xz".into()],
            round: 1,
            log_ratio: f64::ln(ratio),
            verdict,
            dropped_prior,
            trial: trial.into(),
            seq: 1,
            at_unix: 1_800_000_000,
        };
        let pairs = [
            pair("t1", 0.7, Some(false), false),
            pair("t2", 1.2, None, true),
            pair("t2", 1.3, Some(true), true),
        ];
        let text = render_sets(&trials::summaries(&pairs));
        assert!(text.contains("blas + xz"), "{text}");
        assert!(text.contains("partitions"), "{text}");
        let mean = (1.2f64 * 1.3).sqrt();
        assert!(
            text.contains(&format!("2 pair(s) of 1 trial(s), own / Linux {mean:.3}")),
            "{text}"
        );
        assert!(text.contains("2 (1)"), "{text}");
        assert!(text.contains("2027-01-15T08:00:00Z"), "{text}");
        assert_eq!(render_sets(&[]), "");
    }
}
