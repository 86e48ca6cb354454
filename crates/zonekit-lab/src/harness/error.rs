//! What can go wrong in an experiment, split the way a user needs it: a bad request (fix the
//! command line) or a run that failed (look at the input or the engine).

use std::path::PathBuf;

use zonekit_base::policy::PolicyError;
use zonekit_device::DeviceError;
use zonekit_ftl::FtlError;
use zonekit_trace::TraceError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// The request itself is wrong: a setting out of range, a name or parameter that does not
    /// exist, an output directory that cannot be written. Nothing was run.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Reading the trace or workload failed.
    #[error("input {input}: {error}")]
    Input { input: String, error: Box<TraceError> },
    #[error(transparent)]
    Engine(Box<FtlError>),
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A tree failed during a run (out of space, a corrupt node).
    #[error("{context}: {error}")]
    Tree { context: String, error: Box<zonekit_zbtree::TreeError> },
    /// The cache failed during a run.
    #[error("{context}: {error}")]
    Cache { context: String, error: Box<zonekit_cache::CacheError> },
    /// An open-channel FTL refused its settings or failed during a replay.
    #[error("{context}: {error}")]
    Ocssd { context: String, error: Box<zonekit_ocssd::OcError> },
    /// The OS error is part of the message (not a `source()`), so error chains print it once.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// A step of a run failed: what it was doing (shown), and why (its source, shown after it
    /// by a caller that prints the chain, and where a missing file can be told apart).
    #[error("{context}")]
    Step {
        context: String,
        #[source]
        error: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A run's own check found the result wrong (data lost, a state that must not be).
    #[error("{0}")]
    Failed(String),
    /// A results file that does not have the shape this version writes.
    #[error("{}:{line}: {reason}", path.display())]
    Results { path: PathBuf, line: usize, reason: String },
    /// The caller stopped the run ([`crate::harness::progress::Progress::cancelled`]).
    #[error("the run was stopped by its caller")]
    Cancelled,
    /// Some runs of a grid failed; the others' rows were written.
    #[error("{} of {total} runs failed:\n  {}", failed.len(), failed.join("\n  "))]
    Runs { failed: Vec<String>, total: usize },
}

impl From<FtlError> for LabError {
    fn from(e: FtlError) -> Self {
        LabError::Engine(Box::new(e))
    }
}

impl LabError {
    /// Whether the request was at fault (a usage error: exit status 2) rather than the run.
    pub fn is_usage(&self) -> bool {
        match self {
            LabError::Usage(_) | LabError::Policy(_) => true,
            // A file the request names (or a data directory's file) that is not there.
            LabError::Io { error, .. } => error.kind() == std::io::ErrorKind::NotFound,
            // Bad geometry or FTL parameters are the request's fault; the rest is the run's.
            LabError::Ocssd { error, .. } => {
                matches!(**error, zonekit_ocssd::OcError::Geometry(_) | zonekit_ocssd::OcError::Config(_) | zonekit_ocssd::OcError::LogicalSpace { .. })
            }
            _ => false,
        }
    }

    pub(crate) fn input(input: &zonekit_trace::input::Input) -> impl Fn(TraceError) -> LabError + '_ {
        move |error| LabError::Input { input: input.describe(), error: Box::new(error) }
    }

    /// Wraps an error with what the run was doing when it came.
    pub(crate) fn step<E: std::error::Error + Send + Sync + 'static>(context: impl FnOnce() -> String) -> impl FnOnce(E) -> LabError {
        move |error| LabError::Step { context: context(), error: Box::new(error) }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LabError {
        let path = path.into();
        move |error| LabError::Io { path, error }
    }
}

pub type Result<T, E = LabError> = std::result::Result<T, E>;
