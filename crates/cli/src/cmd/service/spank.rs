//! `coloc spank-plugin PATH`: writes the Slurm SPANK plugin this coloc was
//! built with, for a node's plugstack.conf (docs/slurm.md).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct SpankPluginArgs {
    /// Where to write `libcoloc_spank.so` (replaced atomically: a slurmstepd
    /// loading the old one keeps it).
    pub path: PathBuf,
}

pub fn main(a: SpankPluginArgs) -> Result<()> {
    let bytes = coloc_spank::plugin()
        .map_err(|why| anyhow!("this coloc was built without the SPANK plugin: {why}"))?;
    let dir = a
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = a
        .path
        .file_name()
        .with_context(|| format!("{}: not a file name", a.path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &a.path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", a.path.display()));
    }
    println!(
        "wrote {} ({} bytes); load it from plugstack.conf: optional {}",
        a.path.display(),
        bytes.len(),
        std::fs::canonicalize(&a.path)
            .unwrap_or(a.path.clone())
            .display()
    );
    Ok(())
}
