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
use coloc_model::knowledge::derive::{overview, Overview};
use coloc_model::knowledge::ProgramKey;
use coloc_model::metrics::table::{finish, fixed, new_table, NONE};
use coloc_model::profile::{render, PlatformFingerprint};
use coloc_store::{ProgramSummary, Store};

use super::profiles::{platform, read_input, rfc3339};
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
        /// The program: a name it ran under, or the start of its key (the
        /// executable's hash, or `model:NAME`).
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
    Ok(Some((store, platform(at.sim.as_deref())?)))
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

/// The programs `what` names on `platform`: by a name they ran under, or by
/// the start of their key (with or without `sha256:`).
fn chosen(
    store: &Store,
    platform: &PlatformFingerprint,
    what: &str,
) -> Result<Vec<ProgramSummary>> {
    let all = store.programs(Some(platform))?;
    let key_start = |p: &ProgramKey| {
        let key = p.key();
        key.starts_with(what)
            || key
                .strip_prefix("sha256:")
                .is_some_and(|k| k.starts_with(what))
    };
    let found: Vec<ProgramSummary> = all
        .iter()
        .filter(|p| p.name == what || key_start(&p.program))
        .cloned()
        .collect();
    if found.is_empty() {
        let mut names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        bail!(
            "no program \"{what}\" known on {platform} in {} (known: {})",
            store.path().display(),
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        );
    }
    Ok(found)
}

fn show(what: &str, at: &Where) -> Result<()> {
    let Some((store, platform)) = open_existing(at)? else {
        bail!(
            "no store at {}: nothing learned yet",
            at.db.path().display()
        );
    };
    let cpus = cpus_of(at)?;
    let profiles = store.for_platform(&platform)?;
    for (i, p) in chosen(&store, &platform, what)?.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let records = store.records(&platform, &p.program)?;
        println!("{} ({})", p.name, p.program);
        println!("  key: {}\n  platform: {platform}", p.program.key());
        print!("{}", render_overview(&overview(&records, cpus)));
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

/// The CPUs of the platform asked for (rates are shares of a program's
/// fastest solo time on them).
fn cpus_of(at: &Where) -> Result<u32> {
    let topology = match &at.sim {
        Some(p) => coloc_harness::resolve_platform(p)?.topology,
        None => {
            coloc_linux::topology::host_topology().context("reading the topology from sysfs")?
        }
    };
    Ok(topology.cpus().len() as u32)
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

fn forget(what: &str, at: &Where) -> Result<()> {
    let Some((store, platform)) = open_existing(at)? else {
        bail!("no store at {}: nothing to forget", at.db.path().display());
    };
    for p in chosen(&store, &platform, what)? {
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
    let platform = platform(at.sim.as_deref())?;
    let store = at.db.open()?;
    let got = store
        .import_knowledge(text.as_slice(), &platform)
        .with_context(|| format!("importing {}", file.display()))?;
    println!(
        "imported {} record(s) and {} profile(s) into {}",
        got.records,
        got.profiles,
        store.path().display()
    );
    Ok(())
}
