//! Builds `libcoloc_spank.so` (embedded by the crate) into OUT_DIR when
//! Slurm's `slurm/spank.h` (Debian: libslurm-dev) and json-c's headers
//! (libjson-c-dev) are installed; without them the crate embeds nothing
//! and says why, and everything else builds as usual (docs/slurm.md).
//!
//! The plugin is C because slurmstepd loads it with `dlopen` and calls it
//! through SPANK's C interface, in slurmstepd and in each task's process
//! just before it execs the user's program: it must bring no second runtime
//! into either.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=c/coloc_spank.c");
    println!("cargo:rerun-if-changed=/usr/include/slurm/spank.h");
    println!("cargo:rerun-if-changed=/usr/include/json-c/json.h");
    let plugin = out.join("libcoloc_spank.so");
    let built = build(&plugin);
    match built {
        Ok(()) => println!("cargo:rustc-env=COLOC_SPANK_NOT_BUILT="),
        Err(why) => {
            // An empty file keeps include_bytes! working; the reason is
            // what the crate says instead of the plugin.
            std::fs::write(&plugin, b"").expect("write OUT_DIR");
            println!("cargo:warning=libcoloc_spank.so not built: {why}");
            println!("cargo:rustc-env=COLOC_SPANK_NOT_BUILT={why}");
        }
    }
}

fn build(plugin: &std::path::Path) -> Result<(), String> {
    let compiler = cc::Build::new().get_compiler();
    let probe = |header: &str| {
        let mut cmd = compiler.to_command();
        cmd.args(["-E", "-x", "c", "-", "-o", "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let Ok(mut child) = cmd.spawn() else {
            return false;
        };
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = writeln!(stdin, "#include <{header}>");
        }
        child.wait().is_ok_and(|s| s.success())
    };
    if !probe("slurm/spank.h") {
        return Err("Slurm's slurm/spank.h is not installed (Debian: libslurm-dev)".into());
    }
    if !probe("json-c/json.h") {
        return Err("json-c's json-c/json.h is not installed (Debian: libjson-c-dev)".into());
    }
    // -g0: the embedded library stays small and does not depend on the
    // build directory.
    let mut cmd: Command = compiler.to_command();
    cmd.args([
        "-std=c11", "-Wall", "-Wextra", "-shared", "-fPIC", "-O2", "-g0", "-o",
    ])
    .arg(plugin)
    .arg("c/coloc_spank.c")
    .arg("-ljson-c");
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let output = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
