//! fio's `zonemode=zbd` on the zoned profiles: sequential writes land at the
//! write pointers through zone write plugging, with no I/O errors.

use sim::fio::parse_job_file;
use sim::runner::{self, RunOptions};

fn run(device: &str, job: &str) -> Result<serde_json::Value, String> {
    run_with(device, None, job)
}

/// The run's iosched facts and its first job's fio JSON.
fn run_report(device: &str, job: &str) -> Result<(serde_json::Value, serde_json::Value), String> {
    run_all(device, job).map(|(x, mut j)| (x, j.remove(0)))
}

/// The run's iosched facts and every job's fio JSON.
fn run_all(device: &str, job: &str) -> Result<(serde_json::Value, Vec<serde_json::Value>), String> {
    let input = parse_job_file("t.fio", job).map_err(|e| e.to_string())?;
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile(device).unwrap())
    };
    let plan = runner::plan(&input, &o).map_err(|e| e.to_string())?;
    let r = runner::run(&input, &o, plan, None).map_err(|e| e.to_string())?;
    let v = sim::report::json::to_value(&r);
    let jobs = v["jobs"].as_array().expect("jobs").clone();
    Ok((r.extra.clone().expect("iosched facts"), jobs))
}

fn run_with(device: &str, sched: Option<&str>, job: &str) -> Result<serde_json::Value, String> {
    let input = parse_job_file("t.fio", job).map_err(|e| e.to_string())?;
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        scheduler: sched.map(str::to_string),
        ..RunOptions::new(devices::profile(device).unwrap())
    };
    let plan = runner::plan(&input, &o).map_err(|e| e.to_string())?;
    let r = runner::run(&input, &o, plan, None).map_err(|e| e.to_string())?;
    Ok(r.extra.expect("iosched facts"))
}

/// One whole 256 MiB zone (offset and size cut to zone boundaries: 40000m is
/// rounded up to zone 157 at 40192 MiB, the end down to 40448 MiB), written
/// by 128 KiB writes at depth 8: all at the write pointer, none failed; the
/// writes beyond the first in flight waited on the zone's plug or merged.
#[test]
fn sequential_write_on_smr_runs_at_the_write_pointer() {
    let x = run(
        "mg04-smr-hm",
        "[w]\ndirect=1\nrw=write\nbs=128k\nioengine=libaio\niodepth=8\nzonemode=zbd\noffset=40000m\nsize=512m\n",
    )
    .unwrap();
    assert_eq!(x["io_errors"], 0, "{x}");
    let z = &x["zone_write_plugging"];
    assert!(z["plugged"].as_u64().unwrap() > 0, "{x}");
    assert_eq!(z["aborted"], 0, "{x}");
}

/// Whatever the scheduler reorders, the writes of a zone reach the device one
/// at a time and in order: two sequential writers in different zones, at
/// depth 16 each, on both zoned profiles, see no error.
#[test]
fn every_scheduler_keeps_zone_order() {
    // One whole zone per job (2 GiB on the ZNS drive), 64 MiB of it written:
    // fio's zbd.c skip past a ZNS zone's capacity is not modeled.
    for (dev, zone) in [("mg04-smr-hm", "256m"), ("zns-zn540", "2g")] {
        for sched in ["none", "mq-deadline", "kyber", "bfq"] {
            let job = format!(
                "[global]\ndirect=1\nrw=write\nbs=64k\nioengine=libaio\niodepth=16\nzonemode=zbd\n\
                 size={zone}\nio_size=64m\n[a]\noffset=40g\n[b]\noffset=48g\n"
            );
            let x =
                run_with(dev, Some(sched), &job).unwrap_or_else(|e| panic!("{dev} {sched}: {e}"));
            assert_eq!(x["io_errors"], 0, "{dev} {sched}: {x}");
            assert!(
                x["zone_write_plugging"]["plugged"].as_u64().unwrap() > 0,
                "{dev} {sched}: {x}"
            );
        }
    }
}

