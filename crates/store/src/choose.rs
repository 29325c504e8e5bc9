//! Which programs a user's argument names (`coloc knowledge show` and
//! `forget`, docs/knowledge.md): a name they ran under, or the start of their
//! key. `forget` deletes what it names, so a short or shared start names
//! nothing rather than another program's records. And which stored profiles
//! an app's name or identity key names (`coloc profiles show`).

use coloc_model::profile::PlatformFingerprint;

use crate::{ProfileSummary, ProgramSummary, Store, StoreError};

/// The shortest start of an executable's hash that names a program (git's
/// shortest abbreviation): a shorter argument is only a name, so a typo or a
/// one-letter name never reaches another program's records.
pub const MIN_KEY_START: usize = 4;

/// Why an argument named no program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unchosen {
    #[error(
        "no program named \"{what}\" (a key's start needs at least {MIN_KEY_START} characters)"
    )]
    TooShort { what: String },
    #[error("no program \"{what}\"")]
    NoProgram { what: String },
    #[error("\"{what}\" starts the keys of {executables} executables ({listed}): give more of it")]
    Shared {
        what: String,
        executables: usize,
        /// Each program it starts the key of, as `NAME KEY`.
        listed: String,
    },
}

/// The programs `what` names among `all`: those that ran under that name
/// (every build of it); else, when no program has that name, those whose
/// key starts with `what` (with or without `sha256:`, at least
/// [`MIN_KEY_START`] characters), all of one executable. The error says why
/// nothing was chosen: no such name, too short a start, or a start shared
/// by several executables (listed).
pub fn choose(all: &[ProgramSummary], what: &str) -> Result<Vec<ProgramSummary>, Unchosen> {
    let named: Vec<ProgramSummary> = all.iter().filter(|p| p.name == what).cloned().collect();
    if !named.is_empty() {
        return Ok(named);
    }
    let start = what.strip_prefix("sha256:").unwrap_or(what);
    if start.chars().count() < MIN_KEY_START {
        return Err(Unchosen::TooShort { what: what.into() });
    }
    let found: Vec<ProgramSummary> = all
        .iter()
        .filter(|p| {
            let key = p.program.key();
            key.strip_prefix("sha256:")
                .unwrap_or(&key)
                .starts_with(start)
        })
        .cloned()
        .collect();
    let mut exes: Vec<&str> = found.iter().map(|p| p.program.exe.as_str()).collect();
    exes.sort_unstable();
    exes.dedup();
    match exes.len() {
        0 => Err(Unchosen::NoProgram { what: what.into() }),
        1 => Ok(found),
        executables => Err(Unchosen::Shared {
            what: what.into(),
            executables,
            listed: found
                .iter()
                .map(|p| format!("{} {}", p.name, p.program))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

impl Store {
    /// The programs `what` names on `platform` ([`choose`]); the error names
    /// the platform, the store and the names it knows there.
    pub fn chosen(
        &self,
        platform: &PlatformFingerprint,
        what: &str,
    ) -> Result<Vec<ProgramSummary>, StoreError> {
        let all = self.programs(Some(platform))?;
        choose(&all, what).map_err(|why| StoreError::Unchosen {
            why: Box::new(why),
            platform: platform.to_string(),
            path: self.path().to_path_buf(),
            known: known(all.iter().map(|p| p.name.as_str())),
        })
    }

    /// The stored profiles of the app `app` names: its name or its identity
    /// key ([`coloc_model::profile::AppIdentity::key`]), on every platform;
    /// the error names the store and the apps it holds.
    pub fn named(&self, app: &str) -> Result<Vec<ProfileSummary>, StoreError> {
        let all = self.list()?;
        let chosen: Vec<ProfileSummary> = all
            .iter()
            .filter(|s| s.identity.name == app || s.identity.key() == app)
            .cloned()
            .collect();
        if !chosen.is_empty() {
            return Ok(chosen);
        }
        Err(StoreError::NoProfile {
            app: app.into(),
            path: self.path().to_path_buf(),
            known: known(all.iter().map(|s| s.identity.name.as_str())),
        })
    }
}

/// `names` sorted, each once, comma-separated; `none` when there is none.
fn known<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::knowledge::ProgramKey;

    use super::*;

    fn summary(name: &str, exe: &str, args: &[&str]) -> ProgramSummary {
        let argv: Vec<String> = std::iter::once(name)
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        ProgramSummary {
            platform: "p".into(),
            program: ProgramKey::program(exe, &argv),
            name: name.into(),
            records: 1,
            first_unix: 0,
            last_unix: 0,
        }
    }

    /// What each argument chooses among three programs: `c` run with two
    /// argument lists, `job4` (whose hash starts with c) and `b`. A name
    /// wins over a key's start, a start shorter than four characters chooses
    /// nothing, and one shared by two executables chooses nothing either:
    /// before, `forget c` also deleted `job4`'s records.
    #[test]
    fn an_argument_chooses_a_name_or_a_long_enough_start_of_one_executable() {
        let c = "sha256:aa11c0ffee";
        let job4 = "sha256:cb6f3b5033b2";
        let b = "sha256:cb6f0000ffff";
        let all = [
            summary("c", c, &["1"]),
            summary("c", c, &["2"]),
            summary("job4", job4, &[]),
            summary("b", b, &[]),
        ];
        let table: [(&str, Result<&[&str], &str>); 8] = [
            ("c", Ok(&["c", "c"])),
            ("job4", Ok(&["job4"])),
            ("cb6f3", Ok(&["job4"])),
            ("sha256:cb6f3", Ok(&["job4"])),
            ("aa11", Ok(&["c", "c"])),
            ("cb6", Err("at least 4 characters")),
            ("cb6f", Err("keys of 2 executables")),
            ("dead", Err("no program \"dead\"")),
        ];
        for (what, want) in table {
            let got = choose(&all, what);
            match (got, want) {
                (Ok(got), Ok(want)) => {
                    let names: Vec<&str> = got.iter().map(|p| p.name.as_str()).collect();
                    assert_eq!(names, want, "{what}");
                }
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{what}: {e}"),
                (got, want) => panic!("{what}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
