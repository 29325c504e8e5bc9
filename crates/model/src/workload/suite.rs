//! The files of the real-program bench suite (`bench/suite/README.md`).
//!
//! - **A program** is a workload file of exactly one `[[app]]` with a
//!   `[suite]` table: what kind of program it is and what must be on the
//!   machine for it to run (its commands and input files). Because it is a
//!   workload file, `coloc run`, `coloc solo` and `coloc compare` run a
//!   program alone as they run any workload, and the workload parser checks
//!   the `[suite]` table wherever the file is read.
//! - **The settings** (`suite.toml`) say how mixes are drawn (2–4 programs,
//!   arrivals in [0, horizon]) and which seeds were used while tuning
//!   policies and which are held out, so a report can say which set each
//!   seed it ran belongs to.
//!
//! Pure, like the rest of the workload module: the CLI reads the directory,
//! checks `needs` against the machine, and draws mixes
//! (`coloc_sim::gen::suite_mix`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use toml::de::DeTable;

use super::error::{Source, WorkloadError};
use super::fields::Fields;
use super::AppSpec;

/// How a program runs in parallel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramKind {
    /// OpenMP on libgomp or LLVM's libomp: the DoP shim can see (and, where
    /// the program is malleable, change) its teams.
    Openmp,
    /// POSIX threads (or a pipeline of programs that use them).
    Pthreads,
    /// Several processes.
    Processes,
}

impl fmt::Display for ProgramKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgramKind::Openmp => "openmp",
            ProgramKind::Pthreads => "pthreads",
            ProgramKind::Processes => "processes",
        })
    }
}

/// A program's `[suite]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteEntry {
    pub kind: ProgramKind,
    /// The Debian packages it comes from (`scripts/setup --bench` installs
    /// them).
    pub packages: Vec<String>,
    /// What must exist for it to run: a name without `/` is a command looked
    /// up on PATH, anything else a path (relative ones from the repository
    /// root, where the bench runs).
    pub needs: Vec<String>,
}

/// A program of the suite: its `[suite]` table and its one app.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteProgram {
    pub suite: SuiteEntry,
    pub app: AppSpec,
}

const SUITE_KEYS: &[&str] = &["kind", "packages", "needs"];

/// The `[suite]` table of a workload file, if it has one, checked.
pub(super) fn suite_entry(top: &Fields<'_, '_>) -> Result<Option<SuiteEntry>, WorkloadError> {
    let Some(t) = top.table("suite", SUITE_KEYS, "[suite]")? else {
        return Ok(None);
    };
    let kind = t
        .choice(
            "kind",
            &[
                ("openmp", ProgramKind::Openmp),
                ("pthreads", ProgramKind::Pthreads),
                ("processes", ProgramKind::Processes),
            ],
        )?
        .ok_or_else(|| {
            t.missing(
                "kind",
                "say how the program runs in parallel: \"openmp\", \"pthreads\" or \"processes\"",
            )
        })?;
    let packages = t
        .strings("packages", "a Debian package name")?
        .unwrap_or_default();
    let needs = t
        .strings("needs", "a command on PATH or a file path")?
        .unwrap_or_default();
    Ok(Some(SuiteEntry {
        kind,
        packages,
        needs,
    }))
}

/// Seeds `first..=last`, written `A..B` (both included) or `A` for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeedRange {
    pub first: u64,
    pub last: u64,
}

impl SeedRange {
    pub fn contains(&self, seed: u64) -> bool {
        (self.first..=self.last).contains(&seed)
    }

    pub fn seeds(&self) -> impl Iterator<Item = u64> {
        self.first..=self.last
    }

    /// How many seeds it holds.
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    /// Never: a range holds at least its first seed.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn overlaps(&self, other: &SeedRange) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}..{}", self.first, self.last)
        }
    }
}

/// Why a seed range was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a seed range: expected A..B (both included, A <= B) or one seed A")]
pub struct BadSeedRange(pub String);

impl FromStr for SeedRange {
    type Err = BadSeedRange;
    fn from_str(s: &str) -> Result<Self, BadSeedRange> {
        let bad = || BadSeedRange(s.to_string());
        let num = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
        let (first, last) = match s.split_once("..") {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(s)?, num(s)?),
        };
        if first > last {
            return Err(bad());
        }
        Ok(SeedRange { first, last })
    }
}

