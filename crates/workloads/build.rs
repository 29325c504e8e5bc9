//! Compiles each C/OpenMP kernel in `c/` into an executable in `OUT_DIR`, which
//! `src/catalog.rs` embeds with `include_bytes!`, so that `cargo build` alone
//! yields a self-contained `coloc` binary.
//!
//! The compiler is the one `cc` detects for the target (honouring `CC`,
//! `CFLAGS`, cross toolchains), but we link executables ourselves because `cc`
//! only builds static libraries.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Kernel sources in `c/`, without the `.c`; keep in step with `src/catalog.rs`.
const KERNELS: &[&str] = &["stream", "compute", "share", "barrier", "lock"];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src_dir = Path::new("c");
    println!("cargo:rerun-if-changed=c/common.h");
    for name in KERNELS {
        let source = src_dir.join(format!("{name}.c"));
        println!("cargo:rerun-if-changed={}", source.display());
        compile(&source, &out_dir.join(name));
    }
}

/// Builds one kernel executable, failing the build with the compiler's own
/// diagnostics if it does not compile (a missing libgomp shows up here).
fn compile(source: &Path, output: &Path) {
    // Fixed flags, not the Rust profile's: the kernels measure the machine, so
    // their code must be the same in debug and release builds of coloc. cc's
    // debug-profile defaults (-fPIC with frame pointers) made `compute` run at
    // half speed.
    let compiler = cc::Build::new()
        .opt_level(2)
        .debug(false)
        .pic(false)
        .force_frame_pointer(false)
        .warnings(true)
        .extra_warnings(true)
        .get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.arg("-fopenmp")
        .arg("-o")
        .arg(output)
        .arg(source)
        .arg("-lm");
    let result = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?}: {e}", compiler.path()));
    let stderr = String::from_utf8_lossy(&result.stderr);
    if !result.status.success() {
        panic!(
            "compiling {} failed ({}); the kernels need a C compiler with OpenMP (gcc and libgomp):\n{} {:?}\n{stderr}",
            source.display(),
            result.status,
            compiler.path().display(),
            cmd.get_args().collect::<Vec<_>>(),
        );
    }
    for line in stderr.lines() {
        println!("cargo:warning={}: {line}", source.display());
    }
}
