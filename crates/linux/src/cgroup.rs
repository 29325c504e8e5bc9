//! The cpuset controller's cgroups: where a process may run by its cgroup,
//! and the files coloc writes to place apps in cgroups of its own
//! (docs/service.md: The loop, and cgroup slices).
//!
//! Problem: an app can be held to some CPUs by its cgroup's cpuset as well as
//! by its affinity, and a cpuset can change under it. coloc must never plan an
//! app onto CPUs its cpuset forbids (the kernel silently narrows such an
//! affinity, which would look like the app moving itself), and a node service
//! can hold apps to their planned CPUs with a cpuset of its own instead of
//! thread affinities alone.
//!
//! Approach: [`Cpusets`] is the hierarchy that holds the controller, found in
//! mountinfo: cgroup v2 when its root lists `cpuset` in `cgroup.controllers`,
//! else a cgroup v1 hierarchy mounted with `cpuset` (the two differ only in
//! file names, and in v1 a new cgroup has no CPUs until some are written). A
//! process's cgroup comes from `/proc/<pid>/cgroup` (`0::/path` in v2,
//! `N:cpuset:/path` in v1), relative to the mount; every path is under a
//! root given by the caller, so tests build the tree in a temporary
//! directory. Nothing here journals: the machine does (`machine/slice.rs`).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use coloc_model::CpuSet;
use procfs::process::MountInfo;
use procfs::{FromBufRead, ProcessCGroups};
use serde::{Deserialize, Serialize};

/// The two kinds of hierarchy that can hold the cpuset controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Version {
    V1,
    V2,
}

/// The mounted hierarchy that holds the cpuset controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpusets {
    pub version: Version,
    /// Its mount point, under the caller's root.
    pub mount: PathBuf,
    /// The hierarchy's directory the mount shows ("/" unless it is a bind
    /// mount or a namespace's view): stripped from `/proc/<pid>/cgroup` paths.
    mount_root: PathBuf,
}

/// Why cgroups could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no cpuset controller to use: {0}")]
    NoCpuset(String),
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {text:?} is not a list of numbers", path.display())]
    List { path: PathBuf, text: String },
    #[error("{}: no line for the cpuset hierarchy", path.display())]
    NotInHierarchy { path: PathBuf },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CgroupError + '_ {
    move |source| CgroupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The mounts of a mountinfo text, by procfs' parser; a line it cannot
/// read is skipped (a hierarchy is looked for, not every mount checked).
fn mounts(mountinfo: &str) -> impl Iterator<Item = MountInfo> + '_ {
    mountinfo
        .lines()
        .filter_map(|line| MountInfo::from_line(line).ok())
}

impl Cpusets {
    /// The hierarchy of kind `version` mounted at `mount` (a journal names
    /// it so).
    pub fn at(version: Version, mount: PathBuf) -> Cpusets {
        Cpusets {
            version,
            mount,
            mount_root: PathBuf::from("/"),
        }
    }

    /// The hierarchy of the cpuset controller in `<proc_root>/self/mountinfo`.
    pub fn detect(proc_root: &Path) -> Result<Cpusets, CgroupError> {
        let path = proc_root.join("self/mountinfo");
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        Cpusets::find(&text, Path::new("/"))
    }

    /// The hierarchy of the cpuset controller among `mountinfo`'s mounts,
    /// their mount points taken under `root`: cgroup v2 if its root cgroup
    /// offers cpuset, else cgroup v1's cpuset hierarchy. The error says what
    /// there is instead.
    pub fn find(mountinfo: &str, root: &Path) -> Result<Cpusets, CgroupError> {
        let under = |point: &Path| root.join(point.strip_prefix("/").unwrap_or(point));
        let mut v2_without = None;
        let mut v1 = None;
        for m in mounts(mountinfo) {
            let at = Cpusets {
                version: Version::V2,
                mount: under(&m.mount_point),
                mount_root: PathBuf::from(&m.root),
            };
            match m.fs_type.as_str() {
                "cgroup2" => {
                    let controllers = at.mount.join("cgroup.controllers");
                    let offered = fs::read_to_string(&controllers).unwrap_or_default();
                    if offered.split_whitespace().any(|c| c == "cpuset") {
                        return Ok(at);
                    }
                    v2_without = Some(format!(
                        "cgroup v2 at {} offers {:?}, not cpuset",
                        m.mount_point.display(),
                        offered.trim()
                    ));
                }
                "cgroup" if m.super_options.contains_key("cpuset") && v1.is_none() => {
                    v1 = Some(Cpusets {
                        version: Version::V1,
                        ..at
                    });
                }
                _ => {}
            }
        }
        v1.ok_or_else(|| {
            CgroupError::NoCpuset(match v2_without {
                Some(v2) => format!("{v2}, and no cgroup v1 cpuset hierarchy is mounted"),
                None => "no cgroup v2 or cgroup v1 cpuset hierarchy is mounted".into(),
            })
        })
    }

