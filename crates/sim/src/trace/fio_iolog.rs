//! fio's iolog: versions 2 and 3 read (fio's `read_iolog` in iolog.c), version 3
//! written (`init_iolog_write`, `log_io_u`, `log_file`).
//!
//! Version 2 lines are `FILE ACTION [OFFSET LENGTH]`, version 3 lines start with
//! a timestamp in µs from the job's start: `TIME FILE ACTION [OFFSET LENGTH]`.
//! File actions (`add`, `open`, `close`) take no extent, I/O actions (`read`,
//! `write`, `trim`, `sync`, `datasync`, v2 `wait`) do. As in fio, an unknown
//! action is skipped (here counted and listed once), and a version 3 `wait` is
//! skipped. Unlike fio, which skips a line it cannot parse with a message, a
//! malformed line is an error naming it: a replay must not silently drop I/O.

use super::{count_unknown, line_str, read_line, TraceError, TraceIo, TraceOp, TraceReader};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;

/// fio's first line of a version 2 iolog.
pub const IOLOG_V2: &str = "fio version 2 iolog";
/// fio's first line of a version 3 iolog.
pub const IOLOG_V3: &str = "fio version 3 iolog";

/// A streaming reader of a fio iolog.
pub struct IologReader {
    file: String,
    input: Box<dyn BufRead + Send>,
    version: u8,
    line: u64,
    buf: Vec<u8>,
    unknown: BTreeMap<String, u64>,
    files: std::collections::BTreeSet<String>,
}

impl IologReader {
    /// Open `path` and read its version line.
    pub fn open(path: &Path) -> Result<IologReader, TraceError> {
        let f = std::fs::File::open(path).map_err(|e| TraceError {
            file: path.display().to_string(),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        IologReader::new(
            path.display().to_string(),
            Box::new(std::io::BufReader::with_capacity(1 << 16, f)),
        )
    }

    /// Read an iolog from `input` (named `file` in messages).
    pub fn new(
        file: String,
        mut input: Box<dyn BufRead + Send>,
    ) -> Result<IologReader, TraceError> {
        let mut buf = Vec::new();
        if !read_line(&mut *input, &mut buf, &file, 1)? {
            return Err(TraceError {
                file,
                line: 1,
                message: format!("empty file: expected '{IOLOG_V3}' or '{IOLOG_V2}'"),
            });
        }
        // fio compares the version string as a prefix of the first line.
        let version = if buf.starts_with(IOLOG_V2.as_bytes()) {
            2
        } else if buf.starts_with(IOLOG_V3.as_bytes()) {
            3
        } else {
            return Err(TraceError {
                file,
                line: 1,
                message: format!(
                    "not a fio iolog: expected '{IOLOG_V3}' or '{IOLOG_V2}' (version 1 is no longer supported by fio)"
                ),
            });
        };
        Ok(IologReader {
            file,
            input,
            version,
            line: 1,
            buf,
            unknown: BTreeMap::new(),
            files: Default::default(),
        })
    }

    /// The iolog's version (2 or 3).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Distinct file names the I/O lines named so far (at most 64 kept).
    pub fn files(&self) -> &std::collections::BTreeSet<String> {
        &self.files
    }

    fn err(&self, message: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.line,
            message,
        }
    }

    /// Parse the current line; `None` for one that is skipped.
    fn parse_line(&mut self) -> Result<Option<TraceIo>, TraceError> {
        let text = line_str(&self.buf, &self.file, self.line)?;
        let (all, nf) = super::ws_fields::<8>(text);
        let f = &all[..nf.min(8)];
        if f.is_empty() {
            return Ok(None);
        }
        let (t_ns, rest) = if self.version == 3 {
            let t: u64 = f[0].parse().map_err(|_| {
                self.err(format!(
                    "bad timestamp '{}': expected µs since the job's start (fio iolog 3: 'TIME FILE ACTION [OFFSET LENGTH]')",
                    f[0]
                ))
            })?;
            let ns = t
                .checked_mul(1_000)
                .ok_or_else(|| self.err(format!("timestamp {t} µs is beyond 2^64 ns")))?;
            (Some(ns), &f[1..])
        } else {
            (None, f)
        };
        let shape = if self.version == 3 {
            "expected 'TIME FILE ACTION' or 'TIME FILE ACTION OFFSET LENGTH'"
        } else {
            "expected 'FILE ACTION' or 'FILE ACTION OFFSET LENGTH'"
        };
        let io = |op, offset, bytes| TraceIo {
            line: self.line,
            t_ns,
            op,
            offset,
            bytes,
            pid: None,
            cpu: None,
        };
        match rest.len() {
            2 => match rest[1] {
                "add" | "open" | "close" => Ok(Some(io(TraceOp::File, 0, 0))),
                other => {
                    count_unknown(&mut self.unknown, other);
                    Ok(None)
                }
            },
            4 => {
                let offset: u64 = rest[2]
                    .parse()
                    .map_err(|_| self.err(format!("bad offset '{}': {shape}", rest[2])))?;
                // fio reads the length with %u.
                let bytes: u32 = rest[3].parse().map_err(|_| {
                    self.err(format!(
                        "bad length '{}' (0..=4294967295 bytes): {shape}",
                        rest[3]
                    ))
                })?;
                let op = match rest[1] {
                    "read" => TraceOp::Read,
                    "write" => TraceOp::Write,
                    "trim" => TraceOp::Trim,
                    "sync" | "datasync" => TraceOp::Sync,
                    "wait" if self.version == 2 => TraceOp::Wait,
                    other => {
                        // fio: "ignoring wait command with version 3", "bad iolog
                        // file action".
                        count_unknown(&mut self.unknown, other);
                        return Ok(None);
                    }
                };
                if op.has_extent() && bytes == 0 {
                    return Err(self.err(format!("{} of 0 bytes: fio cannot issue it", rest[1])));
                }
                if op.has_extent() && offset.checked_add(bytes as u64).is_none() {
                    return Err(self.err(format!("offset {offset} + {bytes} overflows")));
                }
                if self.files.len() < 64 {
                    self.files.insert(rest[0].to_string());
                }
                Ok(Some(io(op, offset, bytes as u64)))
            }
            _ => Err(self.err(format!("{nf} fields: {shape}"))),
        }
    }
}

impl TraceReader for IologReader {
    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        loop {
            let n = self.line + 1;
            if !read_line(&mut *self.input, &mut self.buf, &self.file, n)? {
                return Ok(None);
            }
            self.line = n;
            if let Some(io) = self.parse_line()? {
                return Ok(Some(io));
            }
        }
    }

