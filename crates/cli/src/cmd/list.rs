//! Small listing commands: `policies`, `kernels`, `restore`.

use anyhow::{Context, Result};

use crate::host;

pub fn policies() -> Result<()> {
    for p in coloc_policy::POLICIES {
        println!("{:<12} {}", p.name, p.about);
    }
    Ok(())
}

pub fn kernels() -> Result<()> {
    for k in coloc_workloads::KERNELS {
        println!("kernel:{:<10} {}\n    usage: {}", k.name, k.about, k.usage);
    }
    Ok(())
}

pub fn restore() -> Result<()> {
    let report =
        coloc_linux::machine::recover_stale_journals(&host::journal_dir(), "/proc".as_ref())
            .context("restoring from stale journals")?;
    println!("{report}");
    Ok(())
}
