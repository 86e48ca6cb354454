//! Output files that appear whole or not at all.
//!
//! A command killed while it writes a trace, a table or an image must not leave a file under
//! the final name that a later command reads as if it were complete (a trace cut at a line end
//! reads as a shorter trace). [`AtomicFile`] writes beside the target, in the same directory
//! (so the rename never crosses file systems), under a hidden name carrying the writer's process
//! id: `.NAME.partial-PID.N`. [`AtomicFile::commit`] flushes, fsyncs the file, renames it over the
//! target and fsyncs the directory, so after a crash the target is the old file or the new
//! one, whole. Dropped without a commit (an error, a panic) the temporary file is removed.
//!
//! A target that exists and is not a regular file (`/dev/stdout`, a FIFO) is written in place:
//! renaming over it would replace the device node. A symbolic link stays one: the file it
//! names is replaced.
//!
//! A process killed outright runs no destructor: its temporary file stays. The next
//! [`AtomicFile::create`] of the same target removes every temporary of it whose process is
//! gone, so a rerun leaves no junk beside its output.
//!
//! ```
//! use std::io::Write;
//! let dir = std::env::temp_dir().join(format!("zonekit-atomic-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("out.csv");
//! let mut file = zonekit_base::atomic::AtomicFile::create(&path).unwrap();
//! writeln!(file, "a,b").unwrap();
//! assert!(!path.exists(), "nothing under the final name before the commit");
//! file.commit().unwrap();
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n");
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What separates the target's name from the writer's process id in a temporary name.
const PARTIAL_MARK: &str = ".partial-";

/// A file written aside and renamed over its target on [`AtomicFile::commit`].
#[derive(Debug)]
pub struct AtomicFile {
    /// `None` once committed.
    out: Option<BufWriter<File>>,
    temp_path: PathBuf,
    path: PathBuf,
    /// The target is not a regular file (`/dev/stdout`, a FIFO, a device): it is written
    /// directly, as renaming over it would replace the device node itself.
    in_place: bool,
}

