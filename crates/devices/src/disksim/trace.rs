//! DiskSim validation traces and their replay.
//!
//! A line is `R|W LABEL blkno bcount servtime_us nextinter_us`: the request, the
//! drive's cache behaviour as observed (`Hit`, `Miss`, `Doub`, `Trip`; informational
//! only, never given to the model), the service time measured on the real drive, and
//! the think time after this request completes before the next one arrives. DiskSim's
//! validate mode keeps one request outstanding: request `i+1` arrives `nextinter_i`
//! after request `i` completes in the simulation.

use super::model::TableDisk;
use super::params::{DiskSimError, Loc};
use std::path::Path;

/// One trace line.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceReq {
    /// Write (else read).
    pub write: bool,
    /// The measured cache outcome label.
    pub label: String,
    /// First block.
    pub blkno: u64,
    /// Blocks.
    pub bcount: u32,
    /// Measured service time, µs.
    pub serv_us: f64,
    /// Think time after completion, µs.
    pub nextinter_us: f64,
}

/// The largest request of a trace, in blocks: READ(10)'s 16-bit transfer length.
pub const MAX_BLOCKS: u32 = 65_535;

/// Parse a validation trace (`file` names it in errors).
pub fn parse_trace(file: &str, text: &str) -> Result<Vec<TraceReq>, DiskSimError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let loc = Loc {
            file: file.to_string(),
            line: i + 1,
        };
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() != 6 {
            return Err(DiskSimError::at(
                &loc,
                format!(
                    "expected 'R|W LABEL blkno bcount servtime_us nextinter_us', got {} fields",
                    w.len()
                ),
            ));
        }
        let write = match w[0] {
            "R" => false,
            "W" => true,
            o => return Err(DiskSimError::at(&loc, format!("'{o}' is not R or W"))),
        };
        let blkno = w[2]
            .parse::<u64>()
            .map_err(|_| DiskSimError::at(&loc, format!("bad block number '{}'", w[2])))?;
        let bcount = w[3]
            .parse::<u32>()
            .ok()
            .filter(|b| *b > 0)
            .ok_or_else(|| DiskSimError::at(&loc, format!("bad block count '{}'", w[3])))?;
        if bcount > MAX_BLOCKS {
            return Err(DiskSimError::at(
                &loc,
                format!("block count {bcount} is above {MAX_BLOCKS} (the most a SCSI READ(10)/WRITE(10) can transfer)"),
            ));
        }
        let num = |s: &str, what: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| DiskSimError::at(&loc, format!("bad {what} '{s}'")))
        };
        out.push(TraceReq {
            write,
            label: w[1].to_string(),
            blkno,
            bcount,
            serv_us: num(w[4], "service time")?,
            nextinter_us: num(w[5], "inter-arrival time")?,
        });
    }
    Ok(out)
}

/// Read and parse a validation trace file.
pub fn read_trace(path: &Path) -> Result<Vec<TraceReq>, DiskSimError> {
    let text = std::fs::read_to_string(path).map_err(|e| DiskSimError {
        loc: None,
        msg: format!("cannot read {}: {e}", path.display()),
    })?;
    parse_trace(&path.display().to_string(), &text)
}

/// One replayed request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replayed {
    /// Arrival, ms.
    pub arrive_ms: f64,
    /// Simulated service time, ms.
    pub sim_ms: f64,
    /// Measured service time, ms.
    pub real_ms: f64,
}

/// Replay `trace` as DiskSim's validate mode does.
pub fn replay(disk: &mut TableDisk, trace: &[TraceReq]) -> Vec<Replayed> {
    let mut t = 0.0;
    let mut out = Vec::with_capacity(trace.len());
    for r in trace {
        let s = disk.serve(t, r.write, r.blkno, r.bcount);
        out.push(Replayed {
            arrive_ms: t,
            sim_ms: s.done_ms - t,
            real_ms: r.serv_us / 1000.0,
        });
        t = s.done_ms + r.nextinter_us / 1000.0;
    }
    out
}
