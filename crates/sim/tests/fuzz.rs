//! A seeded mutational fuzzer over every kind of input iosched reads, run in-process
//! through the library entry points the commands use.
//!
//! For each input kind, valid inputs committed in the repository (job files under
//! `examples/`, `tests/fuzz/`, the kernel recordings, the block traces, the device and host profiles, the DiskSim
//! drives and validation traces under `data/`) are mutated — bytes flipped, text
//! truncated, lines deleted, duplicated and swapped, numbers replaced by edge values,
//! huge suffixes, NaN and infinities, unicode, CRLF and NUL — and fed to the parser
//! and, when it accepts them, to what runs them. Every case must return (an error is
//! fine) without panicking, within a time limit, and without its heap growing past a
//! limit (a counting global allocator in this test binary).
//!
//! The normal test run does `IOSCHED_FUZZ_CASES` cases per kind (default 2000) from a
//! fixed seed. The long mode runs until `IOSCHED_FUZZ_SECS` seconds have passed
//! (default one hour), with a seed from `IOSCHED_FUZZ_SEED` or the clock:
//!
//! ```sh
//! IOSCHED_FUZZ_SECS=14400 cargo test --release -p sim --test fuzz -- --ignored --nocapture
//! ```
//!
//! A failing case prints its kind, seed, case number and what went wrong, and writes
//! the input to `target/tmp/fuzz-failure.<kind>`, so that it can be replayed with the
//! command line.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ------------------------------------------------------------ memory accounting

/// Heap bytes live in the whole test binary.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Set when one allocation or the live total passed [`HEAP_LIMIT`].
static OVER: AtomicBool = AtomicBool::new(false);
/// The most heap a case may hold. Every input's sizes are bounded well below it;
/// an input that asks for more is a missing limit.
const HEAP_LIMIT: usize = 1 << 30;

struct Counting;

// SAFETY: forwards to the system allocator. An allocation past the limit is refused
// (null), which ends the process with Rust's allocation-failure message; the flag
// and the case printed before it say which input did it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        if now > HEAP_LIMIT {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            OVER.store(true, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let p = System.alloc(l);
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
            if now > HEAP_LIMIT {
                LIVE.fetch_sub(new - l.size(), Ordering::Relaxed);
                OVER.store(true, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        let q = System.realloc(p, l, new);
        if q.is_null() {
            // The old block is still live, at its old size.
            if new > l.size() {
                LIVE.fetch_sub(new - l.size(), Ordering::Relaxed);
            } else {
                LIVE.fetch_add(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

// ------------------------------------------------------------------- mutation

/// Values that break parsers and arithmetic.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999999",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e-308",
    "0x7fffffff",
    "1.5",
    "",
    "16p",
    "1e",
    "\u{1b}[2J",
    "é",
    "\u{202e}",
];
const SUFFIXES: &[&str] = &[
    "k", "m", "g", "t", "p", "e", "KiB", "PiB", "ms", "us", "h", "d",
];

fn mutate(rng: &mut Pcg64, seed_text: &str) -> Vec<u8> {
    let mut b = seed_text.as_bytes().to_vec();
    let rounds = rng.gen_range(1..=4);
    for _ in 0..rounds {
        match rng.gen_range(0..12) {
            0 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b.truncate(i);
            }
            2..=4 => line_op(rng, &mut b),
            5..=7 => number_op(rng, &mut b),
            8 => {
                // CRLF line ends.
                b = String::from_utf8_lossy(&b)
                    .replace('\n', "\r\n")
                    .into_bytes();
            }
            9 => {
                let i = rng.gen_range(0..=b.len());
                let ins: &[u8] = match rng.gen_range(0..4) {
                    0 => b"\0",
                    1 => "\u{fffd}\u{1f4a9}".as_bytes(),
                    2 => b"\xff\xfe",
                    _ => b"\n",
                };
                b.splice(i..i, ins.iter().copied());
            }
            10 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b[i] = rng.gen();
            }
            _ => number_op(rng, &mut b),
        }
    }
    b
}

fn line_op(rng: &mut Pcg64, b: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(b).into_owned();
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.is_empty() {
        return;
    }
    let i = rng.gen_range(0..lines.len());
    let j = rng.gen_range(0..lines.len());
    match rng.gen_range(0..3) {
        0 => {
            lines.remove(i);
        }
        1 => lines.insert(j, lines[i]),
        _ => lines.swap(i, j),
    }
    *b = lines.join("\n").into_bytes();
}

/// Replace a run of digits with an edge value, or add a huge suffix to it.
fn number_op(rng: &mut Pcg64, b: &mut Vec<u8>) {
    let digits: Vec<usize> = (0..b.len()).filter(|&i| b[i].is_ascii_digit()).collect();
    if digits.is_empty() {
        return;
    }
    let mut s = digits[rng.gen_range(0..digits.len())];
    while s > 0 && b[s - 1].is_ascii_digit() {
        s -= 1;
    }
    let mut e = s;
    while e < b.len() && (b[e].is_ascii_digit() || b[e] == b'.') {
        e += 1;
    }
    let with: String = if rng.gen_bool(0.7) {
        EDGES[rng.gen_range(0..EDGES.len())].to_string()
    } else {
        let n = String::from_utf8_lossy(&b[s..e]).into_owned();
        format!("{n}{}", SUFFIXES[rng.gen_range(0..SUFFIXES.len())])
    };
    b.splice(s..e, with.bytes());
}

// ------------------------------------------------------------------- targets

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_dir_sorted(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == ext));
    v.sort();
    v
}

