//! `openmp_runtime_of` on real binaries: the GCC-built test program, a system
//! tool, and, where the compilers exist, a static and an LLVM-libomp binary.

use std::path::Path;
use std::process::Command;

use coloc_shim::{openmp_runtime_of, OmpRuntime};

fn read(p: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(p)
}

#[test]
fn gcc_openmp_program_uses_libgomp() {
    let teams = Path::new(env!("OUT_DIR")).join("teams");
    let runtime = openmp_runtime_of(&teams, &read).unwrap();
    assert_eq!(runtime, OmpRuntime::Gomp);
    assert!(runtime.dop_managed());
}

#[test]
fn ls_uses_no_openmp() {
    assert_eq!(
        openmp_runtime_of(Path::new("/bin/ls"), &read).unwrap(),
        OmpRuntime::None
    );
}

/// Compiles `main(){}`-like C with `compiler args`; None (with the reason
/// printed) if that toolchain is not installed here.
fn compile(compiler: &str, args: &[&str], dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("p.c");
    std::fs::write(
        &src,
        "#include <omp.h>\nint main(void){int n=0;\n#pragma omp parallel\n{\n#pragma omp atomic\nn++;}\nreturn n==omp_get_max_threads()?0:1;}\n",
    )
    .unwrap();
    let exe = dir.join(format!("p-{compiler}"));
    match Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(out) if out.status.success() => Some(exe),
        Ok(out) => {
            eprintln!(
                "skipped: {compiler} {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: {compiler} not runnable: {e}");
            None
        }
    }
}

#[test]
fn static_binary_is_reported_as_static() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(exe) = compile("cc", &["-static", "-fopenmp"], dir.path()) {
        assert_eq!(openmp_runtime_of(&exe, &read).unwrap(), OmpRuntime::Static);
    }
}

#[test]
fn clang_libomp_binary_is_llvm_and_managed() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(exe) = compile("clang", &["-fopenmp=libomp"], dir.path()) {
        let runtime = openmp_runtime_of(&exe, &read).unwrap();
        assert_eq!(runtime, OmpRuntime::LlvmOmp);
        assert!(runtime.dop_managed());
    }
}

#[test]
fn libgomp_through_a_library_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("lib.c"),
        "int work(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn++;\nreturn n;}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.c"),
        "int work(void);\nint main(void){return work()>0?0:1;}\n",
    )
    .unwrap();
    let lib = Command::new("cc")
        .args(["-shared", "-fPIC", "-fopenmp", "-o"])
        .arg(d.join("libwork.so"))
        .arg(d.join("lib.c"))
        .status()
        .unwrap();
    assert!(lib.success());
    let exe = Command::new("cc")
        .arg("-o")
        .arg(d.join("app"))
        .arg(d.join("main.c"))
        .arg(format!("-L{}", d.display()))
        .args(["-lwork", "-Wl,-rpath,$ORIGIN"])
        .status()
        .unwrap();
    assert!(exe.success());
    // The app itself does not need libgomp; its library does.
    assert!(Command::new(d.join("app")).status().unwrap().success());
    assert_eq!(
        openmp_runtime_of(&d.join("app"), &read).unwrap(),
        OmpRuntime::Gomp
    );
}