    /// What the daemon says about the hierarchy it uses.
    pub fn describe(&self) -> String {
        let v = match self.version {
            Version::V1 => "cgroup v1 cpuset hierarchy",
            Version::V2 => "cgroup v2 with the cpuset controller",
        };
        format!("{v} at {}", self.mount.display())
    }

    /// The directory of cgroup `rel` (relative to the mount).
    pub fn dir(&self, rel: &Path) -> PathBuf {
        self.mount.join(rel)
    }

    /// `name` of the version's files (`cpus.effective`: `cpuset.cpus.effective`
    /// in v2, `cpuset.effective_cpus` in v1).
    fn file(&self, rel: &Path, name: &str) -> PathBuf {
        let name = match (self.version, name) {
            (Version::V1, "cpus.effective") => "cpuset.effective_cpus".to_string(),
            (Version::V1, "mems.effective") => "cpuset.effective_mems".to_string(),
            (_, "procs" | "controllers" | "subtree_control") => format!("cgroup.{name}"),
            (_, n) => format!("cpuset.{n}"),
        };
        self.dir(rel).join(name)
    }

    /// The cgroup of process `pid` in this hierarchy, relative to the mount
    /// (empty for the root cgroup), from `<proc_root>/<pid>/cgroup`.
    pub fn cgroup_of(&self, proc_root: &Path, pid: u32) -> Result<PathBuf, CgroupError> {
        let path = proc_root.join(format!("{pid}/cgroup"));
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        self.cgroup_in(&text)
            .ok_or(CgroupError::NotInHierarchy { path })
    }

    /// The cgroup `text` (a `/proc/<pid>/cgroup`) names in this hierarchy.
    /// The root cgroup is `/`, a trailing slash is dropped, and the mount's
    /// own root is stripped.
    pub fn cgroup_in(&self, text: &str) -> Option<PathBuf> {
        let groups = ProcessCGroups::from_buf_read(text.as_bytes()).ok()?;
        let group = groups.into_iter().find(|g| match self.version {
            Version::V2 => g.hierarchy == 0 && g.controllers.is_empty(),
            Version::V1 => g.controllers.iter().any(|c| c == "cpuset"),
        })?;
        let path = Path::new(&group.pathname);
        let rel = path.strip_prefix(&self.mount_root).unwrap_or(path);
        Some(
            rel.components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .collect(),
        )
    }

    /// The CPUs cgroup `rel` lets its processes use.
    pub fn effective_cpus(&self, rel: &Path) -> Result<CpuSet, CgroupError> {
        read_list(&self.file(rel, "cpus.effective"))
    }

    /// The memory nodes cgroup `rel` lets its processes use.
    pub fn effective_mems(&self, rel: &Path) -> Result<CpuSet, CgroupError> {
        read_list(&self.file(rel, "mems.effective"))
    }

    /// The processes in cgroup `rel`.
    pub fn procs(&self, rel: &Path) -> Result<Vec<u32>, CgroupError> {
        let path = self.file(rel, "procs");
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        Ok(text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect())
    }

