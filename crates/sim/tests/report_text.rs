//! Golden-style checks of the text report.

use sim::report::{text, DiskUtil, JobResult, RunReport};
use sim::stats::{Dir, JobRecorder, JobStats, RecorderConfig};

const MS: u64 = 1_000_000;

fn report_with(stats: JobStats) -> RunReport {
    let mut job = JobResult::new("seqread", 0, stats);
    job.bs = [(512, 512); 3];
    job.pid = 4242;
    let mut r = RunReport {
        fio_version: "fio-3.36".into(),
        time_string: "Tue Nov 14 22:13:20 2023".into(),
        header: vec!["# iosched simulator: device=sda scheduler=bfq seed=7".into()],
        jobs: vec![job],
        disk_util: vec![DiskUtil {
            name: "sda".into(),
            read_ios: 10,
            write_ios: 2,
            read_sectors: 80,
            write_sectors: 16,
            read_ticks: 5,
            write_ticks: 1,
            in_queue: 6,
            util: 97.904063,
            ..Default::default()
        }],
        ..Default::default()
    };
    r.compute_groups();
    r
}

/// A 30 s read job at 152,345 IOPS and 78,000,000 B/s.
fn fast_read() -> JobStats {
    let mut r = JobRecorder::new(RecorderConfig::default(), 0);
    // A handful of real samples for the latency lines …
    for i in 0..10u64 {
        r.record_submit(Dir::Read, 32);
        r.record_submit_batch(8);
        r.record_io(
            Dir::Read,
            512,
            i * MS,
            i * MS + 3_000,
            i * MS + 203_000 + i * 10_000,
        );
        r.record_complete_batch(8);
    }
    let mut s = r.finish(30_000 * MS);
    // … and totals set directly to hit fio's example numbers.
    s.read.io_bytes = 78_000_000 * 30;
    s.read.total_ios = 152_345 * 30;
    s.depth_map = [0, 0, 0, 0, 0, s.read.total_ios, 0];
    s
}

#[test]
fn ddir_line_uses_num2str() {
    let out = text::to_string(&report_with(fast_read()));
    assert!(
        out.contains("  read: IOPS=152k, BW=74.4MiB/s (78.0MB/s)(2232MiB/30000msec)\n"),
        "{out}"
    );
    assert!(out.contains(
        "   READ: bw=74.4MiB/s (78.0MB/s), 74.4MiB/s-74.4MiB/s (78.0MB/s-78.0MB/s), io=2232MiB (2340MB), run=30000-30000msec\n"
    ));
}

#[test]
fn overall_structure() {
    let out = text::to_string(&report_with(fast_read()));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "# iosched simulator: device=sda scheduler=bfq seed=7"
    );
    assert_eq!(
        lines[1],
        "seqread: (g=0): rw=read, bs=(R) 512B-512B, (W) 512B-512B, (T) 512B-512B, ioengine=psync, iodepth=1"
    );
    assert_eq!(lines[2], "fio-3.36");
    assert_eq!(lines[3], "Starting 1 process");
    assert_eq!(lines[4], "");
    assert_eq!(
        lines[5],
        "seqread: (groupid=0, jobs=1): err= 0: pid=4242: Tue Nov 14 22:13:20 2023"
    );
    assert!(lines[6].starts_with("  read: IOPS=152k"));
    assert_eq!(
        lines[7],
        "    slat (nsec): min=3000, max=3000, avg=3000.00, stdev= 0.00"
    );
    assert_eq!(
        lines[8],
        "    clat (usec): min=200, max=290, avg=245.00, stdev=30.28"
    );
    assert_eq!(
        lines[9],
        "     lat (usec): min=203, max=293, avg=248.00, stdev=30.28"
    );
    assert_eq!(lines[10], "    clat percentiles (usec):");
    assert!(
        lines[11].starts_with("     |  1.00th=[  200],  5.00th=[  200], 10.00th=[  200],"),
        "{out}"
    );
    let idx = |needle: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(needle))
            .unwrap_or_else(|| panic!("no line starting with {needle:?} in\n{out}"))
    };
    let order = [
        "   bw (  KiB/s): min=",
        "   iops        : min=",
        "  lat (usec)   : ",
        "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0",
        "  IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=100.0%, >=64=0.0%",
        "     submit    : 0=0.0%, 4=0.0%, 8=100.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
        "     complete  : 0=0.0%, 4=0.0%, 8=100.0%,",
        "     issued rwts: total=4570350,0,0,0 short=0,0,0,0 dropped=0,0,0,0",
        "     latency   : target=0.00ns, window=0.00ns, percentile=100.00%, depth=1",
        "Run status group 0 (all jobs):",
        "   READ: bw=",
        "Disk stats (read/write):",
        "  sda: ios=10/2, sectors=80/16, merge=0/0, ticks=5/1, in_queue=6, util=97.90%",
    ];
    let mut prev = 0;
    for o in order {
        let i = idx(o);
        assert!(i > prev, "{o:?} out of order in\n{out}");
        prev = i;
    }
    // 10 recorded IOs against 4.5M issued: fio's 0.01% floor shows them.
    assert_eq!(
        lines[idx("  lat (usec)   : ")],
        "  lat (usec)   : 250=0.01%, 500=0.01%"
    );
    assert!(out.ends_with("util=97.90%\n"));
}