/// fio's zbd.c sends a random writer's writes to the write pointers of open
/// zones (`zbd_convert_to_open_zone`), resetting full ones: on a host-managed
/// disk none fails, at most max_open_zones zones are written at once, and
/// the resets are reported (`zone_resets`).
#[test]
fn random_writes_go_to_write_pointers_without_errors() {
    // 1 MiB on the ZNS drive: its 1077 MiB zone capacity is no multiple of
    // 16 MiB, and this zbd.c keeps a zone with less than min_bs left open
    // (it only closes one a write reaches the capacity of), so a 16 MiB job
    // there ends once its open zones are that full ("can't convert to open
    // zone").
    for (dev, depth, bs) in [
        ("mg04-smr-hm", 1, "16m"),
        ("mg04-smr-hm", 8, "16m"),
        ("zns-zn540", 4, "1m"),
    ] {
        let x = run_report(
            dev,
            &format!(
                "[w]\ndirect=1\nrw=randwrite\nbs={bs}\nioengine=libaio\niodepth={depth}\n\
                 zonemode=zbd\noffset=40g\nsize=8g\nmax_open_zones=2\nio_size=24g\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{dev}: {e}"));
        let (extra, job) = (&x.0, &x.1);
        assert_eq!(extra["io_errors"], 0, "{dev} {depth}: {extra}");
        // 24 GiB written into 8 GiB of zones: each zone filled ~3 times.
        let resets = job["zone_resets"].as_u64().unwrap();
        assert!(resets > 0, "{dev} {depth}: {job}");
        assert_eq!(job["write"]["io_bytes"], 24u64 << 30, "{dev} {depth}");
    }
}

/// A sequential writer over 2 zones of the SMR disk, 4 times over
/// (`io_size`): each pass after the first resets both zones before
/// rewriting them — 6 resets, no error.
#[test]
fn sequential_rewrite_resets_each_zone() {
    let (extra, job) = run_report(
        "mg04-smr-hm",
        "[w]\ndirect=1\nrw=write\nbs=1m\nioengine=libaio\niodepth=4\nzonemode=zbd\n\
         offset=40g\nsize=512m\nio_size=2g\n",
    )
    .unwrap();
    assert_eq!(extra["io_errors"], 0, "{extra}");
    assert_eq!(job["zone_resets"], 6, "{job}");
    // fio's own resets are ioctls, not I/O units: 2 GiB of 1 MiB writes.
    assert_eq!(job["write"]["total_ios"], 2048, "{job}");
}

/// rw=trim on zones is a zone reset per zone (`zbd_do_io_u_trim`): 4 trims
/// of 256 MiB after a write job filled the 4 zones, whose write pointers the
/// trim job reads from the device as it starts (`parse_zone_info`): 4
/// resets; a read-only zbd job reports no zone resets at all.
#[test]
fn trim_is_zone_reset_and_readers_report_none() {
    let (extra, jobs) = run_all(
        "mg04-smr-hm",
        "[wr]\ndirect=1\nrw=write\nbs=1m\nzonemode=zbd\noffset=40g\nsize=1g\n\
         [tr]\nstonewall\ndirect=1\nfilename=/dev/sdb\nrw=trim\nbs=256m\nzonemode=zbd\noffset=40g\nsize=1g\n\
         [rd]\nstonewall\ndirect=1\nrw=read\nbs=1m\nzonemode=zbd\noffset=40g\nsize=1g\n",
    )
    .unwrap();
    assert_eq!(extra["io_errors"], 0, "{extra}");
    assert_eq!(jobs[0]["zone_resets"], 0, "{}", jobs[0]);
    assert_eq!(jobs[1]["zone_resets"], 4, "{}", jobs[1]);
    assert_eq!(jobs[1]["trim"]["total_ios"], 4, "{}", jobs[1]);
    // The resets are the trims, not writes (fio counts the trim I/O units only).
    assert_eq!(jobs[1]["write"]["total_ios"], 0, "{}", jobs[1]);
    assert_eq!(jobs[1]["trim"]["io_bytes"], 1u64 << 30, "{}", jobs[1]);
    assert!(jobs[2].get("zone_resets").is_none(), "{}", jobs[2]);
}

