//! Writing output files (reports, logs, plots, traces) whole or not at all.
//!
//! A regular file (or an absent one) is written to a temporary beside it and renamed
//! over it, so a failed or killed run never leaves a partial file under the final
//! name. Anything else — a symbolic link, a character device such as `/dev/null` or
//! `/dev/stdout`, a FIFO — is opened and written through, as fio does: renaming over
//! it would replace the link or the device node with a regular file.
//!
//! Temporaries still on disk are listed here, so a signal handler can remove them
//! ([`remove_temporaries`]) before the process exits.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporaries created and neither renamed into place nor removed yet.
static TEMPORARIES: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    // A panic while holding the lock leaves the set as valid as before it.
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove every temporary still on disk (for a signal handler's thread, before it
/// ends the process).
pub fn remove_temporaries() {
    for p in std::mem::take(&mut *live()) {
        let _ = std::fs::remove_file(p);
    }
}

/// Whether `path` is written through rather than replaced: it exists and is not a
/// regular file (a symbolic link, whatever it points to, or a special file).
pub fn writes_through(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) => !m.file_type().is_file(),
        Err(_) => false,
    }
}

/// A file being written for `target`: a temporary beside it, or the target itself
/// when it is written through. [`Output::commit`] puts it in place; dropping it
/// uncommitted removes the temporary.
#[derive(Debug)]
pub struct Output {
    file: Option<File>,
    tmp: Option<PathBuf>,
    target: PathBuf,
}

impl Output {
    /// Start writing `target`.
    pub fn create(target: &Path) -> io::Result<Output> {
        if writes_through(target) {
            let file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .create(true)
                .open(target)?;
            return Ok(Output {
                file: Some(file),
                tmp: None,
                target: target.to_path_buf(),
            });
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Registered before it exists, so no window where a signal would miss it.
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".iosched-tmp")
            .make_in(dir, |p| {
                live().insert(p.to_path_buf());
                OpenOptions::new().write(true).create_new(true).open(p)
            })?;
        let (file, path) = tmp.into_parts();
        Ok(Output {
            file: Some(file),
            tmp: Some(path.keep().map_err(|e| e.error)?),
            target: target.to_path_buf(),
        })
    }

    /// The file to write to.
    pub fn file(&mut self) -> &mut File {
        self.file
            .as_mut()
            .expect("an output is not used after commit")
    }

    /// Flush and put the file in place.
    pub fn commit(mut self) -> io::Result<()> {
        let mut f = self.file.take().expect("committed once");
        f.flush()?;
        drop(f);
        if let Some(tmp) = self.tmp.take() {
            let r = std::fs::rename(&tmp, &self.target);
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            live().remove(&tmp);
            r?;
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.file.take();
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
            live().remove(&tmp);
        }
    }
}

/// Write `bytes` to `path` whole or not at all (see the module comment).
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut out = Output::create(path)?;
    out.file().write_all(bytes)?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_replaced_and_links_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.txt");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"one").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"one");
        write_file(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&link).unwrap(), b"two");
        write_file(Path::new("/dev/null"), b"x").unwrap();
        // Nothing but the two names is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn an_uncommitted_output_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("r.json");
        let mut o = Output::create(&target).unwrap();
        o.file().write_all(b"partial").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(o);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