/// The simulated time and bytes a fuzz case may run for: a mutated value that makes
/// a run long (a runtime of hours, a size of terabytes) is cut down to this, not
/// skipped, so the case still runs every option it sets. A case that is slow even
/// so is a defect (a loop that does not advance simulated time, or work that grows
/// faster than the run), which the per-case time limit catches.
const CASE_NS: u64 = 50_000_000;
const CASE_BYTES: u64 = 8 << 20;

/// Simulate `input`, each job cut down to [`CASE_NS`] of runtime and [`CASE_BYTES`]
/// of I/O.
fn run_bounded(input: &sim::fio::FioInput, device: devices::Profile) {
    let mut opts = sim::runner::RunOptions::new(device);
    opts.write_logs = false;
    let Ok(mut plan) = sim::runner::plan(input, &opts) else {
        return;
    };
    if plan.clones.len() > 16 {
        return;
    }
    for c in &mut plan.clones {
        c.runtime = Some(c.runtime.map_or(CASE_NS, |r| r.min(CASE_NS)));
        c.ramp_time = c.ramp_time.min(CASE_NS);
        c.start_delay = c.start_delay.min(CASE_NS);
        c.io_limit = c.io_limit.min(CASE_BYTES);
        c.number_ios = c.number_ios.map(|n| n.min(CASE_BYTES / 512));
    }
    let _ = sim::runner::run(input, &opts, plan, None);
}

fn host_profile(text: &str) {
    if let Ok(h) = host::profile::parse_host("fuzz.toml", text) {
        let job = "[j]\nrw=randread\nbs=4k\nsize=4m\ndirect=1\nioengine=libaio\niodepth=4\nnumber_ios=64\nnumjobs=2\n";
        let input = sim::fio::parse_job_file("fuzz.fio", job).unwrap();
        let mut opts = sim::runner::RunOptions::new(ideal()).with_host(h);
        opts.write_logs = false;
        if let Ok(plan) = sim::runner::plan(&input, &opts) {
            let _ = sim::runner::run(&input, &opts, plan, None);
        }
    }
}

