//! fio's write-then-verify pattern: which blocks are read back, in which
//! order, hand-worked from fio's backend.c (`do_verify`), io_u.c
//! (`check_get_verify`) and iolog.c (`log_io_piece`).

use blk::{Dir, Ns};
use devices::ideal::{Ideal, IdealParams};
use sim::job::{IoDone, JobConfig, RwMode, VerifyConfig};
use sim::simulate::{IoObserver, SimConfig, Simulation};

/// Every I/O as issued: 'W' or 'R' and its block number.
#[derive(Default)]
struct Trace {
    issued: Vec<(char, u64)>,
    reads_done: u64,
}

impl IoObserver for Trace {
    fn io_issued(&mut self, _job: usize, io: IoDone) {
        let d = if io.dir == Dir::Read { 'R' } else { 'W' };
        self.issued.push((d, io.offset / 4096));
    }
    fn io_completed(&mut self, _job: usize, io: IoDone, _issue: Ns, _now: Ns) {
        self.reads_done += (io.dir == Dir::Read) as u64;
    }
}

fn ideal() -> Box<Ideal> {
    Box::new(Ideal::new(
        "ideal",
        IdealParams {
            latency_ns: 100_000,
            bandwidth: 2_048_000_000,
            queue_depth: 32,
            ..Default::default()
        },
    ))
}

fn job(rw: RwMode, blocks: u64, verify: VerifyConfig) -> JobConfig {
    JobConfig {
        name: "v".into(),
        rw,
        size: blocks * 4096,
        io_limit: blocks * 4096,
        depth: 1,
        pid: 1,
        verify: Some(verify),
        ..JobConfig::default()
    }
}

fn verify(blocks: u64) -> VerifyConfig {
    VerifyConfig {
        pass_bytes: blocks * 4096,
        passes: 1,
        backlog: 0,
        batch: 0,
        sorted: false,
        only: false,
    }
}

fn run(j: JobConfig) -> (Trace, sim::simulate::RunSummary) {
    let sim = Simulation::new(&SimConfig::default(), ideal(), vec![j]).unwrap();
    let mut t = Trace::default();
    let s = sim.run(&mut t);
    (t, s)
}

fn seq(s: &str) -> Vec<(char, u64)> {
    s.split_whitespace()
        .map(|x| (x.as_bytes()[0] as char, x[1..].parse().unwrap()))
        .collect()
}

#[test]
fn random_writes_are_read_back_in_the_order_written() {
    let (t, s) = run(job(RwMode::RandWrite, 8, verify(8)));
    let (w, r) = t.issued.split_at(8);
    assert!(w.iter().all(|x| x.0 == 'W'), "{:?}", t.issued);
    let mut blocks: Vec<u64> = w.iter().map(|x| x.1).collect();
    // The random map covers each block once.
    let in_order = blocks.clone();
    blocks.sort();
    assert_eq!(blocks, (0..8).collect::<Vec<_>>());
    assert_eq!(
        r.to_vec(),
        in_order.iter().map(|b| ('R', *b)).collect::<Vec<_>>()
    );
    assert_eq!(t.reads_done, 8);
    // The device saw the writes, the fsync before the verification (an empty
    // flush) and the reads.
    assert_eq!(s.disk.ios, [8, 8]);
}

#[test]
fn without_the_random_map_reads_go_by_offset_once_per_block() {
    let mut v = verify(16);
    v.sorted = true;
    let mut j = job(RwMode::RandWrite, 16, v);
    j.norandommap = true;
    let (t, _) = run(j);
    let (w, r) = t.issued.split_at(16);
    let mut distinct: Vec<u64> = w.iter().map(|x| x.1).collect();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() < 16, "norandommap repeats some block: {w:?}");
    assert_eq!(
        r.to_vec(),
        distinct.iter().map(|b| ('R', *b)).collect::<Vec<_>>()
    );
}

#[test]
fn a_backlog_reads_back_every_n_blocks() {
    let mut v = verify(6);
    (v.backlog, v.batch) = (2, 2);
    let (t, _) = run(job(RwMode::Write, 6, v));
    // After two logged writes (the last completion a write) a batch of two
    // reads; the last two are read back after the pass.
    assert_eq!(t.issued, seq("W0 W1 R0 R1 W2 W3 R2 R3 W4 W5 R4 R5"));
}

#[test]
fn a_smaller_batch_leaves_blocks_for_the_end() {
    let mut v = verify(4);
    (v.backlog, v.batch) = (2, 1);
    let (t, _) = run(job(RwMode::Write, 4, v));
    // W0 W1: two logged, a batch of one (R0) leaves one; W2 makes two again
    // with a write completed last: R1; W3 ends the pass, R2 R3 after it.
    assert_eq!(t.issued, seq("W0 W1 R0 W2 R1 W3 R2 R3"));
}

#[test]
fn each_loop_writes_then_verifies() {
    let mut v = verify(3);
    v.passes = 2;
    let mut j = job(RwMode::Write, 3, v);
    j.io_limit = 6 * 4096;
    let (t, _) = run(j);
    assert_eq!(t.issued, seq("W0 W1 W2 R0 R1 R2 W0 W1 W2 R0 R1 R2"));
}

#[test]
fn verify_only_reads_what_the_writes_would_have_written() {
    let mut v = verify(4);
    v.only = true;
    let (t, s) = run(job(RwMode::Write, 4, v));
    assert_eq!(t.issued, seq("R0 R1 R2 R3"));
    assert_eq!(s.disk.ios, [4, 0]);
}

/// fio's runtimes per direction for a verifying job: the write phase's
/// (`do_io`) for the writes, the verification's (`do_verify`, from its
/// fsync) for the reads, each rounded up to ms.
#[test]
fn reads_and_writes_have_their_own_phase_runtimes() {
    use sim::runner::{self, RunOptions};
    let text = "[v]\nrw=write\nbs=4k\ndirect=1\nsize=400k\nverify=md5\nfilename=/dev/x\n";
    let input = sim::fio::parse_job_file("v.fio", text).unwrap();
    let o = RunOptions {
        submit_ns: Some(0),
        write_logs: false,
        ..RunOptions::new(devices::profile("ideal").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    let rep = runner::run(&input, &o, plan, None).unwrap();
    let st = &rep.jobs[0].stats;
    assert_eq!((st.read.io_bytes, st.write.io_bytes), (409_600, 409_600));
    // 100 I/Os of 100 us + 4096 B at 2 GB/s (2.048 us) each: 10.2048 ms per
    // phase (the verification's empty flush adds at most its 100 us).
    assert_eq!((st.read.runtime_ms, st.write.runtime_ms), (11, 11));
}