    /// Makes cgroup `rel` (its parent must exist); returns whether it was
    /// made (false: it was there).
    pub fn make(&self, rel: &Path) -> Result<bool, CgroupError> {
        let dir = self.dir(rel);
        match fs::create_dir(&dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io_err(&dir)(e)),
        }
    }

    /// Removes the empty cgroup `rel`; one already gone is no error.
    pub fn remove(&self, rel: &Path) -> Result<(), CgroupError> {
        let dir = self.dir(rel);
        match fs::remove_dir(&dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(&dir)(e)),
            _ => Ok(()),
        }
    }

    /// Limits cgroup `rel` to `cpus` and memory nodes `mems`. Memory nodes
    /// first: in v1 a cgroup takes no process until both are set.
    pub fn limit(&self, rel: &Path, cpus: &CpuSet, mems: &CpuSet) -> Result<(), CgroupError> {
        write(&self.file(rel, "mems"), &mems.to_list())?;
        write(&self.file(rel, "cpus"), &cpus.to_list())
    }

    /// Moves process `pid`, all its threads, into cgroup `rel`.
    pub fn attach(&self, rel: &Path, pid: u32) -> Result<(), CgroupError> {
        write(&self.file(rel, "procs"), &pid.to_string())
    }

    /// Whether cgroup `rel`'s children may use the cpuset controller (always
    /// in v1; in v2 when `subtree_control` lists it).
    pub fn enabled_below(&self, rel: &Path) -> Result<bool, CgroupError> {
        if self.version == Version::V1 {
            return Ok(true);
        }
        let path = self.file(rel, "subtree_control");
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        Ok(text.split_whitespace().any(|c| c == "cpuset"))
    }

    /// Lets cgroup `rel`'s children use the cpuset controller (cgroup v2's
    /// `subtree_control`; v1 needs nothing). Returns whether it was off.
    pub fn enable_below(&self, rel: &Path) -> Result<bool, CgroupError> {
        self.toggle_below(rel, true)
    }

    /// Undoes [`Cpusets::enable_below`].
    pub fn disable_below(&self, rel: &Path) -> Result<(), CgroupError> {
        self.toggle_below(rel, false).map(drop)
    }

    fn toggle_below(&self, rel: &Path, on: bool) -> Result<bool, CgroupError> {
        if self.version == Version::V1 || self.enabled_below(rel)? == on {
            return Ok(false);
        }
        let path = self.file(rel, "subtree_control");
        write(&path, if on { "+cpuset" } else { "-cpuset" })?;
        Ok(true)
    }

    /// A limit of another controller that moving a process out of cgroup
    /// `rel` would lift, as `file = value`: in cgroup v2 a process is in one
    /// cgroup for every controller, so leaving its cgroup (or one of that
    /// cgroup's ancestors) for coloc's leaves their memory, pids, CPU
    /// bandwidth and I/O limits too. In v1 the cpuset hierarchy is its own.
    pub fn other_limit(&self, rel: &Path) -> Option<String> {
        const LIMITS: [&str; 6] = [
            "memory.max",
            "memory.high",
            "memory.swap.max",
            "pids.max",
            "cpu.max",
            "io.max",
        ];
        if self.version == Version::V1 {
            return None;
        }
        rel.ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .flat_map(|a| LIMITS.iter().map(move |f| a.join(f)))
            .find_map(|f| {
                let value = fs::read_to_string(self.dir(&f)).ok()?;
                let value = value.trim();
                let unlimited = value.is_empty() || value.split_whitespace().next() == Some("max");
                (!unlimited).then(|| format!("{} = {value}", f.display()))
            })
    }
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    fs::write(path, value).map_err(io_err(path))
}