/// A trace of one `iosched replay` format: the seed's first line names the
/// format, the rest is the file. It is checked as a replay checks it, then
/// read again as the replay's stream; a fio iolog is also run as a job's
/// `read_iolog`.
fn block_trace(text: &str) {
    let (format, body) = text.split_once('\n').unwrap_or((text, ""));
    let Some(f) = sim::trace::Format::from_name(format) else {
        return;
    };
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "fuzz-trace-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, body).unwrap();
    let cap = ideal().build().info().capacity_sectors * 512;
    for wrap in [false, true] {
        let rules = sim::trace::CheckRules {
            capacity: cap,
            wrap,
            allow_unsorted: wrap,
            check_units: true,
        };
        if let Ok(s) = sim::trace::check(f, &path, &rules) {
            let place = sim::trace::replay::Placement {
                capacity: cap,
                wrap,
                nr_cpus: 4,
            };
            let shared = Default::default();
            if let Ok(r) = sim::trace::open_sorted(f, &path, wrap) {
                let mut o = sim::trace::replay::OpenLoop::new(
                    r,
                    s.first_ns.unwrap_or(0),
                    Some(1.0),
                    place,
                    shared,
                );
                use sim::trace::replay::ReplayStream;
                while let Some(step) = o.next_step() {
                    assert!(!wrap || !step.op.has_extent() || step.offset + step.bytes <= cap);
                }
            }
        }
    }
    if f == sim::trace::Format::FioIolog || f == sim::trace::Format::Blktrace {
        let job = format!(
            "[r]\ndirect=1\nioengine=libaio\niodepth=4\nread_iolog={}\nreplay_no_stall=1\n",
            path.display()
        );
        if let Ok(input) = sim::fio::parse_job_file("fuzz.fio", &job) {
            run_bounded(&input, ideal());
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Seeds of the block-trace kind: the committed samples, a tracefs recording's
/// start, and a small blktrace capture whose bytes are all ASCII (so that it
/// survives the harness's text round trip).
fn trace_seeds(r: &Path) -> Vec<String> {
    let d = r.join("crates/sim/tests/data");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut v: Vec<String> = [
        ("blkparse", "traces/sample.blkparse"),
        ("msr", "traces/sample.msr.csv"),
        ("mqsim", "traces/sample.mqsim"),
        ("disksim-ascii", "traces/sample.disksim"),
        ("fio", "traces/fio-psync.iolog"),
    ]
    .iter()
    .map(|(f, p)| format!("{f}\n{}", read(&d.join(p))))
    .collect();
    let tracefs = read(&d.join("kernel/kyber-lowlat-getrq.txt"))
        .lines()
        .take(250)
        .collect::<Vec<_>>()
        .join("\n");
    v.push(format!("tracefs\n{tracefs}"));
    use sim::trace::blktrace::{act, Record, MAGIC, TA_COMPLETE, TA_ISSUE, TA_QUEUE, VERSION};
    let mut cap = Vec::new();
    for (i, (code, cats)) in [
        (TA_QUEUE, 1),
        (TA_ISSUE, 1),
        (TA_COMPLETE, 1),
        (TA_QUEUE, 2),
    ]
    .into_iter()
    .enumerate()
    {
        let r = Record {
            magic: MAGIC | VERSION,
            sequence: i as u32 + 1,
            time: 0x10 + i as u64 * 0x20,
            sector: 0x40,
            bytes: 0x1000,
            action: code | act(cats),
            pid: 0x33,
            device: 0x0800_0010,
            cpu: 1,
            error: 0,
            pdu_len: 0,
        };
        cap.extend_from_slice(&r.encode(false));
    }
    v.push(format!("blktrace\n{}", String::from_utf8(cap).unwrap()));
    v
}

fn ideal() -> devices::Profile {
    devices::profile("ideal-sq").unwrap()
}

fn fio_job(text: &str) {
    if let Ok(input) = sim::fio::parse_job_file("fuzz.fio", text) {
        run_bounded(&input, ideal());
    }
}

fn fio_cmdline(text: &str) {
    let args: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    if let Ok(input) = sim::fio::parse_command_line(&args) {
        run_bounded(&input, ideal());
    }
}

fn sched_trace(text: &str) {
    let _ = sim::replay::replay_to_string(text, "fuzz.jsonl");
}

/// The schedulers a recording is compared against, one per case.
const SCHEDS: [&str; 4] = ["mq-deadline", "kyber", "bfq", "none"];

fn kernel_recording(text: &str, sched: &str) {
    {
        let Ok((kt, _, conv)) =
            sim::kernel_trace::try_load(text, sched, None, sim::kernel_trace::Malformed::Skip)
        else {
            return;
        };
        let _ = sim::replay::replay_to_string(&conv.to_trace_text(), "emitted.jsonl");
        let _ = conv.to_trace_text();
        // Only short recordings are compared: a rebuild per disagreement.
        if kt.events.len() <= 600 {
            let opts = sim::kernel_trace::CompareOptions {
                explain: false,
                ..Default::default()
            };
            let _ = sim::kernel_trace::compare(&conv, &opts);
        }
        if let Ok(m) = sim::kernel_trace::merges::MergeRecording::parse(text) {
            let _ = m;
        }
    }
}

fn device_profile(text: &str) {
    let lookup = |n: &str| devices::profile(n).ok();
    if let Ok(p) = devices::parse_profile("fuzz.toml", text, &lookup) {
        let job =
            "[j]\nrw=randrw\nbs=4k\nsize=4m\ndirect=1\nioengine=libaio\niodepth=4\nnumber_ios=64\n";
        let input = sim::fio::parse_job_file("fuzz.fio", job).unwrap();
        run_bounded(&input, p);
    }
}

/// A copy of the DiskSim data in a scratch directory, one file of which each case
/// overwrites (and restores).
struct DiskSimDir {
    dir: tempfile::TempDir,
    files: Vec<(String, String)>,
}

impl DiskSimDir {
    fn new() -> Option<DiskSimDir> {
        let src = devices::disksim::validation_data_dir()?;
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for e in std::fs::read_dir(&src).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".trace") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            std::fs::write(dir.path().join(&name), &text).unwrap();
            files.push((name, text));
        }
        files.sort();
        Some(DiskSimDir { dir, files })
    }
}

fn disksim_drive(ds: &DiskSimDir, name: &str, bytes: &[u8], parv: &str) {
    let path = ds.dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    if let Ok(imp) = devices::disksim::import(&ds.dir.path().join(parv)) {
        let text = imp.to_toml();
        let lookup = |n: &str| devices::profile(n).ok();
        if let Ok(p) = devices::parse_profile("imported.toml", &text, &lookup) {
            if let devices::ProfileKind::HddTable(t) = &p.kind {
                let mut disk = devices::disksim::TableDisk::new("fuzz", (**t).clone());
                let trace = "0.0 0 1000 8 1 5000.0 0.0\n";
                if let Ok(reqs) = devices::disksim::trace::parse_trace("t", trace) {
                    devices::disksim::trace::replay(&mut disk, &reqs);
                }
            }
        }
    }
    let orig = ds.files.iter().find(|f| f.0 == name).unwrap();
    std::fs::write(&path, &orig.1).unwrap();
}

fn validate_trace(text: &str, disk: &devices::disksim::TableParams) {
    if let Ok(reqs) = devices::disksim::trace::parse_trace("fuzz.trace", text) {
        let mut d = devices::disksim::TableDisk::new("fuzz", disk.clone());
        devices::disksim::trace::replay(&mut d, &reqs);
    }
}

// ------------------------------------------------------------------- driver

/// The last panic's message and location.
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// How a campaign ends.
#[derive(Clone, Copy)]
enum Budget {
    Cases(u64),
    Until(Instant),
}

/// Seeds of one input kind, and how to run one case.
struct Kind {
    name: &'static str,
    seeds: Vec<String>,
}

fn kinds() -> Vec<Kind> {
    let r = root();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut jobs: Vec<String> = read_dir_sorted(&r.join("examples"), "fio")
        .iter()
        .chain(read_dir_sorted(&r.join("examples/seeds"), "fio").iter())
        .map(|p| read(p))
        .collect();
    jobs.push("[global]\nbs=4k\n[a]\nrw=randread\nsize=4m\ndirect=1\n".into());
    let cmdlines: Vec<String> = read(&r.join("crates/sim/tests/fuzz/cmdlines.txt"))
        .lines()
        .map(str::to_string)
        .collect();
    let mut traces: Vec<String> = read_dir_sorted(&r.join("crates/sim/tests/fuzz"), "jsonl")
        .iter()
        .map(|p| read(p))
        .collect();
    traces.push(read(&r.join("crates/sim/tests/data/none-basic.jsonl")));
    // The smaller recordings of each scheduler, cut to their first lines: cases stay
    // fast and still hold headers, timer and block events.
    let recordings: Vec<String> = [
        "seqwrite.txt",
        "randwrite.txt",
        "bfq-twojobs.txt",
        "kyber-randread.txt",
        "merges-seqwrite-b64-ddl.txt",
    ]
    .iter()
    .map(|f| {
        read(&r.join("crates/sim/tests/data/kernel").join(f))
            .lines()
            .take(250)
            .collect::<Vec<_>>()
            .join("\n")
    })
    .collect();
    let profiles: Vec<String> = read_dir_sorted(&r.join("crates/devices/profiles"), "toml")
        .iter()
        .map(|p| read(p))
        .collect();
    let hosts: Vec<String> = read_dir_sorted(&r.join("crates/host/profiles"), "toml")
        .iter()
        .map(|p| read(p))
        .collect();
    vec![
        Kind {
            name: "fio-job",
            seeds: jobs,
        },
        Kind {
            name: "fio-cmdline",
            seeds: cmdlines,
        },
        Kind {
            name: "sched-trace",
            seeds: traces,
        },
        Kind {
            name: "kernel-recording",
            seeds: recordings,
        },
        Kind {
            name: "device-profile",
            seeds: profiles,
        },
        Kind {
            name: "host-profile",
            seeds: hosts,
        },
        Kind {
            name: "block-trace",
            seeds: trace_seeds(&r),
        },
    ]
}

/// The longest one case may take (debug builds are slow; cases are small).
const CASE_LIMIT: Duration = Duration::from_secs(20);

/// Run `f` on a worker thread; fail (with the case) if it panics, takes longer than
/// [`CASE_LIMIT`] or went over the heap limit.
fn check(kind: &str, seed: u64, case: u64, input: &[u8], f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r.is_ok());
    });
    let verdict = match rx.recv_timeout(CASE_LIMIT) {
        Ok(true) => None,
        Ok(false) => Some(format!(
            "panicked: {}",
            PANIC
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_default()
        )),
        Err(_) => Some(format!("took more than {CASE_LIMIT:?}")),
    };
    let verdict = verdict.or_else(|| {
        OVER.swap(false, Ordering::Relaxed)
            .then(|| format!("went over the heap limit of {HEAP_LIMIT} bytes"))
    });
    if let Some(v) = verdict {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-failure.{kind}"));
        let _ = std::fs::write(&out, input);
        let _ = std::panic::take_hook();
        panic!(
            "{kind} case {case} (seed {seed}) {v}; input written to {}",
            out.display()
        );
    }
    let _ = h.join();
}