#[test]
fn zbd_needs_a_zoned_device_and_a_whole_zone() {
    let e = run(
        "hdd-7200",
        "[w]\ndirect=1\nrw=write\nzonemode=zbd\nsize=1g\n",
    )
    .unwrap_err();
    assert!(
        e.contains("zonemode=zbd: device 'hdd-7200' is not a zoned block device"),
        "{e}"
    );
    let e = run(
        "mg04-smr-hm",
        "[w]\ndirect=1\nrw=write\nzonemode=zbd\noffset=100m\nsize=200m\n",
    )
    .unwrap_err();
    assert!(e.contains("holds no whole zone"), "{e}");
    let e = run("mg04-smr-hm", "[w]\nzonemode=strided\n").unwrap_err();
    assert!(e.contains("zonemode=strided is not modeled yet"), "{e}");
    for (opts, want) in [
        (
            "zonesize=128m",
            "zonesize 134217728 does not match disk zone size 268435456",
        ),
        (
            "zoneskip=100m",
            "zoneskip 104857600 is not a multiple of the device zone size",
        ),
        (
            "max_open_zones=129",
            "max_open_zones (129) is larger than the device's maximum (128)",
        ),
        (
            "filename=/dev/sdb\nrw=trim\nbs=1m",
            "trim block size 1048576 is not the zone size",
        ),
    ] {
        let e = run(
            "mg04-smr-hm",
            &format!("[w]\ndirect=1\nzonemode=zbd\noffset=40g\nsize=1g\n{opts}\n"),
        )
        .unwrap_err();
        assert!(e.contains(want), "{opts}: {e}");
    }
    // ignore_zone_limits drops the device's limit: a job limit alone is refused.
    let e = run(
        "mg04-smr-hm",
        "[w]\ndirect=1\nzonemode=zbd\noffset=40g\nsize=1g\nignore_zone_limits=1\njob_max_open_zones=2\n",
    )
    .unwrap_err();
    assert!(
        e.contains("'job_max_open_zones' cannot be used without a global open zones limit"),
        "{e}"
    );
}

/// fio's text report ends each direction line of a zbd writer with its zone
/// resets (stat.c `show_ddir_status`, `zbd_write_status`).
#[test]
fn text_report_has_the_zone_resets_line() {
    let input = parse_job_file(
        "t.fio",
        "[w]\ndirect=1\nrw=write\nbs=1m\nioengine=libaio\niodepth=4\nzonemode=zbd\n\
         offset=40g\nsize=512m\nio_size=2g\n",
    )
    .unwrap();
    let o = RunOptions {
        seed: 3,
        nr_cpus: 4,
        ..RunOptions::new(devices::profile("mg04-smr-hm").unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap();
    let r = runner::run(&input, &o, plan, None).unwrap();
    let text = sim::report::text::to_string(&r);
    let line = text
        .lines()
        .find(|l| l.starts_with("  write: IOPS="))
        .expect("write line");
    assert!(line.ends_with("msec); 6 zone resets"), "{line}");
}

/// Sizes and offsets in zones (`160z`, fio's
/// `zbd_recalc_options_with_zone_granularity`): 2 zones of 256 MiB at zone 160,
/// written once (512 MiB, no reset); without a zone size they are refused.
#[test]
fn sizes_in_zones() {
    let (extra, job) = run_report(
        "mg04-smr-hm",
        "[w]\ndirect=1\nrw=write\nbs=1m\nzonemode=zbd\noffset=160z\nsize=2z\n",
    )
    .unwrap();
    assert_eq!(extra["io_errors"], 0, "{extra}");
    assert_eq!(job["write"]["io_bytes"], 512u64 << 20, "{job}");
    assert_eq!(job["zone_resets"], 0, "{job}");
    // Zone 160 is sequential (the first 149 are conventional, never plugged).
    assert!(
        extra["zone_write_plugging"]["plugged"].as_u64().unwrap() > 0,
        "{extra}"
    );
    let e = run("hdd-7200", "[w]\ndirect=1\nrw=write\nsize=2z\n").unwrap_err();
    assert!(
        e.contains(
            "t.fio:1: job 'w': sizes or offsets in zones ('z') need a zoned device or zonesize"
        ),
        "{e}"
    );
}
