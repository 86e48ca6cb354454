//! The CLI's two kinds of failure: a request that cannot be run as given ([`Usage`], exit
//! status 2) and a run that failed (exit status 1); [`lab`] sorts the lab's errors into them.

use zonekit_lab::LabError;

/// A request that cannot be run as given (a bad value, name or path): exit status 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Turns a harness error into the CLI's: usage errors exit with status 2, failed runs with 1.
pub fn lab(e: LabError) -> anyhow::Error {
    if e.is_usage() {
        Usage(e.to_string()).into()
    } else {
        e.into()
    }
}
