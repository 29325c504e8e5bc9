//! What the program check found, as the levers report `coloc run` and
//! `coloc exec` give at launch (`coloc_model::reason::levers`;
//! docs/signals.md, Runtimes and levers): the shim's names of runtimes
//! become the model's, and the DoP channel's outcome is said with it.

use coloc_model::reason::levers::{Channel, Levers, Runtime};
use coloc_shim::{OmpRuntime, Threaded};

use super::program_check::ProgramCheck;

/// The report for a program `check` found, whose DoP channel came to
/// `channel`; no caps (the launch sets them).
pub(crate) fn levers(check: &ProgramCheck, channel: Channel) -> Levers {
    let mut runtimes: Vec<Runtime> = check.threaded.iter().map(|t| threaded(*t)).collect();
    if let Ok(r) = &check.found {
        runtimes.extend(openmp(*r));
    }
    runtimes.sort();
    runtimes.dedup();
    Levers {
        program: check.exe.as_ref().map(|p| p.display().to_string()),
        runtimes,
        channel,
        caps: None,
    }
}

fn openmp(r: OmpRuntime) -> Option<Runtime> {
    match r {
        OmpRuntime::Gomp => Some(Runtime::Libgomp),
        OmpRuntime::LlvmOmp => Some(Runtime::LlvmOmp),
        OmpRuntime::Intel => Some(Runtime::IntelOmp),
        OmpRuntime::None | OmpRuntime::Static | OmpRuntime::Unknown => None,
    }
}

fn threaded(t: Threaded) -> Runtime {
    match t {
        Threaded::OpenBlasPthreads => Runtime::OpenBlasPthreads,
        Threaded::OpenBlasOpenmp => Runtime::OpenBlasOpenMp,
        Threaded::OpenBlas => Runtime::OpenBlas,
        Threaded::Mkl => Runtime::Mkl,
        Threaded::Tbb => Runtime::Tbb,
        Threaded::Go => Runtime::Go,
        Threaded::Jvm => Runtime::Jvm,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A libgomp program using OpenBLAS' pthreads build, not capped: both
    /// runtimes are named, the channel acts, and the report says OpenBLAS
    /// sizes its threads at start with no lever on it.
    #[test]
    fn a_report_names_every_runtime_and_what_no_lever_sizes() {
        let check = ProgramCheck {
            exe: Some(PathBuf::from("/bin/solver")),
            found: Ok(OmpRuntime::Gomp),
            threaded: vec![Threaded::OpenBlasPthreads],
        };
        let l = levers(&check, Channel::Acts);
        assert_eq!(l.runtimes, [Runtime::Libgomp, Runtime::OpenBlasPthreads]);
        assert_eq!(l.uncapped(), [Runtime::OpenBlasPthreads]);
        let text = l.to_string();
        assert!(
            text.starts_with(
                "/bin/solver: GNU libgomp, OpenBLAS (pthreads); levers: placement, DoP channel"
            ),
            "{text}"
        );
        assert!(
            text.contains("OpenBLAS (pthreads) size(s) its threads once at start"),
            "{text}"
        );
        let capped = Levers { caps: Some(2), ..l };
        assert!(
            capped.to_string().ends_with("thread caps at launch (2)"),
            "{capped}"
        );
    }
}
