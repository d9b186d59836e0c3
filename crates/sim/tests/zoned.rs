//! fio's `zonemode=zbd` on the zoned profiles: sequential writes land at the
//! write pointers through zone write plugging, with no I/O errors.

use sim::fio::parse_job_file;
use sim::runner::{self, RunOptions};

fn run(device: &str, job: &str) -> Result<serde_json::Value, String> {
    run_with(device, None, job)
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

/// Without zone write plugging's order a random write job fails on a
/// host-managed disk: writes off the write pointer come back as errors.
#[test]
fn random_writes_to_sequential_zones_fail() {
    let x = run(
        "mg04-smr-hm",
        "[w]\ndirect=1\nrw=randwrite\nbs=4k\nzonemode=zbd\noffset=40g\nsize=256m\nnumber_ios=200\n",
    )
    .unwrap();
    assert!(x["io_errors"].as_u64().unwrap() > 100, "{x}");
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
    let e = run("mg04-smr-hm", "[w]\nzonemode=zbd\nmax_open_zones=4\n").unwrap_err();
    assert!(
        e.contains("option 'max_open_zones' is not modeled yet"),
        "{e}"
    );
}
