//! A sweep's finished runs, kept as append-only logs under `DIR/runs/`.
//!
//! Each shard process appends to its own log, `runs/shard-I-of-N.log`, one record
//! per finished run:
//!
//! ```text
//! #run KEY LEN
//! <LEN bytes: the run's CSV rows, header line first>
//! ```
//!
//! A record is written with one `write` call under a lock, so records from the
//! process's threads never interleave. A process killed mid-write leaves at most a
//! torn last record; readers stop at the first record that is incomplete or
//! malformed, and the shard's next process truncates its log to the last complete
//! record before appending, so nothing partial ever reads as a result. One file per
//! shard rather than one per run: creating a file costs the kernel more than a
//! short run's whole report (the per-run files of earlier versions were most of a
//! sweep's own overhead); earlier versions' `runs/KEY.csv` files are still read.

use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The log this process appends to.
pub struct RunLog {
    file: Mutex<std::fs::File>,
    path: PathBuf,
}

/// The name of shard `shard` of `shards`'s log.
fn log_name(shard: usize, shards: usize) -> String {
    format!("shard-{shard}-of-{shards}.log")
}

/// The complete records of a log's text, in order, and the length of the prefix
/// they fill (where a torn tail starts).
fn records(bytes: &[u8]) -> (Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(nl) = bytes[at..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let Ok(head) = std::str::from_utf8(&bytes[at..at + nl]) else {
            break;
        };
        let mut parts = head.split(' ');
        let (Some("#run"), Some(key), Some(len), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            break;
        };
        let Ok(len) = len.parse::<usize>() else { break };
        let start = at + nl + 1;
        let Some(body) = bytes.get(start..start + len) else {
            break;
        };
        let Ok(body) = std::str::from_utf8(body) else {
            break;
        };
        out.push((key.to_string(), body.to_string()));
        at = start + len;
    }
    (out, at)
}

impl RunLog {
    /// Open (or create) shard `shard` of `shards`'s log under `runs_dir`, cut to
    /// its last complete record.
    pub fn open(runs_dir: &Path, shard: usize, shards: usize) -> Result<RunLog> {
        let path = runs_dir.join(log_name(shard, shards));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .with_context(|| format!("cannot open '{}'", path.display()))?;
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read '{}'", path.display()))?;
        let (_, complete) = records(&bytes);
        if complete < bytes.len() {
            file.set_len(complete as u64)
                .with_context(|| format!("cannot cut the torn end of '{}'", path.display()))?;
        }
        Ok(RunLog {
            file: Mutex::new(file),
            path,
        })
    }

    /// Append a finished run's rows (`text`, header line first) under `key`.
    pub fn append(&self, key: &str, text: &str) -> Result<()> {
        let mut rec = format!("#run {key} {}\n", text.len()).into_bytes();
        rec.extend_from_slice(text.as_bytes());
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&rec)
            .with_context(|| format!("cannot write '{}'", self.path.display()))
    }
}

/// Every finished run under `runs_dir`, by key: the complete records of every log
/// (in file-name order; a key seen twice keeps its first text) and earlier
/// versions' `KEY.csv` files. `Ok` with nothing when the directory does not exist.
pub fn read_all(runs_dir: &Path) -> Result<HashMap<String, String>> {
    let mut found = HashMap::new();
    let entries = match std::fs::read_dir(runs_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e).with_context(|| format!("cannot read '{}'", runs_dir.display())),
    };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files {
        let ext = f.extension().and_then(|x| x.to_str());
        match ext {
            Some("log") => {
                let bytes =
                    std::fs::read(&f).with_context(|| format!("cannot read '{}'", f.display()))?;
                for (key, text) in records(&bytes).0 {
                    found.entry(key).or_insert(text);
                }
            }
            Some("csv") => {
                let Some(key) = f.file_stem().and_then(|s| s.to_str()) else {
                    continue;
                };
                let text = std::fs::read_to_string(&f)
                    .with_context(|| format!("cannot read '{}'", f.display()))?;
                found.entry(key.to_string()).or_insert(text);
            }
            _ => {}
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_record_is_cut_and_later_appends_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::open(dir.path(), 0, 2).unwrap();
        log.append("aa", "run,x\n0,1\n").unwrap();
        log.append("bb", "run,x\n2,3\n").unwrap();
        drop(log);
        // A process killed in the middle of its third record.
        let path = dir.path().join("shard-0-of-2.log");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"#run cc 11\nrun,x\n4").unwrap();
        drop(f);
        let found = read_all(dir.path()).unwrap();
        assert_eq!(found.len(), 2, "the torn record is not a result");
        let log = RunLog::open(dir.path(), 0, 2).unwrap();
        log.append("cc", "run,x\n4,5\n").unwrap();
        let found = read_all(dir.path()).unwrap();
        assert_eq!(found["aa"], "run,x\n0,1\n");
        assert_eq!(found["bb"], "run,x\n2,3\n");
        assert_eq!(found["cc"], "run,x\n4,5\n");
    }

    #[test]
    fn malformed_heads_end_a_log_and_old_run_files_still_count() {
        let (recs, at) = records(b"#run k 3\nabc#run k2 x\nzz");
        assert_eq!(recs, vec![("k".to_string(), "abc".to_string())]);
        assert_eq!(at, 12);
        assert_eq!(records(b"#run k 9\nabc").0.len(), 0);
        assert_eq!(records(b"garbage\n").1, 0);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0123abcd.csv"), "run,x\n0,1\n").unwrap();
        let found = read_all(dir.path()).unwrap();
        assert_eq!(found["0123abcd"], "run,x\n0,1\n");
        assert!(read_all(&dir.path().join("missing")).unwrap().is_empty());
    }
}
