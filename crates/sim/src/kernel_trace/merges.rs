//! Merge counts: the kernel's against ours (`iosched kernel-trace merges`).
//!
//! A merges recording (`kernel-trace record --merges-only`) is only the
//! `# iosched: key=value` header: the queue settings, the fio arguments, the loop
//! device's `/sys/block/loopN/stat` before and after the run (`stat_before`,
//! `stat_after`) and the per-direction counts of the merge tracepoints
//! (`events.block_rq_merge=READS,WRITES`, likewise `block_bio_backmerge` and
//! `block_bio_frontmerge`). [`simulate`] runs the same fio job through our block
//! layer on an `ideal` device standing in for the loop device and returns our
//! `/proc/diskstats` figures beside them.

use super::parse::{parse, TraceMeta};
use crate::fio::parse_command_line;
use crate::runner::{self, RunOptions};
use devices::{ideal::IdealParams, Profile, ProfileKind};

/// The merge tracepoints counted, in the order they are reported.
pub const MERGE_EVENTS: [&str; 3] = [
    "block_rq_merge",
    "block_bio_backmerge",
    "block_bio_frontmerge",
];

/// Count the merge tracepoints in tracefs text, per direction (`[reads, writes]`,
/// from the `rwbs` field; discards and flushes are not counted).
pub fn count_merge_events(text: &str) -> Vec<(&'static str, [u64; 2])> {
    let mut out: Vec<(&'static str, [u64; 2])> =
        MERGE_EVENTS.iter().map(|n| (*n, [0, 0])).collect();
    for l in text.lines() {
        if l.starts_with('#') {
            continue;
        }
        for (i, name) in MERGE_EVENTS.iter().enumerate() {
            let pat = format!(" {name}: ");
            let Some(p) = l.find(&pat) else { continue };
            // "MAJ,MIN RWBS ..."
            let rwbs = l[p + pat.len()..].split_whitespace().nth(1).unwrap_or("");
            if rwbs.contains('D')
                || rwbs.starts_with('F') && !rwbs.contains('R') && !rwbs.contains('W')
            {
                continue;
            }
            if rwbs.contains('W') {
                out[i].1[1] += 1;
            } else if rwbs.contains('R') {
                out[i].1[0] += 1;
            }
        }
    }
    out
}

/// A merges recording.
#[derive(Debug, Clone)]
pub struct MergeRecording {
    /// Queue settings and the rest of the header.
    pub meta: TraceMeta,
    /// The loop device's path (`--filename`).
    pub device: String,
    /// fio's arguments as recorded (without `--filename`).
    pub fio: Vec<String>,
    /// Size of the loop device's backing file, bytes.
    pub size: Option<u64>,
    /// `/sys/block/loopN/stat` before the run.
    pub stat_before: Vec<u64>,
    /// `/sys/block/loopN/stat` after the run.
    pub stat_after: Vec<u64>,
    /// Merge tracepoint counts, `[reads, writes]`, in [`MERGE_EVENTS`] order (empty
    /// when the recording has none).
    pub events: Vec<(String, [u64; 2])>,
}

impl MergeRecording {
    /// Read a recording's header (a full trace with `stat_before`/`stat_after` works
    /// too; its events are then counted from the trace).
    pub fn parse(text: &str) -> Result<MergeRecording, String> {
        let kt = parse(text);
        let get = |k: &str| {
            kt.meta
                .other
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let stat = |k: &str| -> Result<Vec<u64>, String> {
            let v = get(k).ok_or_else(|| {
                format!("no '# iosched: {k}=' line (record with a newer iosched)")
            })?;
            let f: Vec<u64> = v
                .split_whitespace()
                .map(|x| {
                    x.parse::<u64>()
                        .map_err(|_| format!("{k}: bad field '{x}'"))
                })
                .collect::<Result<_, _>>()?;
            if f.len() < 11 {
                return Err(format!("{k}: {} fields, expected at least 11", f.len()));
            }
            Ok(f)
        };
        let stat_before = stat("stat_before")?;
        let stat_after = stat("stat_after")?;
        let fio: Vec<String> = get("fio")
            .ok_or("no '# iosched: fio=' line")?
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let mut events = Vec::new();
        for n in MERGE_EVENTS {
            if let Some(v) = get(&format!("events.{n}")) {
                let (r, w) = v
                    .split_once(',')
                    .ok_or_else(|| format!("events.{n}: expected R,W"))?;
                let p = |x: &str| {
                    x.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("events.{n}: bad count '{x}'"))
                };
                events.push((n.to_string(), [p(r)?, p(w)?]));
            }
        }
        if events.is_empty() && !kt.events.is_empty() {
            events = count_merge_events(text)
                .into_iter()
                .map(|(n, c)| (n.to_string(), c))
                .collect();
        }
        Ok(MergeRecording {
            device: get("device").unwrap_or_else(|| "/dev/loop0".to_string()),
            size: get("size").and_then(|v| v.parse().ok()),
            meta: kt.meta,
            fio,
            stat_before,
            stat_after,
            events,
        })
    }

    fn delta(&self, i: usize) -> u64 {
        self.stat_after[i].saturating_sub(self.stat_before[i])
    }

    /// The kernel's merges during the run, `[reads, writes]` (stat fields 2 and 6).
    pub fn kernel_merges(&self) -> [u64; 2] {
        [self.delta(1), self.delta(5)]
    }

    /// The kernel's completed requests during the run, `[reads, writes]` (fields 1, 5).
    pub fn kernel_ios(&self) -> [u64; 2] {
        [self.delta(0), self.delta(4)]
    }

    /// Sum of the merge tracepoints, `[reads, writes]`, if they were counted.
    pub fn event_merges(&self) -> Option<[u64; 2]> {
        if self.events.is_empty() {
            return None;
        }
        Some(
            self.events
                .iter()
                .fold([0, 0], |a, (_, c)| [a[0] + c[0], a[1] + c[1]]),
        )
    }

    /// The count of one merge tracepoint, `[reads, writes]`.
    pub fn event(&self, name: &str) -> Option<[u64; 2]> {
        self.events.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }
}

/// The device model standing in for the loop device, and run settings.
#[derive(Debug, Clone)]
pub struct LoopModel {
    /// Per-request latency, ns (a direct-I/O read or write of the backing file).
    pub latency_ns: u64,
    /// Transfer bandwidth, bytes per second.
    pub bandwidth: u64,
    /// Driver tags: a loop device has 128.
    pub queue_depth: u32,
    /// Simulated CPUs.
    pub nr_cpus: u32,
    /// Run seed.
    pub seed: u64,
    /// CPU cost of one submission, ns (`None`: the engine's default).
    pub submit_ns: Option<u64>,
}

impl Default for LoopModel {
    fn default() -> Self {
        LoopModel {
            latency_ns: 20_000,
            bandwidth: 2_000_000_000,
            queue_depth: 128,
            nr_cpus: 2,
            seed: runner::DEFAULT_SEED,
            submit_ns: None,
        }
    }
}

/// Our figures for a recording's fio job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimMerges {
    /// Merges, `[reads, writes]`, as `/proc/diskstats` counts them.
    pub merges: [u64; 2],
    /// Completed requests, `[reads, writes]`.
    pub ios: [u64; 2],
}

