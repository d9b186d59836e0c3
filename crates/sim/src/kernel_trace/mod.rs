//! Comparing our schedulers with the running kernel's (`iosched kernel-trace`).
//!
//! A recording (see `docs/validation.md`) is the text of tracefs with the block
//! events `block_rq_insert`/`issue`/`complete`/`merge`/`requeue` of one loop device
//! and the timer events `timer_start`/`timer_expire_entry`, preceded by
//! `# iosched: key=value` lines naming HZ, the device, the scheduler and its tunables.
//! The pipeline is [`parse::parse`] → [`fit::fit`] (jiffies from the timer events) →
//! [`convert::convert`] (a conformance trace plus the kernel's answers) →
//! [`compare::compare`] (decision-by-decision replay).

pub mod compare;
pub mod convert;
pub mod fit;
pub mod merges;
pub mod parse;

pub use compare::{compare, CompareOptions, CompareReport, Disagreement};
pub use convert::{convert, ConvertStats, Converted, DepthChange};
pub use fit::{fit, JiffiesFit};
pub use parse::{
    parse, BlockEvent, BlockKind, CgroupAttach, KernelTrace, KyberEvent, KyberEventKind,
    ProcessExit, TraceMeta,
};

/// What [`try_load`] does with lines it cannot parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// The first one is an error naming its line (the default: one corrupted line can
    /// move agreement by tens of points).
    Reject,
    /// They are left out and counted in [`KernelTrace::skipped`].
    Skip,
}

/// [`load`], checked: the header must be readable and name a scheduler (see
/// [`load_checked`]), a line the reader cannot parse is an error unless `malformed`
/// is [`Malformed::Skip`], and `hz` (given or recorded) must be 1 to
/// [`fit::MAX_HZ`]. Errors tied to a line read `N: reason` (N 1-based).
pub fn try_load(
    text: &str,
    sched: &str,
    hz: Option<u32>,
    malformed: Malformed,
) -> Result<(KernelTrace, JiffiesFit, Converted), String> {
    let kt = parse(text);
    if let Some((n, e)) = kt.header_errors.first() {
        return Err(format!("{n}: {e}"));
    }
    let header_lines = text.lines().filter(|l| l.starts_with("# iosched:")).count();
    if header_lines == 0 {
        return Err("1: no '# iosched:' header (not made by kernel-trace record?)".into());
    }
    if kt.meta.sched.is_none() {
        return Err("1: the header names no scheduler (no '# iosched: sched=' line)".into());
    }
    if malformed == Malformed::Reject {
        if let Some((line, why)) = kt.skipped.first() {
            return Err(format!(
                "{line}: {why} (use --skip-malformed to leave such lines out)"
            ));
        }
    }
    let hz = hz.or(kt.meta.hz).unwrap_or(250);
    if hz == 0 || hz > fit::MAX_HZ {
        return Err(format!(
            "HZ {hz}: expected 1 to {} (a kernel's CONFIG_HZ is 100, 250, 300 or 1000)",
            fit::MAX_HZ
        ));
    }
    Ok(finish(kt, sched, hz))
}

/// Parse a recording and convert it for scheduler `sched`; `hz` overrides the HZ the
/// recording names (default 250 when it names none, this machine's kernel). Lenient:
/// unparsable lines are left out (see [`KernelTrace::skipped`]); [`try_load`] is the
/// checked form the command line uses.
pub fn load(text: &str, sched: &str, hz: Option<u32>) -> (KernelTrace, JiffiesFit, Converted) {
    load_parsed(parse(text), sched, hz)
}

fn load_parsed(
    kt: KernelTrace,
    sched: &str,
    hz: Option<u32>,
) -> (KernelTrace, JiffiesFit, Converted) {
    let hz = hz.or(kt.meta.hz).unwrap_or(250);
    finish(kt, sched, hz)
}

fn finish(kt: KernelTrace, sched: &str, hz: u32) -> (KernelTrace, JiffiesFit, Converted) {
    let first = kt.events.first().map(|e| e.ts_ns).unwrap_or(0);
    let f = fit(&kt.samples, hz).unwrap_or_else(|| JiffiesFit::unanchored(first, hz));
    let c = convert(&kt, sched, hz, &f);
    (kt, f, c)
}

/// [`load`], refusing a recording whose header it cannot read: the first bad
/// `# iosched:` line (as `N: reason`, N the 1-based line), no header at all, or a header that
/// names no scheduler (replaying such a recording would silently use default
/// tunables and an unknown scheduler), and any other line it cannot parse:
/// [`try_load`] with [`Malformed::Reject`].
pub fn load_checked(
    text: &str,
    sched: &str,
    hz: Option<u32>,
) -> Result<(KernelTrace, JiffiesFit, Converted), String> {
    try_load(text, sched, hz, Malformed::Reject)
}
