//! Small listing commands: `policies`, `kernels`, `restore`.

use anyhow::Result;

use crate::host;

pub fn policies() -> Result<()> {
    for p in coloc_policy::POLICIES {
        println!("{:<16} {}", p.name, p.about);
    }
    println!(
        "{:<16} simulator only (--sim), static workloads: the best sharing configuration \
         found by simulating them all (or a bounded search, said so), replayed",
        crate::choice::ORACLE
    );
    Ok(())
}

pub fn kernels() -> Result<()> {
    for k in coloc_workloads::KERNELS {
        println!("kernel:{:<10} {}\n    usage: {}", k.name, k.about, k.usage);
    }
    Ok(())
}

pub fn restore() -> Result<()> {
    for report in host::restore_all()? {
        println!("{report}");
    }
    Ok(())
}