/// Which set a seed belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedSet {
    /// Used while tuning policies: results on it flatter them.
    Tuning,
    /// Never used while tuning: the seeds to report on.
    HeldOut,
    /// In neither set.
    Other,
}

impl fmt::Display for SeedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SeedSet::Tuning => "tuning",
            SeedSet::HeldOut => "held out",
            SeedSet::Other => "neither set",
        })
    }
}

/// The suite's `suite.toml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteSettings {
    /// Seeds policies may be tuned on.
    pub tuning: SeedRange,
    /// Seeds never used while tuning.
    pub held_out: SeedRange,
    /// Programs per mix, at least.
    pub min_apps: usize,
    /// Programs per mix, at most.
    pub max_apps: usize,
    /// Arrivals after the first fall in [0, horizon].
    pub horizon: Duration,
}

impl SuiteSettings {
    pub fn set_of(&self, seed: u64) -> SeedSet {
        if self.tuning.contains(seed) {
            SeedSet::Tuning
        } else if self.held_out.contains(seed) {
            SeedSet::HeldOut
        } else {
            SeedSet::Other
        }
    }
}

const SETTINGS_KEYS: &[&str] = &["tuning", "held_out", "min_apps", "max_apps", "horizon"];

/// Parses the suite's settings file. Pure: reads nothing but `text`.
pub fn parse_settings(file: &str, text: &str) -> Result<SuiteSettings, WorkloadError> {
    let src = Source { file, text };
    let doc = DeTable::parse(text).map_err(|e| src.syntax(&e))?;
    let top = Fields::new(
        src,
        None,
        String::new(),
        doc.get_ref(),
        doc.span(),
        SETTINGS_KEYS,
        "the suite's settings",
    )?;
    let range = |key: &str| -> Result<SeedRange, WorkloadError> {
        let (s, span) = top.str(key)?.ok_or_else(|| {
            top.missing(key, "a seed range such as \"1..10\" (both ends included)")
        })?;
        s.parse::<SeedRange>()
            .map_err(|e| top.error(&span, key, e.to_string()))
    };
    let tuning = range("tuning")?;
    let held_out = range("held_out")?;
    if tuning.overlaps(&held_out) {
        let (_, span) = top.str("held_out")?.expect("read above");
        return Err(top.error(
            &span,
            "held_out",
            format!(
                "the held-out seeds {held_out} overlap the tuning seeds {tuning}: a seed \
                 used while tuning is not held out"
            ),
        ));
    }
    let count = |key: &str, default: usize| -> Result<usize, WorkloadError> {
        Ok(top
            .int(key, 1..=64, "a whole number from 1 to 64")?
            .map_or(default, |n| n as usize))
    };
    let min_apps = count("min_apps", 2)?;
    let max_apps = count("max_apps", 4)?;
    if max_apps < min_apps {
        let v = top
            .get("max_apps")
            .or(top.get("min_apps"))
            .expect("one is set");
        return Err(top.error(
            &v.span(),
            "max_apps",
            format!("expected at least min_apps ({min_apps}), found {max_apps}"),
        ));
    }
    let horizon = top.duration("horizon")?.unwrap_or(Duration::from_secs(8));
    Ok(SuiteSettings {
        tuning,
        held_out,
        min_apps,
        max_apps,
        horizon,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parse_program;

    const PROGRAM: &str = r#"
[suite]
kind = "openmp"
packages = ["clustalo"]
needs = ["clustalo", "bench/data/suite/seqs.fa"]

[[app]]
name = "clustalo"
command = ["clustalo", "-i", "bench/data/suite/seqs.fa"]
threads = 2
"#;

    #[test]
    fn a_program_is_a_workload_of_one_app_with_a_suite_table() {
        let p = parse_program("clustalo.toml", PROGRAM).unwrap();
        assert_eq!(p.suite.kind, ProgramKind::Openmp);
        assert_eq!(p.suite.packages, ["clustalo"]);
        assert_eq!(p.suite.needs, ["clustalo", "bench/data/suite/seqs.fa"]);
        assert_eq!(p.app.name, "clustalo");
        assert_eq!(p.app.threads, 2);
        // The same file runs as an ordinary workload.
        let w = super::super::parse_workload("clustalo.toml", PROGRAM).unwrap();
        assert_eq!(w.apps, [p.app]);
    }

    /// Each refusal names the field and the line it is on.
    #[test]
    fn bad_programs_name_the_field() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "[[app]]\nname = \"a\"\ncommand = [\"true\"]\n",
                "field `suite`",
                "needs a [suite] table",
            ),
            (
                "[suite]\nkind = \"mpi\"\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\n",
                ":2:8: field `suite.kind`",
                "one of \"openmp\", \"pthreads\", \"processes\"",
            ),
            (
                "[suite]\npackages = [\"x\"]\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\n",
                "field `suite.kind`",
                "missing",
            ),
            (
                "[suite]\nkind = \"openmp\"\nneeds = [\"\"]\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\n",
                ":3:10: field `suite.needs[0]`",
                "a command on PATH or a file path",
            ),
            (
                "[suite]\nkind = \"openmp\"\nneed = []\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\n",
                "field `suite.need`",
                "did you mean `needs`?",
            ),
            (
                "[suite]\nkind = \"openmp\"\n[[app]]\nname = \"a\"\ncommand = [\"true\"]\n[[app]]\nname = \"b\"\ncommand = [\"true\"]\n",
                ":6:1: field `app`",
                "found 2 [[app]] tables",
            ),
        ];
        for (text, place, message) in cases {
            let e = parse_program("p.toml", text).unwrap_err().to_string();
            assert!(e.contains(place) && e.contains(message), "{text}\n-> {e}");
        }
        // A bad [suite] table is refused by the workload parser too.
        let e = super::super::parse_workload("p.toml", cases[1].0).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("suite.kind"));
    }

    #[test]
    fn seed_ranges_include_both_ends() {
        let r: SeedRange = "101..130".parse().unwrap();
        assert_eq!((r.first, r.last, r.len()), (101, 130, 30));
        assert!(r.contains(101) && r.contains(130) && !r.contains(131));
        assert_eq!(r.to_string(), "101..130");
        let one: SeedRange = "7".parse().unwrap();
        assert_eq!(one.seeds().collect::<Vec<_>>(), [7]);
        assert_eq!(one.to_string(), "7");
        for bad in ["", "5..3", "a..b", "1..", "-1"] {
            assert!(bad.parse::<SeedRange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_say_which_set_a_seed_is_in() {
        let s = parse_settings(
            "suite.toml",
            "tuning = \"1..10\"\nheld_out = \"101..130\"\nhorizon = \"6s\"\n",
        )
        .unwrap();
        assert_eq!((s.min_apps, s.max_apps), (2, 4));
        assert_eq!(s.horizon, Duration::from_secs(6));
        assert_eq!(s.set_of(3), SeedSet::Tuning);
        assert_eq!(s.set_of(115), SeedSet::HeldOut);
        assert_eq!(s.set_of(50), SeedSet::Other);
        assert_eq!(SeedSet::HeldOut.to_string(), "held out");
    }

    #[test]
    fn bad_settings_name_the_field() {
        let cases: &[(&str, &str)] = &[
            ("held_out = \"101..130\"\n", "field `tuning`: missing"),
            (
                "tuning = \"1..10\"\nheld_out = \"5..20\"\n",
                ":2:12: field `held_out`: the held-out seeds 5..20 overlap the tuning seeds 1..10",
            ),
            (
                "tuning = \"10..1\"\nheld_out = \"20\"\n",
                ":1:10: field `tuning`: \"10..1\" is not a seed range",
            ),
            (
                "tuning = \"1\"\nheld_out = \"2\"\nmin_apps = 3\nmax_apps = 2\n",
                "field `max_apps`: expected at least min_apps (3), found 2",
            ),
            (
                "tuning = \"1\"\nheld_out = \"2\"\nmax_apps = 0\n",
                "field `max_apps`: expected a whole number from 1 to 64",
            ),
            (
                "tuning = \"1\"\nheld_out = \"2\"\nseeds = 3\n",
                "unknown key `seeds`",
            ),
        ];
        for (text, want) in cases {
            let e = parse_settings("suite.toml", text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}\n-> {e}");
        }
    }
}
