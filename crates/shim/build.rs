//! Builds `libcoloc_omp.so` (embedded by the crate) and two test programs into
//! OUT_DIR with the C compiler `cc` detects.
//!
//! The shim is a C library rather than Rust because it runs inside arbitrary
//! OpenMP processes: it must not bring a second allocator, panic runtime or
//! libstd into them, and it must match libgomp's C ABI exactly.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let c = Path::new("c");
    let parts = ["coloc_omp.c", "core.c", "progress.c", "ompt.c"];
    for f in parts.iter().chain(&[
        "coloc_omp_record.h",
        "shim.h",
        "gomp.h",
        "teams.c",
        "long_region.c",
        "offsets.c",
    ]) {
        println!("cargo:rerun-if-changed=c/{f}");
    }

    let shim = out.join("libcoloc_omp.so");
    // -g0: the embedded library stays small and its hash does not depend on
    // the build directory.
    compile(
        &[
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-shared",
            "-fPIC",
            "-O2",
            "-g0",
            "-fvisibility=hidden",
        ],
        &parts.map(|p| c.join(p)),
        &shim,
        &["-ldl", "-pthread"],
    )
    .unwrap_or_else(|e| panic!("building libcoloc_omp.so: {e}"));
    let bytes = std::fs::read(&shim).expect("read the built shim");
    println!(
        "cargo:rustc-env=COLOC_OMP_SHIM_HASH={:016x}",
        fnv1a64(&bytes)
    );

    // Test programs: a compiler without OpenMP support must not break the
    // library build; the tests that need them say why they skip.
    let tests = [
        ("teams.c", "teams", &["-std=c11", "-O2", "-fopenmp"][..]),
        (
            "long_region.c",
            "long_region",
            &["-std=c11", "-O2", "-fopenmp"][..],
        ),
        ("offsets.c", "offsets", &["-std=c11", "-O0"][..]),
    ];
    for (src, exe, flags) in tests {
        if let Err(e) = compile(flags, &[c.join(src)], &out.join(exe), &[]) {
            println!("cargo:warning=test program {exe} not built: {e}");
        }
    }

    // The same programs on LLVM's OpenMP runtime, for the OMPT tool's tests,
    // where clang and libomp are installed (scripts/setup installs them);
    // the tests that need them say why they skip.
    for (src, exe) in [
        ("teams.c", "teams_llvm"),
        ("long_region.c", "long_region_llvm"),
    ] {
        let built = Command::new("clang")
            .args(["-std=c11", "-O2", "-fopenmp=libomp", "-Ic", "-o"])
            .arg(out.join(exe))
            .arg(c.join(src))
            .output();
        match built {
            Ok(o) if o.status.success() => {}
            Ok(o) => println!(
                "cargo:warning=test program {exe} not built: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            ),
            Err(_) => {} // no clang: the tests say so
        }
    }
}

fn compile(flags: &[&str], srcs: &[PathBuf], out: &Path, libs: &[&str]) -> Result<(), String> {
    let mut cmd: Command = cc::Build::new().get_compiler().to_command();
    cmd.args(flags)
        .arg("-Ic")
        .arg("-o")
        .arg(out)
        .args(srcs)
        .args(libs);
    let output = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// FNV-1a, 64 bit: a stable content key for the extracted library's file name
/// (std's hasher is not stable across Rust releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
