//! Where an app stands with coloc's cgroup slice (`slice.rs`): the state an
//! instance keeps, apart from the slice's actions on it.

use std::path::PathBuf;

use coloc_model::CpuSet;

/// Where an instance stands with the slice.
#[derive(Debug, Clone, Default)]
pub(crate) enum InSlice {
    /// Not placed by a plan yet.
    #[default]
    Out,
    In(AppCgroup),
    /// Left where it is, placed by affinity; the reason was said.
    Refused,
}

/// An app's cgroup of coloc's.
#[derive(Debug, Clone)]
pub(crate) struct AppCgroup {
    pub rel: PathBuf,
    /// The cgroup its main process came from, where its processes go back.
    pub home: PathBuf,
    pub cpus: CpuSet,
    pub mems: CpuSet,
}
