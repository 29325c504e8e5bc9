//! Which of coloc's levers act on an app's program, as data
//! (docs/signals.md, Runtimes and levers): the threaded runtimes found in
//! it at launch, what the DoP channel does for it (and why it has none),
//! and the team its runtimes' variables were set to. `coloc run` and
//! `coloc exec` say it when the app starts; `render.rs` words it.

use serde::{Deserialize, Serialize};

/// A runtime that makes an app's threads, found in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    /// GCC's OpenMP runtime.
    Libgomp,
    /// LLVM's OpenMP runtime (`libomp`).
    LlvmOmp,
    /// Intel's OpenMP runtime (`libiomp5`).
    IntelOmp,
    /// OpenBLAS' pthreads build.
    OpenBlasPthreads,
    /// OpenBLAS' OpenMP build.
    OpenBlasOpenMp,
    /// OpenBLAS of another or an unknown build.
    OpenBlas,
    Mkl,
    Tbb,
    Go,
    Jvm,
}

impl Runtime {
    /// Sizes its threads once, at start, from a variable that `cap_threads`
    /// sets (docs/signals.md, Runtimes and levers).
    pub fn capped_at_launch(self) -> bool {
        matches!(
            self,
            Self::OpenBlasPthreads | Self::OpenBlas | Self::Mkl | Self::Go | Self::Jvm
        )
    }
}

/// What the DoP channel does for an app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "channel")]
pub enum Channel {
    /// Not `malleable`: its OpenMP teams are what it starts with.
    NotMalleable,
    /// Its OpenMP runtime takes each region's team from coloc.
    Acts,
    /// Its program holds no OpenMP runtime (a shell, a script, an
    /// interpreter): the first OpenMP program it starts takes the channel.
    Launcher,
    /// Malleable, but no channel: why.
    None { why: NoChannel },
}

/// Why a malleable app has no DoP channel: the extension of the DoP lever
/// rule's "no DoP channel" (`LeverState::NoChannel`) to its cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum NoChannel {
    /// A static executable: nothing can be preloaded into it.
    Static,
    /// `OMP_TOOL=disabled` turns off the OMPT tool that steers LLVM's and
    /// Intel's runtimes.
    ToolDisabled,
    /// The program could not be checked, or the channel not set up (the
    /// system's words).
    Failed { error: String },
}

/// What coloc found in an app's program at launch and which levers act.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Levers {
    /// The program, as found on PATH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The runtimes found in it and the libraries it needs, sorted.
    pub runtimes: Vec<Runtime>,
    pub channel: Channel,
    /// The team its runtimes' variables were set to (`cap_threads`); None
    /// when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<u32>,
}

impl Levers {
    /// Runtimes found that size their threads once at start and that no
    /// cap sized: `cap_threads` was not asked.
    pub fn uncapped(&self) -> Vec<Runtime> {
        if self.caps.is_some() {
            return Vec::new();
        }
        self.runtimes
            .iter()
            .copied()
            .filter(|r| r.capped_at_launch())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncapped_are_the_runtimes_that_size_at_start_without_cap_threads() {
        let mut l = Levers {
            program: None,
            runtimes: vec![
                Runtime::Libgomp,
                Runtime::OpenBlasPthreads,
                Runtime::Tbb,
                Runtime::Jvm,
            ],
            channel: Channel::Acts,
            caps: None,
        };
        // libgomp has the DoP channel, oneTBB its placement: neither needs a cap.
        assert_eq!(l.uncapped(), [Runtime::OpenBlasPthreads, Runtime::Jvm]);
        l.caps = Some(2);
        assert_eq!(l.uncapped(), []);
    }
}