#[test]
fn units_scale_to_msec_and_bw_to_mib() {
    let mut r = JobRecorder::new(RecorderConfig::default(), 0);
    // clat 5..185 ms and 600 MiB every 100 ms: ms units, MiB/s samples.
    for i in 0..100u64 {
        let t = i * 100 * MS;
        r.record_submit(Dir::Write, 1);
        r.record_io(
            Dir::Write,
            600 << 20,
            t,
            t,
            t + 5 * MS + (i % 10) * 20 * MS + 1_234 * i,
        );
    }
    let out = text::to_string(&report_with(r.finish(10_000 * MS)));
    assert!(
        out.contains("    clat (msec): min=5, max=185, avg="),
        "{out}"
    );
    assert!(out.contains("    clat percentiles (msec):\n"), "{out}");
    assert!(out.contains("   bw (  MiB/s): min="), "{out}");
    // Sync-style job (record_slat=true but equal submit/issue) -> slat of 0.
    assert!(out.contains("    slat (nsec): min=0, max=0, avg= 0.00, stdev= 0.00\n"));
    assert!(out.contains("  lat (msec)   : "));
}

#[test]
fn empty_job_prints_no_block_but_group_header() {
    let r = JobRecorder::new(RecorderConfig::default(), 0);
    let out = text::to_string(&report_with(r.finish(MS)));
    assert!(!out.contains("(groupid=0"));
    assert!(out.contains("\nRun status group 0 (all jobs):\n\nDisk stats"));
}

#[test]
fn clones_print_ellipsis_and_process_count() {
    let mk = || {
        let mut r = JobRecorder::new(RecorderConfig::default(), 0);
        r.record_submit(Dir::Read, 1);
        r.record_io(Dir::Read, 4096, 0, 0, 100_000);
        r.finish(1_000 * MS)
    };
    let mut rep = report_with(mk());
    let mut second = rep.jobs[0].clone();
    second.stats = mk();
    rep.jobs.push(second);
    rep.compute_groups();
    let out = text::to_string(&rep);
    assert!(
        out.contains("iodepth=1\n...\nfio-3.36\nStarting 2 processes\n"),
        "{out}"
    );
    assert_eq!(out.matches("seqread: (groupid=0, jobs=1)").count(), 2);
    // Two entries in one group: min/max bw per entry, agg = sum.
    assert!(out.contains("   READ: bw=8192B/s (8192B/s), 4096B/s-4096B/s (4096B/s-4096B/s), io=8192B (8192B), run=1000-1000msec\n"), "{out}");
}