    fn unknown(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}

/// Writes fio's iolog version 3 of the I/O a job issued, as fio's `write_iolog`
/// does: the version line, `add` and `open` of the file at time 0, one line per
/// I/O at its issue time (µs since the job's start), `close` at the end.
pub struct IologWriter {
    out: std::io::BufWriter<std::fs::File>,
    file_name: String,
    last_us: u64,
}

impl IologWriter {
    /// Start writing to `out`; the I/O lines name `file_name`.
    pub fn new(out: std::fs::File, file_name: &str) -> std::io::Result<IologWriter> {
        let mut w = IologWriter {
            out: std::io::BufWriter::with_capacity(1 << 16, out),
            file_name: file_name.to_string(),
            last_us: 0,
        };
        writeln!(w.out, "{IOLOG_V3}")?;
        writeln!(w.out, "0 {} add", w.file_name)?;
        writeln!(w.out, "0 {} open", w.file_name)?;
        Ok(w)
    }

    /// One I/O issued `at_us` µs after the job's start.
    pub fn io(&mut self, at_us: u64, op: TraceOp, offset: u64, bytes: u64) -> std::io::Result<()> {
        self.last_us = self.last_us.max(at_us);
        writeln!(
            self.out,
            "{at_us} {} {} {offset} {bytes}",
            self.file_name,
            op.fio_name()
        )
    }

    /// Close the file at `at_us` and flush.
    pub fn finish(mut self, at_us: u64) -> std::io::Result<()> {
        writeln!(
            self.out,
            "{} {} close",
            at_us.max(self.last_us),
            self.file_name
        )?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<(Vec<TraceIo>, BTreeMap<String, u64>), TraceError> {
        let mut r = IologReader::new(
            "t.log".into(),
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        )?;
        let mut v = Vec::new();
        while let Some(io) = r.next_io()? {
            v.push(io);
        }
        Ok((v, r.unknown().clone()))
    }

    #[test]
    fn version_3_lines() {
        let (v, unknown) = read_all(
            "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n12 /dev/x read 4096 512\n30 /dev/x wait 5 0\n40 /dev/x bogus 0 0\n50 /dev/x write 0 8192\n60 /dev/x close\n",
        )
        .unwrap();
        let ops: Vec<_> = v
            .iter()
            .map(|i| (i.line, i.t_ns, i.op, i.offset, i.bytes))
            .collect();
        assert_eq!(
            ops,
            vec![
                (2, Some(0), TraceOp::File, 0, 0),
                (3, Some(0), TraceOp::File, 0, 0),
                (4, Some(12_000), TraceOp::Read, 4096, 512),
                (7, Some(50_000), TraceOp::Write, 0, 8192),
                (8, Some(60_000), TraceOp::File, 0, 0),
            ]
        );
        assert_eq!(unknown.get("wait"), Some(&1));
        assert_eq!(unknown.get("bogus"), Some(&1));
    }

    #[test]
    fn version_2_lines_and_wait() {
        let (v, _) =
            read_all("fio version 2 iolog\n/f add\n/f open\n/f wait 100 0\n/f read 0 4096\n")
                .unwrap();
        assert_eq!(v[2].op, TraceOp::Wait);
        assert_eq!(v[2].offset, 100);
        assert_eq!(v[3].t_ns, None);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let e = read_all("fio version 3 iolog\n0 /f add\nx /f read 0 1\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string().starts_with("t.log:3: bad timestamp 'x'"),
            "{e}"
        );
        let e = read_all("fio version 3 iolog\n1 /f read 0\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = read_all("fio version 3 iolog\n1 /f read 0 0\n").unwrap_err();
        assert!(e.message.contains("0 bytes"), "{e}");
        let e = read_all("fio version 1 iolog\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(read_all("").is_err());
    }
}
