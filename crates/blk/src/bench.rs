//! A steady-state workload for timing schedulers in isolation: with N requests
//! queued, each step inserts one request, dispatches one and completes one
//! (`finish_request` and the request's free included). Used by the criterion benches
//! and by `iosched bench`.

use crate::elevator::{self, Elevator, ElvCtx, QueueParams, TunableError, UnknownScheduler};
use crate::merge::MergeState;
use crate::request::{Bio, BioArena, Request, RqArena};
use crate::types::{CgroupId, IoClass, IoPrio, Jiffies, Ns, Op, ReqFlags, Sector};
use std::hint::black_box;
use std::time::Instant;

/// How a [`SchedBench`] queue is set up beyond its scheduler and depth.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// CPUs of the queue (`QueueParams::nr_cpus`); requests come from each in turn.
    pub nr_cpus: u32,
    /// Scheduler tunables written before the run, as `(sysfs name, value)`.
    pub tunables: Vec<(String, String)>,
}

impl Default for BenchConfig {
    /// 8 CPUs, default tunables.
    fn default() -> Self {
        BenchConfig {
            nr_cpus: 8,
            tunables: Vec::new(),
        }
    }
}

/// Why a bench could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// No such scheduler.
    #[error(transparent)]
    Scheduler(#[from] UnknownScheduler),
    /// A tunable was refused.
    #[error(transparent)]
    Tunable(#[from] TunableError),
}

/// One scheduler under a steady insert/dispatch/complete load.
pub struct SchedBench {
    e: Box<dyn Elevator>,
    rqs: RqArena,
    bios: BioArena,
    merge: MergeState,
    rng: u64,
    now: u64,
    cpu: u32,
    nr_cpus: u32,
}

impl SchedBench {
    /// The scheduler `name` with `queued` requests already inserted. Requests are
    /// 8 sectors on 16-sector boundaries (never adjacent, so nothing merges), half reads
    /// and half writes, spread over 8 CPUs; the clock advances 1 µs per step.
    pub fn new(name: &str, queued: usize) -> Result<SchedBench, UnknownScheduler> {
        match Self::with_config(name, queued, &BenchConfig::default()) {
            Ok(b) => Ok(b),
            Err(BenchError::Scheduler(e)) => Err(e),
            Err(BenchError::Tunable(e)) => unreachable!("no tunables written: {e}"),
        }
    }

    /// As [`SchedBench::new`], on `cfg.nr_cpus` CPUs and with `cfg.tunables` written
    /// first.
    pub fn with_config(
        name: &str,
        queued: usize,
        cfg: &BenchConfig,
    ) -> Result<SchedBench, BenchError> {
        let nr_cpus = cfg.nr_cpus.max(1);
        let params = QueueParams {
            hz: 250,
            nr_requests: (queued as u32 + 1).max(256),
            nr_cpus,
            ..QueueParams::default()
        };
        let mut e = elevator::create(name, &params)?;
        for (k, v) in &cfg.tunables {
            e.set_tunable(k, v)?;
        }
        let mut b = SchedBench {
            e,
            rqs: RqArena::new(),
            bios: BioArena::new(),
            merge: MergeState::default(),
            rng: 0x9e37_79b9_7f4a_7c15,
            now: 0,
            cpu: 0,
            nr_cpus,
        };
        for _ in 0..queued {
            b.insert();
        }
        Ok(b)
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn ctx(&mut self) -> (ElvCtx<'_>, &mut dyn Elevator) {
        let now = Ns(self.now);
        (
            ElvCtx {
                now,
                jiffies: Jiffies::from_ns(now, 250),
                hctx: 0,
                rqs: &mut self.rqs,
                bios: &mut self.bios,
                merge: &mut self.merge,
            },
            self.e.as_mut(),
        )
    }

    fn insert(&mut self) {
        let r = self.next();
        self.cpu = (self.cpu + 1) % self.nr_cpus;
        let bio = Bio {
            op: if r & 1 == 0 { Op::Read } else { Op::Write },
            flags: ReqFlags::SYNC,
            sector: Sector((r >> 8) % (1 << 24) * 16),
            nr_sectors: 8,
            ioprio: IoPrio {
                class: IoClass::Be,
                level: 4,
            },
            pid: 1,
            cpu: self.cpu,
            cgroup: CgroupId(0),
            owner: 0,
        };
        let bid = self.bios.alloc(bio);
        let id = self.rqs.alloc(Request::from_bio(&bio, bid, Ns(self.now)));
        let (mut ctx, e) = self.ctx();
        e.prepare_request(&mut ctx, id);
        e.insert_requests(&mut ctx, &[id], false);
    }

    /// Insert one, dispatch one, complete one.
    pub fn step(&mut self) {
        self.now += 1_000;
        self.insert();
        let (mut ctx, e) = self.ctx();
        let id = e.dispatch_request(&mut ctx).expect("work queued");
        ctx.merge.forget(id);
        let now = ctx.now;
        ctx.rqs.get_mut(id).issue_ns = now;
        e.completed_request(&mut ctx, id, now);
        e.finish_request(&mut ctx, id);
        let rq = self.rqs.free(id);
        if let Some(b) = rq.bio_head {
            self.bios.free(b);
        }
        black_box(id);
    }
}

/// Mean nanoseconds per request for `name` with `queued` requests queued, over
/// `steps` steps after a warm-up.
pub fn ns_per_request(name: &str, queued: usize, steps: u32) -> Result<f64, UnknownScheduler> {
    let mut b = SchedBench::new(name, queued)?;
    Ok(time_steps(&mut b, steps))
}

/// As [`ns_per_request`], for a queue set up by `cfg`.
pub fn ns_per_request_with(
    name: &str,
    queued: usize,
    steps: u32,
    cfg: &BenchConfig,
) -> Result<f64, BenchError> {
    let mut b = SchedBench::with_config(name, queued, cfg)?;
    Ok(time_steps(&mut b, steps))
}

fn time_steps(b: &mut SchedBench, steps: u32) -> f64 {
    for _ in 0..steps / 10 {
        b.step();
    }
    let t = Instant::now();
    for _ in 0..steps {
        b.step();
    }
    t.elapsed().as_nanos() as f64 / steps.max(1) as f64
}
