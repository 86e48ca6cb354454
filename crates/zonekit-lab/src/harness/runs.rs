//! Finished runs kept one file each under `OUT/runs/`, so that an experiment whose outputs need
//! each run's whole outcome (series, wear maps, distributions), not only a `results.csv` row,
//! resumes where it stopped: a rerun into the same directory loads a run whose file holds its
//! key and recomputes the rest.
//!
//! A run's key is everything that defines it, as text (its own `zonekit` command, and for a
//! trace the file's length and modification time): a file is reused only when its key is the
//! run's, byte for byte, so a resumed experiment never reports a run made under other settings.
//! The file is `KEY\nCHECK\nJSON`, CHECK the fingerprint of the JSON; it is written aside and
//! renamed, so an interruption leaves the old file or the new one, and a damaged file (a cell
//! changed, cut short) fails its check and is recomputed. Floats go through JSON exactly
//! (serde_json's `float_roundtrip`), so a loaded run is the run that was saved.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::harness::error::{LabError, Result};
use crate::harness::results::{fingerprint, write_atomically};

/// The folder of finished runs under an experiment's output directory.
pub const RUNS_DIR: &str = "runs";

pub(crate) struct RunStore {
    dir: PathBuf,
}

/// What [`RunStore::load`] found for a key.
pub(crate) enum Stored<T> {
    /// The run, as saved.
    Run(T),
    /// No file for this key, or one of another key (its name collided): run it.
    Missing,
    /// A file for this key that fails its check or does not parse: run it again.
    Damaged,
}

impl RunStore {
    pub fn open(out: &Path) -> Result<RunStore> {
        let dir = out.join(RUNS_DIR);
        std::fs::create_dir_all(&dir).map_err(LabError::io(&dir))?;
        Ok(RunStore { dir })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", fingerprint(key)))
    }

    pub fn load<T: DeserializeOwned>(&self, key: &str) -> Stored<T> {
        let Ok(text) = std::fs::read_to_string(self.path(key)) else { return Stored::Missing };
        let mut parts = text.splitn(3, '\n');
        let (Some(stored_key), Some(check), Some(json)) = (parts.next(), parts.next(), parts.next()) else { return Stored::Damaged };
        if stored_key != key {
            return Stored::Missing;
        }
        if check != fingerprint(json) {
            return Stored::Damaged;
        }
        serde_json::from_str(json).map_or(Stored::Damaged, Stored::Run)
    }

    pub fn save<T: Serialize>(&self, key: &str, run: &T) -> Result<()> {
        debug_assert!(!key.contains('\n'), "a key is one line");
        let json = serde_json::to_string(run).expect("a run serializes");
        write_atomically(&self.path(key), &format!("{key}\n{}\n{json}", fingerprint(&json)))
    }
}

/// What a run's key adds for its input: for a trace file, its length and modification time,
/// so that a changed trace is run again; nothing for a generated workload (its spec and seed
/// are in the command).
pub(crate) fn input_identity(input: &zonekit_trace::input::Input) -> String {
    if let zonekit_trace::input::Source::Binary(path) | zonekit_trace::input::Source::Trace { path, .. } = &input.source {
        if let Ok(meta) = std::fs::metadata(path) {
            let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
            return format!(" # {}: {} bytes, modified {modified} ns", input.describe(), meta.len()).replace('\n', " ");
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_loaded_by_its_key_only_and_a_damaged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let run = (0.1f64 + 0.2, vec![1.0f32 / 3.0, 2.7e-9], "x".to_string());
        store.save("zonekit ocssd run --ftl dftl", &run).unwrap();
        match store.load::<(f64, Vec<f32>, String)>("zonekit ocssd run --ftl dftl") {
            Stored::Run(back) => assert_eq!(back, run, "floats come back bit for bit"),
            _ => panic!("saved, not loaded"),
        }
        assert!(matches!(store.load::<(f64, Vec<f32>, String)>("zonekit ocssd run --ftl fast"), Stored::Missing));
        let path = store.path("zonekit ocssd run --ftl dftl");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("0.30000000000000004", "0.3")).unwrap();
        assert!(matches!(store.load::<(f64, Vec<f32>, String)>("zonekit ocssd run --ftl dftl"), Stored::Damaged));
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        assert!(matches!(store.load::<(f64, Vec<f32>, String)>("zonekit ocssd run --ftl dftl"), Stored::Damaged));
    }
}
