//! Which program a command runs, for the profile store (ReSense §2.2: an app is
//! characterized once per platform, so its profile must be found again, and only
//! for the same program).
//!
//! A profile is filed under the app's argv and a content hash of the executable
//! ([`AppIdentity::program`]): a rebuilt binary, or one replaced under the same
//! path, is a different program and gets profiled anew. The hash is SHA-256 of
//! the file `argv[0]` names, found the way `execvp` finds it (a name without a
//! slash is looked up in `PATH`), written `sha256:<hex>`. Whoever hands profiles
//! to a policy computes the same identity for the command it is about to run and
//! looks it up ([`program_identity`] on both sides).

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use coloc_model::knowledge::ProgramKey;
use coloc_model::profile::AppIdentity;
use sha2::{Digest, Sha256};

/// Why a command's executable could not be identified.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("the command is empty: expected a program and its arguments")]
    Empty,
    #[error("{program:?} is not an executable file in any directory of PATH ({path})")]
    NotFound { program: String, path: String },
    #[error("cannot read the executable {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The identity of the app `name` running `command` (argv, with `argv[0]` as it
/// will be executed, e.g. a `kernel:NAME` already resolved to the kernel's file).
pub fn program_identity(name: &str, command: &[String]) -> Result<AppIdentity, ProgramError> {
    Ok(AppIdentity::program(
        name,
        command.to_vec(),
        &executable_hash(command)?,
    ))
}

/// The key what coloc learns of the program `command` runs is filed under
/// (docs/knowledge.md): its executable's hash and its arguments.
pub fn program_key(command: &[String]) -> Result<ProgramKey, ProgramError> {
    Ok(ProgramKey::program(&executable_hash(command)?, command))
}

/// The hash of the file `command[0]` names.
fn executable_hash(command: &[String]) -> Result<String, ProgramError> {
    let program = command.first().ok_or(ProgramError::Empty)?;
    file_hash(&executable_path(
        program,
        std::env::var_os("PATH").as_deref(),
    )?)
}

/// `sha256:<64 hex digits>` of the file at `path`.
pub fn file_hash(path: &Path) -> Result<String, ProgramError> {
    let read = |source| ProgramError::Read {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, _) =
        coloc_model::user_file::open_regular(path).map_err(|e| read(e.into_io()))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).map_err(read)?;
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("sha256:{hex}"))
}

/// The file `execvp` would run for `program`: the path itself when it has a
/// slash, else the first executable regular file of that name in `path_var`.
pub fn executable_path(program: &str, path_var: Option<&OsStr>) -> Result<PathBuf, ProgramError> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    dirs.iter()
        .map(|d| d.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| ProgramError::NotFound {
            program: program.to_string(),
            path: path_var
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use coloc_model::profile::AppSource;

    use super::*;

    fn write_exe(dir: &Path, name: &str, body: &[u8], mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    /// SHA-256 of "abc" is the FIPS 180-2 example digest.
    #[test]
    fn hash_is_sha256_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_exe(dir.path(), "abc", b"abc", 0o755);
        assert_eq!(
            file_hash(&path).unwrap(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Names without a slash are looked up in PATH, skipping directories that
    /// lack the file and files that are not executable; paths are taken as
    /// they are.
    #[test]
    fn executable_lookup_follows_path() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).unwrap();
        }
        write_exe(&a, "tool", b"not executable", 0o644);
        let found = write_exe(&c, "tool", b"#!/bin/sh\n", 0o755);
        let path_var = std::env::join_paths([&a, &b, &c]).unwrap();
        let cases: [(&str, Option<PathBuf>); 3] = [
            ("tool", Some(found)),
            ("./rel/tool", Some(PathBuf::from("./rel/tool"))),
            ("missing", None),
        ];
        for (program, want) in cases {
            let got = executable_path(program, Some(&path_var)).ok();
            assert_eq!(got, want, "{program}");
        }
        let err = executable_path("missing", Some(&path_var))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"missing\"") && err.contains(&*a.to_string_lossy()),
            "{err}"
        );
    }

    /// The identity keeps the argv as given and hashes what argv[0] names; a
    /// changed file changes the hash, the same file keeps it.
    #[test]
    fn identity_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let exe = write_exe(dir.path(), "app", b"one", 0o755);
        let argv = vec![exe.display().to_string(), "--n".into(), "3".into()];
        let first = program_identity("app", &argv).unwrap();
        assert_eq!(
            first,
            program_identity("other", &argv)
                .map(|mut i| {
                    i.name = "app".into();
                    i
                })
                .unwrap()
        );
        let AppSource::Program { command, exe_hash } = &first.source else {
            panic!("{first:?}");
        };
        assert_eq!(command, &argv);
        assert!(
            exe_hash.starts_with("sha256:") && exe_hash.len() == 7 + 64,
            "{exe_hash}"
        );
        std::fs::write(&exe, b"two").unwrap();
        assert_ne!(program_identity("app", &argv).unwrap(), first);
    }

    #[test]
    fn errors_name_what_is_wrong() {
        assert!(matches!(
            program_identity("x", &[]),
            Err(ProgramError::Empty)
        ));
        let err = program_identity("x", &["/nonexistent/prog".into()]).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/prog"), "{err}");
    }
}