/// The `ideal` profile standing in for the loop device: one hardware queue,
/// `queue_depth` driver tags, the backing file's size.
pub fn loop_profile(model: &LoopModel, capacity: u64) -> Profile {
    Profile {
        name: "loop".into(),
        about: "loop device with direct I/O over a file (ideal model)".into(),
        kind: ProfileKind::Ideal(IdealParams {
            latency_ns: model.latency_ns,
            bandwidth: model.bandwidth,
            queue_depth: model.queue_depth,
            capacity: capacity.max(1 << 20),
            nr_hw_queues: 1,
            rotational: false,
        }),
        zoned: None,
    }
}

/// Run the recording's fio job through our block layer with the recording's
/// scheduler, `nomerges`, `nr_requests` and `max_sectors_kb` (capped at the model's
/// `max_hw_sectors_kb`).
pub fn simulate(rec: &MergeRecording, model: &LoopModel) -> Result<SimMerges, String> {
    let mut args = vec![format!("--filename={}", rec.device)];
    args.extend(rec.fio.iter().cloned());
    let input = parse_command_line(&args).map_err(|e| format!("fio arguments: {e}"))?;
    let device = loop_profile(model, rec.size.unwrap_or(256 << 20));
    let hw_kb = device.build().info().max_hw_sectors / 2;
    let m = &rec.meta;
    let mut settings = Vec::new();
    let blk = |n: &str, v: String| ("blk".to_string(), n.to_string(), v);
    if let Some(v) = m.nomerges {
        settings.push(blk("nomerges", v.to_string()));
    }
    if let Some(v) = m.nr_requests {
        settings.push(blk("nr_requests", v.to_string()));
    }
    if let Some(v) = m.max_sectors_kb {
        settings.push(blk("max_sectors_kb", v.min(hw_kb).to_string()));
    }
    let opts = RunOptions {
        device,
        scheduler: m.sched.clone(),
        settings,
        seed: model.seed,
        hz: m.hz.unwrap_or(250),
        nr_cpus: model.nr_cpus,
        epoch_secs: 0,
        submit_ns: model.submit_ns,
        write_logs: false,
        host: host::host("free").expect("the free host is built in"),
    };
    let plan = runner::plan(&input, &opts).map_err(|e| e.to_string())?;
    let rep = runner::run(&input, &opts, plan, None).map_err(|e| e.to_string())?;
    let d = rep
        .disk_util
        .first()
        .ok_or("no disk statistics in our report")?;
    Ok(SimMerges {
        merges: [d.read_merges, d.write_merges],
        ios: [d.read_ios, d.write_ios],
    })
}