impl AtomicFile {
    /// Starts writing `path`: creates its temporary beside it (the directory must exist) and
    /// removes temporaries of `path` that killed writers left.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let buffered = |file| Some(BufWriter::with_capacity(1 << 20, file));
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                let file = File::options().write(true).open(path)?;
                return Ok(AtomicFile { out: buffered(file), temp_path: path.to_path_buf(), path: path.to_path_buf(), in_place: true });
            }
            _ => {}
        }
        // A symbolic link stays one: the file it names is replaced.
        let path = if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) { std::fs::canonicalize(path)? } else { path.to_path_buf() };
        let temp_path = partial_path(&path)?;
        let file = File::create(&temp_path)?;
        Ok(AtomicFile { out: buffered(file), temp_path, path, in_place: false })
    }

    /// The file being written, until the commit: for a writer that must reopen it (to patch a
    /// header in place) before it is published.
    pub fn temp_path(&self) -> &Path {
        &self.temp_path
    }

    /// The target.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file under its temporary name (flushed first), for seeking back to patch a
    /// header before the commit.
    pub fn file_mut(&mut self) -> io::Result<&mut File> {
        let out = self.out.as_mut().expect("not committed");
        out.flush()?;
        Ok(out.get_mut())
    }

    /// Flushes and fsyncs the file, renames it over the target and fsyncs the directory:
    /// from here on the target is the new file, whole, even across a power loss.
    pub fn commit(mut self) -> io::Result<()> {
        let out = self.out.take().expect("committed once");
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if self.in_place {
            return Ok(());
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.temp_path, &self.path)?;
        let (dir, _) = split(&self.path)?;
        // A directory that cannot be opened for fsync (some network file systems) still got
        // the rename; only its durability across a power loss is weaker.
        if let Ok(d) = File::open(dir) {
            d.sync_all()?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("not committed").write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.as_mut().expect("not committed").write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some() && !self.in_place {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

/// Writes `contents` to `path` whole or not at all: [`std::fs::write`] through an
/// [`AtomicFile`].
pub fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut file = AtomicFile::create(path.as_ref())?;
    file.write_all(contents.as_ref())?;
    file.commit()
}

/// A fresh temporary name for `path` (`.NAME.partial-PID.N` beside it; N tells apart two
/// threads writing the same target), for a writer that
/// builds a file its own way (a device image, made with `create_new` and locked) and renames
/// or links it into place itself; temporaries of `path` that killed writers left are removed.
pub fn partial_path(path: &Path) -> io::Result<PathBuf> {
    let (dir, name) = split(path)?;
    remove_orphans(dir, &name);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(dir.join(format!(".{name}{PARTIAL_MARK}{}.{n}", std::process::id())))
}

/// Whether `name` is a temporary an [`AtomicFile`] writes (of any target).
pub fn is_partial(name: &str) -> bool {
    name.starts_with('.') && name.rsplit_once(PARTIAL_MARK).and_then(|(_, tail)| parse_tail(tail)).is_some()
}

/// The directory (`.` for a bare name) and the file name of a target.
fn split(path: &Path) -> io::Result<(&Path, String)> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a file name", path.display())))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((dir, name.to_string_lossy().into_owned()))
}

/// Removes the temporaries of `name` in `dir` whose writers are gone (best effort: a
/// directory that cannot be listed has none to remove that we could remove).
fn remove_orphans(dir: &Path, name: &str) {
    let prefix = format!(".{name}{PARTIAL_MARK}");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(parse_tail) else { continue };
        if pid != std::process::id() as i32 && !process_alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The writer's process id from a temporary name's `PID.N`.
fn parse_tail(tail: &str) -> Option<i32> {
    let (pid, n) = tail.split_once('.')?;
    n.parse::<u64>().ok()?;
    pid.parse::<i32>().ok().filter(|&p| p > 0)
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    // EPERM: it exists under another user.
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(&vec![b'x'; 3 << 20]).unwrap();
        assert!(!path.exists(), "the target appears only at the commit");
        assert!(f.temp_path().exists());
        drop(f);
        assert_eq!(names(dir.path()), Vec::<String>::new(), "no target and no temporary");
    }

    #[test]
    fn commit_replaces_an_existing_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        std::fs::write(&path, "old contents, longer than the new ones\n").unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old contents, longer than the new ones\n", "the old file stays until the commit");
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(names(dir.path()), vec!["results.csv".to_string()]);
        write(&path, "newer\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "newer\n");
    }

    #[test]
    fn a_killed_writers_temporary_is_removed_by_the_next_writer_and_a_live_ones_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.zkt");
        // No process has a pid this large (Linux caps them at 2^22).
        let dead = dir.path().join(format!(".out.zkt{PARTIAL_MARK}{}.0", 1 << 30));
        // Process 1 is always there.
        let live = dir.path().join(format!(".out.zkt{PARTIAL_MARK}1.0"));
        let other = dir.path().join(format!(".other.zkt{PARTIAL_MARK}{}.3", 1 << 30));
        for p in [&dead, &live, &other] {
            std::fs::write(p, "partial").unwrap();
        }
        write(&path, "whole").unwrap();
        assert!(!dead.exists());
        assert!(live.exists(), "a running writer's file is its own");
        assert!(other.exists(), "another target's temporaries wait for its writer");
        assert!(is_partial(".out.zkt.partial-1.0") && !is_partial("out.zkt") && !is_partial(".out.partial-") && !is_partial(".out.partial-1"));
    }

    #[test]
    fn a_target_that_is_not_a_regular_file_is_written_in_place_and_stays_what_it_was() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read_to_string(fifo).unwrap()
        });
        let mut f = AtomicFile::create(&fifo).unwrap();
        f.write_all(b"through the pipe").unwrap();
        f.commit().unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "renaming over it would have replaced the FIFO");
        assert_eq!(names(dir.path()), vec!["pipe".to_string()]);
    }

    #[test]
    fn a_symbolic_link_stays_one_and_the_file_it_names_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (real, link) = (dir.path().join("real.csv"), dir.path().join("link.csv"));
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_bare_name_writes_in_the_current_directory_and_a_directory_is_refused() {
        assert!(AtomicFile::create(Path::new("/")).is_err());
        let (dir, name) = split(Path::new("x.csv")).unwrap();
        assert_eq!((dir, name.as_str()), (Path::new("."), "x.csv"));
    }
}