/// A kernel list file (`0-3,8`); empty is the empty set (a v1 cgroup with
/// none written yet).
fn read_list(path: &Path) -> Result<CpuSet, CgroupError> {
    let text = fs::read_to_string(path).map_err(io_err(path))?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(CpuSet::default());
    }
    CpuSet::parse_list(text).map_err(|_| CgroupError::List {
        path: path.to_path_buf(),
        text: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str, file: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/cgroup")
            .join(host)
            .join(file);
        fs::read_to_string(&path).unwrap()
    }

    /// A tree under a temporary directory with `files` (path, contents).
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }

    /// The test machine: v2 is mounted at .../unified with hugetlb only, so
    /// the v1 cpuset hierarchy is the one to use.
    #[test]
    fn a_hybrid_host_uses_the_v1_cpuset_hierarchy() {
        let root = tree(&[("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n")]);
        let c = Cpusets::find(&fixture("hybrid-kvm", "mountinfo"), root.path()).unwrap();
        assert_eq!(c.version, Version::V1);
        assert_eq!(c.mount, root.path().join("sys/fs/cgroup/cpuset"));
        // "3:cpuset:/": the root cgroup is the empty path.
        let rel = c.cgroup_in(&fixture("hybrid-kvm", "cgroup")).unwrap();
        assert_eq!(rel, PathBuf::new());
        assert_eq!(
            c.file(&rel, "cpus.effective"),
            c.mount.join("cpuset.effective_cpus")
        );
    }

    #[test]
    fn a_unified_host_with_cpuset_uses_v2() {
        let root = tree(&[(
            "sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory pids\n",
        )]);
        let c = Cpusets::find(&fixture("unified", "mountinfo"), root.path()).unwrap();
        assert_eq!(c.version, Version::V2);
        let rel = c.cgroup_in(&fixture("unified", "cgroup")).unwrap();
        assert!(rel.ends_with("vte-spawn-5d1c.scope"), "{rel:?}");
        assert!(rel.starts_with("user.slice"), "relative: {rel:?}");
        assert_eq!(
            c.file(&rel, "cpus.effective"),
            c.mount.join(&rel).join("cpuset.cpus.effective")
        );
    }

    /// No silent fallback: the error says what the host has instead.
    #[test]
    fn no_cpuset_controller_says_what_there_is() {
        let root = tree(&[("sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n")]);
        let e = Cpusets::find(&fixture("unified", "mountinfo"), root.path()).unwrap_err();
        let said = e.to_string();
        assert!(said.contains("not cpuset"), "{said}");
        assert!(said.contains("cpu io memory pids"), "{said}");
    }

    /// `0::/` is the root; `0::/a/b/` has a trailing slash; a mount of a
    /// subtree (a container's view) strips its own root.
    #[test]
    fn cgroup_paths_root_trailing_slash_and_mount_root() {
        let c = Cpusets {
            version: Version::V2,
            mount: PathBuf::from("/sys/fs/cgroup"),
            mount_root: PathBuf::from("/"),
        };
        assert_eq!(c.cgroup_in("0::/\n").unwrap(), PathBuf::new());
        assert_eq!(c.cgroup_in("0::/a/b/\n").unwrap(), PathBuf::from("a/b"));
        let sub = Cpusets {
            mount_root: PathBuf::from("/kubepods/pod1"),
            ..c.clone()
        };
        assert_eq!(
            sub.cgroup_in("0::/kubepods/pod1/ctr\n").unwrap(),
            PathBuf::from("ctr")
        );
        let v1 = Cpusets {
            version: Version::V1,
            ..c
        };
        assert_eq!(
            v1.cgroup_in("4:cpu,cpuacct:/x\n3:cpuset:/batch\n").unwrap(),
            PathBuf::from("batch")
        );
        assert_eq!(v1.cgroup_in("0::/\n"), None);
    }

    #[test]
    fn effective_sets_and_an_empty_v1_list() {
        let root = tree(&[
            ("cpuset/a/cpuset.effective_cpus", "1,3-4\n"),
            ("cpuset/a/cpuset.effective_mems", "\n"),
        ]);
        let c = Cpusets {
            version: Version::V1,
            mount: root.path().join("cpuset"),
            mount_root: PathBuf::from("/"),
        };
        let a = Path::new("a");
        assert_eq!(c.effective_cpus(a).unwrap().to_list(), "1,3-4");
        assert!(c.effective_mems(a).unwrap().is_empty());
    }

    /// In v2 a limit of another controller on the cgroup or an ancestor is
    /// found (moving the app would lift it); `max` is no limit.
    #[test]
    fn another_controllers_limit_is_found_up_the_tree() {
        let root = tree(&[
            ("cg/user.slice/memory.max", "max\n"),
            ("cg/user.slice/pids.max", "4915\n"),
            ("cg/user.slice/s.scope/cpu.max", "max 100000\n"),
            ("cg/free/memory.max", "max\n"),
        ]);
        let c = Cpusets {
            version: Version::V2,
            mount: root.path().join("cg"),
            mount_root: PathBuf::from("/"),
        };
        assert_eq!(
            c.other_limit(Path::new("user.slice/s.scope")).as_deref(),
            Some("user.slice/pids.max = 4915")
        );
        assert_eq!(c.other_limit(Path::new("free")), None);
        assert_eq!(c.other_limit(Path::new("")), None);
    }
}
