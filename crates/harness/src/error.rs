//! The harness's errors: each names the file or the run and the field at
//! fault.

use std::io;
use std::path::PathBuf;

use coloc_machine::MachineError;
use coloc_manager::ManagerError;
use coloc_model::calibration::CalibrationRunError;
use coloc_model::topology::hwloc::HwlocError;
use coloc_model::trace::TraceError;
use coloc_model::user_file::UserFileError;
use coloc_model::workload::WorkloadError;
use coloc_model::CpuSet;
use coloc_policy::LayerError;
use coloc_sim::platform::PlatformError;
use coloc_store::StoreError;
use coloc_workloads::KernelError;

/// Why a harness step failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A file the user named (a trace) could not be opened as one.
    #[error(transparent)]
    File(#[from] UserFileError),
    /// A trace file is not a trace this coloc reads.
    #[error("reading {}", path.display())]
    Trace {
        path: PathBuf,
        #[source]
        source: TraceError,
    },
    /// A procedure's manifest could not be read.
    #[error("reading {} (the directory of a run of the command holds it)", path.display())]
    ReadManifest {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A manifest (a procedure's, a comparison's) is not the JSON it should be.
    #[error("reading {}", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be written as JSON.
    #[error("writing {}", path.display())]
    ToJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A directory or file could not be made or written.
    #[error("{what} {}", path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A planned run names an app the workload does not have.
    #[error("run {run}: no app \"{app}\"")]
    NoApp { run: String, app: String },
    /// A planned run appends arguments to an app without a `command`.
    #[error("run {run}: app \"{app}\" has no command for the arguments {args:?}")]
    NoCommand {
        run: String,
        app: String,
        args: Vec<String>,
    },
    /// A workload file could not be read, or is not a workload.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A workload for the real machine names an app that only the simulator
    /// runs.
    #[error(
        "app \"{app}\" names the simulated model {model:?} and no command: run this workload \
         with `coloc sim`"
    )]
    SimulatedOnly { app: String, model: String },
    /// An app's `command` names a built-in kernel that could not be made ready.
    #[error("app \"{app}\": field `command`")]
    Command {
        app: String,
        #[source]
        source: KernelError,
    },
    /// An app's static mapping names CPUs this machine does not let coloc use.
    #[error(
        "app \"{app}\": field `cpus` names CPU(s) {foreign} that coloc may not use here \
         (usable: {usable})"
    )]
    ForeignCpus {
        app: String,
        foreign: CpuSet,
        usable: CpuSet,
    },
    /// A simulated workload's app has a command and no model.
    #[error(
        "app \"{app}\" has a `command` and no `model`: the simulator runs models (add \
         `model = \"...\"`; known models: {})",
        coloc_sim::model::model_names()
    )]
    NoModel { app: String },
    /// A simulated workload's app names a model the simulator does not have.
    #[error(
        "app \"{app}\": field `model`: unknown model \"{model}\" (known: {})",
        coloc_sim::model::model_names()
    )]
    UnknownModel { app: String, model: String },
    /// `--sim` names neither a built-in platform nor a file.
    #[error(
        "--sim {arg}: no built-in platform of that name and no such file (built-in: {})",
        coloc_sim::platform::platform_names()
    )]
    NoPlatform { arg: String },
    /// `--sim` names a file that is neither hwloc XML nor a platform file.
    #[error(
        "--sim {arg}: expected a built-in platform name, a .xml hwloc file or a .toml platform \
         file"
    )]
    PlatformKind { arg: String },
    /// An hwloc XML file is not a topology coloc reads.
    #[error(transparent)]
    Hwloc(#[from] HwlocError),
    /// A TOML platform file is not a platform.
    #[error("platform file {}", path.display())]
    PlatformFile {
        path: PathBuf,
        #[source]
        source: PlatformError,
    },
    /// A policy name could not be made a policy.
    #[error(transparent)]
    Policy(#[from] LayerError),
    /// This machine's topology could not be read.
    #[error("reading the topology from sysfs")]
    HostTopology(#[source] coloc_linux::topology::SysfsError),
    /// The Linux backend could not be set up for a run.
    #[error("setting up the Linux backend")]
    LinuxBackend(#[source] MachineError),
    /// A run failed.
    #[error("running {workload} under {policy}")]
    Run {
        workload: String,
        policy: String,
        #[source]
        source: ManagerError,
    },
    /// A run directory would be reached through another user's symlink.
    #[error(
        "{} is a symlink of uid {uid}'s: a run does not write through another user's link \
         (give the directory it points to)",
        path.display()
    )]
    ForeignLink { path: PathBuf, uid: u32 },
    /// A trace file could not be created new.
    #[error(
        "creating the trace {} (an existing file or link is never overwritten; choose another \
         --out)",
        path.display()
    )]
    CreateTrace {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A run's events are not a trace (no header first).
    #[error(transparent)]
    Events(TraceError),
    /// A run was stopped (a signal) before its apps ended.
    #[error("interrupted; settings were restored")]
    Interrupted,
    /// A file or directory could not be read.
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A directory given as a run's or a comparison's holds neither.
    #[error(
        "{} holds neither trace.jsonl (a run) nor POLICY-K/trace.jsonl directories (a comparison)",
        path.display()
    )]
    NothingSaved { path: PathBuf },
    /// The knowledge store could not be opened (or made anew).
    #[error("opening the store {}", path.display())]
    Store {
        path: PathBuf,
        #[source]
        source: Box<StoreError>,
    },
    /// The profile store could not be opened to be read.
    #[error("opening the profile store {}", path.display())]
    ProfileStore {
        path: PathBuf,
        #[source]
        source: Box<StoreError>,
    },
    /// A comparison's baseline is not among its policies.
    #[error("--baseline {baseline} is not one of --policies {policies}")]
    Baseline { baseline: String, policies: String },
    /// A comparison of zero repeats.
    #[error("--repeat must be at least 1")]
    NoRepeat,
    /// A run with nothing stored beforehand failed (its error names the
    /// policy and where the run's output is).
    #[error(transparent)]
    Fresh(Box<dyn std::error::Error + Send + Sync>),
    /// A directory of mixes holds no mix file.
    #[error("no *.toml mix in {}", dir.display())]
    NoMixes { dir: PathBuf },
    /// This machine's cycles counter could not be started or read around a
    /// run.
    #[error("{what}")]
    Cycles {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    /// One of a procedure's runs failed (what the run was, then why).
    #[error("{run}")]
    InRun {
        run: String,
        #[source]
        source: Box<HarnessError>,
    },
    /// A calibration's traces give no calibration (the run at fault named).
    #[error(transparent)]
    Calibration(#[from] CalibrationRunError),
    /// A calibration case's app did not run to a successful end.
    #[error("case {case}: an app did not run to a successful end")]
    CaseFailed { case: String },
    /// A /proc file could not be read.
    #[error("reading {path}")]
    Proc {
        path: &'static str,
        #[source]
        source: procfs::ProcError,
    },
    /// `--signal` names a measurement the simulator does not make.
    #[error(
        "--signal {choice:?}: the simulator measures cycles; --signal chooses among this \
         machine's measurements"
    )]
    SimSignal {
        choice: crate::characterize::SignalChoice,
    },
    /// `--signal cycles` on a machine without a cycles counter.
    #[error("--signal cycles: this machine cannot count cycles ({why})")]
    NoCycles { why: coloc_linux::usage::NoCycles },
    /// `--app` names no app of the workload.
    #[error("--app {name}: {workload} has no app of that name (apps: {known})")]
    UnknownApp {
        name: String,
        workload: String,
        known: String,
    },
    /// An app's program could not be identified (its executable hashed).
    #[error("app \"{app}\": field `command`")]
    Identity {
        app: String,
        #[source]
        source: coloc_linux::program::ProgramError,
    },
    /// A `bench sim` baseline file is not one.
    #[error("{name}: not a bench sim baseline")]
    SimBaseline {
        name: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A benchmark's built-in platform is missing.
    #[error("no {name} platform")]
    BuiltInPlatform { name: &'static str },
    /// A benchmark's built-in topology does not parse.
    #[error("bench: the built-in topology `{description}` is invalid")]
    BenchTopology {
        description: &'static str,
        #[source]
        source: coloc_model::topology::SyntheticError,
    },
    /// A benchmark names a policy the registry does not have.
    #[error(transparent)]
    UnknownPolicy(#[from] coloc_policy::UnknownPolicy),
    /// A benchmark's simulated run failed.
    #[error("bench: {policy}")]
    BenchRun {
        policy: String,
        #[source]
        source: ManagerError,
    },
    /// A benchmark's repeated simulation did not repeat what it simulated
    /// (the simulator is deterministic, so this is a defect).
    #[error("bench: {what}: a repetition simulated {then}, the first {first}")]
    BenchNotRepeated {
        what: String,
        first: String,
        then: String,
    },
    /// A benchmark's simulated run left a trace without its end.
    #[error("bench: {policy}: the trace has no end")]
    NoEnd { policy: String },
    /// The oracle's search failed.
    #[error(transparent)]
    Oracle(#[from] coloc_sim::oracle::OracleError),
    /// `bench nupoco`'s apps were still profiled after every app's window.
    #[error(
        "bench: nupoco still profiles after every app's window, the steady decision cannot be \
         timed: {}",
        coloc_model::explain::note("nupoco", plan)
    )]
    StillProfiling { plan: Box<coloc_model::Plan> },
    /// A suite's programs directory could not be read.
    #[error("reading the suite's programs in {}", dir.display())]
    SuitePrograms {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Two programs of a suite have one name.
    #[error(
        "{}: the program name \"{name}\" is already used by {}; names must be unique in a suite",
        file.display(),
        first.display()
    )]
    SuiteName {
        file: PathBuf,
        name: String,
        first: PathBuf,
    },
    /// A suite without programs.
    #[error("no program (*.toml) in {}", dir.display())]
    SuiteEmpty { dir: PathBuf },
    /// A suite's programs need what this machine lacks.
    #[error(
        "the suite in {} cannot run here; missing: {missing} (run `scripts/setup --bench` from \
         the repository root, and run the bench from there)",
        dir.display()
    )]
    SuiteMissing { dir: PathBuf, missing: String },
    /// A mix could not be drawn from a suite's programs.
    #[error(transparent)]
    Gen(#[from] coloc_sim::gen::GenError),
    /// `--case` matches no calibration case.
    #[error("--case {part}: no calibration case matches (cases: {cases})")]
    NoCase { part: String, cases: String },
    /// None of the calibration cases has a measured time.
    #[error("{source_name}: no measurement of any case")]
    NothingMeasured { source_name: String },
    /// The calibration cases could not be simulated or compared.
    #[error(transparent)]
    CalibrateSim(#[from] coloc_sim::calibrate::CalibrateError),
    /// `--platforms` names a platform the paper's experiment does not have.
    #[error("--platforms: `{name}` is not one of {known}")]
    NotInPaper { name: String, known: &'static str },
    /// `--scenarios` matches none of NuPoCo's Table 2.
    #[error("--scenarios {only}: no scenario of Table 2 matches (s01 … s10)")]
    NoScenario { only: String },
    /// `bench paper resense --mixes 0`.
    #[error("--mixes must be at least 1")]
    NoMixCount,
    /// `--programs` matches none of Thread Tranquilizer's Table V.
    #[error("--programs {programs}: none of Table V's programs matches")]
    NoProgram { programs: String },
    /// A paper's experiment failed in the simulator.
    #[error(transparent)]
    Paper(#[from] coloc_sim::papers::PaperError),
    /// The store failed a query or a write.
    #[error(transparent)]
    StoreQuery(Box<StoreError>),
}

/// The store's errors are boxed: they are large, and every result of the
/// harness carries this type.
impl From<StoreError> for HarnessError {
    fn from(e: StoreError) -> Self {
        HarnessError::StoreQuery(Box::new(e))
    }
}

/// An error and its sources, `: `-separated, as the binary prints an error
/// (anyhow's `{:#}`): for the warnings said when a step fails and the rest
/// goes on.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}