fn campaign(seed: u64, budget: Budget) -> u64 {
    // Quiet: a case's panic is caught and reported with its input, once.
    std::panic::set_hook(Box::new(|info| {
        *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.to_string());
    }));
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut total = 0;
    let disksim = DiskSimDir::new().map(std::sync::Arc::new);
    let atlas = disksim.as_ref().and_then(|_| {
        let d = devices::disksim::validation_data_dir()?;
        let imp = devices::disksim::import(&d.join("atlas_III.parv")).ok()?;
        let lookup = |n: &str| devices::profile(n).ok();
        match devices::parse_profile("atlas", &imp.to_toml(), &lookup)
            .ok()?
            .kind
        {
            devices::ProfileKind::HddTable(t) => Some(*t),
            _ => None,
        }
    });
    let validate_seeds: Vec<String> = devices::disksim::validation_data_dir()
        .map(|d| {
            read_dir_sorted(&d, "trace")
                .iter()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .unwrap()
                        .lines()
                        .take(200)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect()
        })
        .unwrap_or_default();
    let kinds = kinds();
    let per_kind = |k: &str, n: u64| match budget {
        Budget::Cases(c) => n < c,
        Budget::Until(t) => Instant::now() < t && !k.is_empty(),
    };
    // Per kind: the ones of `kinds`, then the DiskSim drives and validation traces.
    const DS: usize = 7;
    const VT: usize = 8;
    let mut counts = [0u64; 9];
    let mut spent = [Duration::ZERO; 9];
    loop {
        let mut any = false;
        for (ki, k) in kinds.iter().enumerate() {
            if !per_kind(k.name, counts[ki]) {
                continue;
            }
            any = true;
            let s = &k.seeds[rng.gen_range(0..k.seeds.len())];
            let input = mutate(&mut rng, s);
            let text = String::from_utf8_lossy(&input).into_owned();
            let sched = SCHEDS[rng.gen_range(0..SCHEDS.len())];
            let f: Box<dyn FnOnce(&str) + Send> = match k.name {
                "fio-job" => Box::new(fio_job),
                "fio-cmdline" => Box::new(fio_cmdline),
                "sched-trace" => Box::new(sched_trace),
                "kernel-recording" => Box::new(move |t: &str| kernel_recording(t, sched)),
                "host-profile" => Box::new(host_profile),
                "block-trace" => Box::new(block_trace),
                _ => Box::new(device_profile),
            };
            let t0 = Instant::now();
            check(k.name, seed, counts[ki], &input, move || f(&text));
            spent[ki] += t0.elapsed();
            counts[ki] += 1;
            total += 1;
        }
        if let Some(ds) = &disksim {
            if per_kind("disksim-drive", counts[DS]) {
                any = true;
                let (name, text) = &ds.files[rng.gen_range(0..ds.files.len())];
                let parv = ds
                    .files
                    .iter()
                    .map(|f| &f.0)
                    .filter(|n| n.ends_with(".parv"))
                    .nth(rng.gen_range(0..6))
                    .cloned()
                    .unwrap_or_else(|| "atlas_III.parv".into());
                let input = mutate(&mut rng, text);
                let (ds2, name2, input2) = (ds.clone(), name.clone(), input.clone());
                let t0 = Instant::now();
                check("disksim-drive", seed, counts[DS], &input, move || {
                    disksim_drive(&ds2, &name2, &input2, &parv)
                });
                spent[DS] += t0.elapsed();
                counts[DS] += 1;
                total += 1;
            }
        }
        if let (Some(atlas), false) = (&atlas, validate_seeds.is_empty()) {
            if per_kind("validate-trace", counts[VT]) {
                any = true;
                let s = &validate_seeds[rng.gen_range(0..validate_seeds.len())];
                let input = mutate(&mut rng, s);
                let text = String::from_utf8_lossy(&input).into_owned();
                let disk = atlas.clone();
                let t0 = Instant::now();
                check("validate-trace", seed, counts[VT], &input, move || {
                    validate_trace(&text, &disk)
                });
                spent[VT] += t0.elapsed();
                counts[VT] += 1;
                total += 1;
            }
        }
        if !any {
            break;
        }
    }
    let _ = std::panic::take_hook();
    let names = kinds
        .iter()
        .map(|k| k.name)
        .chain(["disksim-drive", "validate-trace"]);
    for ((name, n), t) in names.zip(counts).zip(spent) {
        eprintln!("fuzz: {name}: {n} cases in {t:.1?}");
    }
    total
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

#[test]
fn fuzz_every_input_kind() {
    let cases = env_u64("IOSCHED_FUZZ_CASES").unwrap_or(2000);
    let seed = env_u64("IOSCHED_FUZZ_SEED").unwrap_or(14);
    let n = campaign(seed, Budget::Cases(cases));
    assert!(n >= cases * 6, "only {n} cases ran");
}

#[test]
#[ignore = "long mode: IOSCHED_FUZZ_SECS (default 3600) of fuzzing"]
fn fuzz_long() {
    let secs = env_u64("IOSCHED_FUZZ_SECS").unwrap_or(3600);
    let seed = env_u64("IOSCHED_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    });
    eprintln!("fuzzing for {secs} s from seed {seed}");
    let n = campaign(
        seed,
        Budget::Until(Instant::now() + Duration::from_secs(secs)),
    );
    eprintln!("{n} cases, no failure");
}
