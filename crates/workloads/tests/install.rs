//! Installing the embedded kernels and resolving `kernel:NAME` command lines.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Barrier;

use coloc_workloads::{install_dir, install_in, kernel, resolve_argv, KernelError, KERNELS};

/// A command line, and what resolving it gives (a path list or an error text).
type Case = (Vec<String>, Result<Vec<String>, &'static str>);

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn resolve_argv_table() {
    let dir = install_dir().unwrap();
    let stream = dir.join("stream").into_os_string().into_string().unwrap();
    let cases: [Case; 5] = [
        (
            argv(&["kernel:stream", "--mb", "8"]),
            Ok(vec![stream.clone(), "--mb".into(), "8".into()]),
        ),
        (argv(&["kernel:stream"]), Ok(vec![stream])),
        (
            argv(&["kernel:streem", "--mb", "8"]),
            Err("unknown kernel \"streem\"; the built-in kernels are: stream, compute, share, barrier, lock"),
        ),
        // Only argv[0] names a kernel; elsewhere the prefix is plain text.
        (
            argv(&["/bin/echo", "kernel:stream"]),
            Ok(argv(&["/bin/echo", "kernel:stream"])),
        ),
        (argv(&[]), Ok(vec![])),
    ];
    for (input, expected) in cases {
        let got = resolve_argv(&input).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned), "{input:?}");
    }
}

#[test]
fn concurrent_installs_agree_and_leave_whole_executables() {
    const INSTALLERS: usize = 8;
    let root = tempfile::tempdir().unwrap();
    let start = Barrier::new(INSTALLERS);
    let dirs: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..INSTALLERS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    install_in(root.path()).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(dirs.iter().all(|d| d == &dirs[0]), "{dirs:?}");
    let mut names: Vec<String> = fs::read_dir(&dirs[0])
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut expected: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
    expected.sort();
    assert_eq!(names, expected, "temporary files left behind?");
    for k in KERNELS {
        let path = dirs[0].join(k.name);
        assert_eq!(fs::read(&path).unwrap(), k.bytes(), "{}", k.name);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "{}", k.name);
    }
    let help = Command::new(dirs[0].join("share"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
}

#[test]
fn install_dir_is_private_and_named_by_content() {
    let root = tempfile::tempdir().unwrap();
    let dir = install_in(root.path()).unwrap();
    assert_eq!(dir.parent(), Some(root.path()));
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 16, "{name}");
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    assert_eq!(
        install_in(root.path()).unwrap(),
        dir,
        "a second install reuses the directory"
    );
}

#[test]
fn a_world_writable_root_is_refused() {
    let root = tempfile::tempdir().unwrap();
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let err = install_in(root.path()).unwrap_err();
    assert!(matches!(err, KernelError::UnsafeDir { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("writable by group or others (mode 777)"),
        "{err}"
    );
}

#[test]
fn a_root_owned_by_someone_else_is_refused() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a directory to another user needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(root.path(), Some(65534), None).unwrap();
    let err = install_in(root.path()).unwrap_err().to_string();
    assert!(err.contains("owned by uid 65534, not 0"), "{err}");
}

#[test]
fn kernel_lookup_by_name() {
    assert_eq!(kernel("barrier").map(|k| k.name), Some("barrier"));
    assert!(
        kernel("kernel:barrier").is_none(),
        "the prefix is not part of the name"
    );
}
