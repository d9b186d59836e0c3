//! Integration tests for the fio input parser (`sim::fio`).

use proptest::prelude::*;
use sim::fio::{
    parse_command_line, parse_job_file, parse_job_file_with_env, FioError, FioInput, IoEngine,
    OutputFormat, RwMode, SizeSpec, SourceLocation,
};

const GIB: u64 = 1 << 30;

fn cli(s: &str) -> Result<FioInput, FioError> {
    let args: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    parse_command_line(&args)
}

fn job(text: &str) -> Result<FioInput, FioError> {
    parse_job_file_with_env("t.fio", text, |_| None)
}

fn err(text: &str) -> FioError {
    job(text).expect_err("expected an error")
}

/// A one-job file with direct=1 plus the given extra lines.
fn one(extra: &str) -> Result<FioInput, FioError> {
    job(&format!("[j]\ndirect=1\n{extra}\n"))
}

#[test]
fn seed0_command_line() {
    let input = cli(
        "-ioengine=psync -lockmem=1G -buffered=0 -time_based=1 -direct=1 -iodepth=1 -thread \
         -bs=512B -size=110g -numjobs=16 -runtime=300 -group_reporting -name=read \
         -filename=/dev/sdb14 -ioscheduler=mq-deadline -rw=read",
    )
    .unwrap();
    assert_eq!(input.jobs.len(), 1);
    let j = &input.jobs[0];
    assert_eq!(j.name, "read");
    assert_eq!(j.source, SourceLocation::CommandLine);
    assert_eq!(j.rw, RwMode::Read);
    assert_eq!(j.bs.read, 512);
    assert_eq!(j.bs.write, 512);
    assert_eq!(j.size, Some(SizeSpec::Bytes(110 * GIB)));
    assert_eq!(j.size, Some(SizeSpec::Bytes(118_111_600_640)));
    assert_eq!(j.runtime_ns, Some(300_000_000_000));
    assert!(j.time_based && j.direct && j.thread && j.group_reporting);
    assert_eq!(j.numjobs, 16);
    assert_eq!(j.iodepth, 1);
    assert_eq!(j.ioengine, IoEngine::Psync);
    assert_eq!(j.filename.as_deref(), Some("/dev/sdb14"));
    assert_eq!(j.ioscheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(input.ignored, vec!["lockmem", "thread"]);
    let global_names: Vec<&str> = input.global.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        global_names,
        [
            "ioengine",
            "lockmem",
            "buffered",
            "time_based",
            "direct",
            "iodepth",
            "thread",
            "bs",
            "size",
            "numjobs",
            "runtime",
            "group_reporting"
        ]
    );
    assert_eq!(input.global[6], ("thread".to_string(), String::new()));
    assert_eq!(
        j.options,
        vec![
            ("name".to_string(), "read".to_string()),
            ("filename".to_string(), "/dev/sdb14".to_string()),
            ("ioscheduler".to_string(), "mq-deadline".to_string()),
            ("rw".to_string(), "read".to_string()),
        ]
    );
    assert_eq!(input.output.formats, vec![OutputFormat::Normal]);
}

#[test]
fn job_file_basics() {
    let text = "\
; leading comment
# another
[global]
ioengine = libaio
direct=1 ; trailing comment
bs=4k
thread
group_reporting

[seq-read]
rw=read
size=1g

[global]
iodepth=16

[rand]
name=random-reads
readwrite=randread
blocksize=8k,16k
";
    let input = job(text).unwrap();
    assert_eq!(input.jobs.len(), 2);
    let a = &input.jobs[0];
    assert_eq!(a.name, "seq-read");
    assert_eq!(
        a.source,
        SourceLocation::File {
            path: "t.fio".into(),
            line: 10
        }
    );
    assert_eq!(a.ioengine, IoEngine::Libaio);
    assert_eq!(a.iodepth, 1, "later [global] must not affect earlier jobs");
    assert_eq!(a.size, Some(SizeSpec::Bytes(GIB)));
    assert!(a.thread && a.group_reporting);
    let b = &input.jobs[1];
    assert_eq!(b.name, "random-reads");
    assert_eq!(b.rw, RwMode::RandRead);
    assert_eq!(b.iodepth, 16);
    assert_eq!(b.ioengine.max_in_flight(b.iodepth), 16);
    assert_eq!((b.bs.read, b.bs.write, b.bs.trim), (8192, 16384, 16384));
    assert_eq!(
        b.options[0],
        ("name".to_string(), "random-reads".to_string())
    );
    assert_eq!(b.options[1], ("rw".to_string(), "randread".to_string()));
    assert_eq!(input.ignored, vec!["thread"]);
    assert_eq!(input.global.len(), 6);
    assert_eq!(
        input.global[0],
        ("ioengine".to_string(), "libaio".to_string())
    );
}

#[test]
fn defaults() {
    let j = one("").unwrap().jobs.remove(0);
    assert_eq!(j.rw, RwMode::Read);
    assert_eq!(j.rwmixread, 50);
    assert_eq!((j.bs.read, j.bs.write, j.bs.trim), (4096, 4096, 4096));
    assert_eq!(j.size, None);
    assert_eq!(j.offset, 0);
    assert_eq!(j.numjobs, 1);
    assert_eq!(j.iodepth, 1);
    assert_eq!(j.ioengine, IoEngine::Psync);
    assert_eq!(j.runtime_ns, None);
    assert!(j.randrepeat && !j.time_based && !j.stonewall && !j.norandommap);
    assert_eq!(j.iodepth_batch_submit, 1);
    assert_eq!(j.iodepth_batch_complete_min, 1);
    assert_eq!(j.iodepth_batch_complete_max, 1);
    assert_eq!(j.kb_base, 1024);
}

#[test]
fn modeled_options() {
    let j = one(
        "rw=randrw\nrwmixwrite=30\noffset=1m\nramp_time=500ms\nruntime=2m\ntime_based\n\
         randseed=42\nnorandommap\nnumber_ios=1000\nwait_for_previous\ncpus_allowed=0-3,5\n\
         cgroup=/test\ncgroup_weight=500\nprioclass=2\nprio=7\niodepth=32\nioengine=io_uring\n\
         iodepth_batch_submit=8\niodepth_batch_complete=4\niodepth_batch_complete_max=2\n\
         percentile_list=50:99:99.9\nnew_group\nsize=50%",
    )
    .unwrap()
    .jobs
    .remove(0);
    assert_eq!(j.rw, RwMode::RandRw);
    assert_eq!(j.rwmixread, 70);
    assert_eq!(j.offset, 1 << 20);
    assert_eq!(j.ramp_time_ns, 500_000_000);
    assert_eq!(j.runtime_ns, Some(120_000_000_000));
    assert!(j.time_based && j.norandommap && j.stonewall && j.new_group);
    assert_eq!(j.randseed, Some(42));
    assert!(!j.randrepeat, "randseed overrides randrepeat, as in fio");
    assert_eq!(j.number_ios, Some(1000));
    assert_eq!(j.cpus_allowed, Some(vec![0, 1, 2, 3, 5]));
    assert_eq!(j.cgroup.as_deref(), Some("/test"));
    assert_eq!(j.cgroup_weight, Some(500));
    assert_eq!((j.prioclass, j.prio), (Some(2), Some(7)));
    assert_eq!(j.ioengine, IoEngine::IoUring);
    assert_eq!(j.iodepth_batch_submit, 8);
    assert_eq!(j.iodepth_batch_complete_min, 4);
    assert_eq!(
        j.iodepth_batch_complete_max, 4,
        "max is raised to min, as in fio"
    );
    assert_eq!(j.percentile_list, Some(vec![50.0, 99.0, 99.9]));
    assert_eq!(j.size, Some(SizeSpec::Percent(50)));
}

#[test]
fn kb_base_applies_before_sizes_in_a_section() {
    // fio sorts options by priority; kb_base (prio 1) is applied first.
    let j = one("bs=4k\nsize=1m\nkb_base=1000").unwrap().jobs.remove(0);
    assert_eq!(j.bs.read, 4000);
    assert_eq!(j.size, Some(SizeSpec::Bytes(1_000_000)));
    assert_eq!(j.kb_base, 1000);
    let j = one("bs=4KiB").unwrap().jobs.remove(0);
    assert_eq!(
        j.bs.read, 4000,
        "IEC prefixes are powers of 10 with kb_base=1024"
    );
    // From a global section too.
    let input = job("[global]\nkb_base=1000\ndirect=1\n[j]\nbs=4kib\n").unwrap();
    assert_eq!(input.jobs[0].bs.read, 4096);
}

#[test]
fn hex_and_suffixes() {
    let j = one("bs=0x200\nsize=2MB\nruntime=1h")
        .unwrap()
        .jobs
        .remove(0);
    assert_eq!(j.bs.read, 512);
    assert_eq!(j.size, Some(SizeSpec::Bytes(2 << 20)));
    assert_eq!(j.runtime_ns, Some(3600 * 1_000_000_000));
}

#[test]
fn duplicate_options_last_wins() {
    let j = one("bs=4k\nbs=16k\nrw=write\nrw=randwrite")
        .unwrap()
        .jobs
        .remove(0);
    assert_eq!(j.bs.write, 16384);
    assert_eq!(j.rw, RwMode::RandWrite);
    let j = cli("--name=a --direct=1 --iodepth=2 --iodepth=8")
        .unwrap()
        .jobs
        .remove(0);
    assert_eq!(j.iodepth, 8);
    // direct then buffered: the last one decides.
    assert!(!one("buffered=1").unwrap().jobs[0].direct);
    assert!(job("[j]\nbuffered=1\ndirect=1\n").is_ok());
    assert!(!job("[j]\ndirect=1\nbuffered=1\nrw=write\n").unwrap().jobs[0].direct);
}

#[test]
fn trim_modes_parse_with_fio_spellings() {
    for (v, mode, reads, writes, random) in [
        ("trim", RwMode::Trim, false, false, false),
        ("randtrim", RwMode::RandTrim, false, false, true),
        ("trimwrite", RwMode::TrimWrite, false, true, false),
        ("randtrimwrite", RwMode::RandTrimWrite, false, true, true),
    ] {
        let j = one(&format!("rw={v}")).unwrap().jobs.remove(0);
        assert_eq!(j.rw, mode);
        assert_eq!(j.rw.as_str(), v);
        assert!(j.rw.trims());
        assert_eq!(
            (j.rw.reads(), j.rw.writes(), j.rw.is_random()),
            (reads, writes, random)
        );
        assert_eq!(j.rw.trim_then_write(), writes);
    }
    // bs=r,w,t: the third size is the trims'.
    let j = one("rw=trimwrite\nbs=4k,8k,16k").unwrap().jobs.remove(0);
    assert_eq!((j.bs.read, j.bs.write, j.bs.trim), (4096, 8192, 16384));
}

#[test]
fn validation_errors() {
    let cases: &[(&str, &str)] = &[
        ("bs=0", "block size must be at least 1"),
        ("size=1k\nbs=4k", "size too small"),
        ("iodepth=0", "below the minimum"),
        ("numjobs=0", "numjobs must be at least 1"),
        ("rw=sideways", "invalid value 'sideways' for rw"),
        ("bs=4q", "malformed number '4q'"),
        ("bs", "requires a value"),
        ("bs=", "requires a value"),
        (
            "rw=trim\nrate=1m",
            "rw=trim with rate or rate_iops is not modeled yet",
        ),
        ("rw=randtrim\nrate_iops=10", "with rate or rate_iops"),
        (
            "rw=trimwrite\ncmdprio_percentage=10",
            "with cmdprio options",
        ),
        (
            "rw=trimwrite\nverify=md5",
            "rw=trimwrite with verify is not modeled yet",
        ),
        ("rw=trimwrite\ndirect=0", "rw=trimwrite with direct=0"),
        ("rw=randread:0", "at least 1"),
        ("bsrange=4k", "expected a block size range MIN-MAX"),
        ("bssplit=4k/60:8k/60:16k:32k", "add to more than 100%"),
        ("bs=4k-8k", "bsrange=MIN-MAX"),
        ("fsync=-1", "fsync"),
        ("sync=sometimes", "invalid value 'sometimes' for sync"),
        ("end_fsync=maybe", "end_fsync"),
        (
            "sprandom=1",
            "option 'sprandom': fio's SSD preconditioning order",
        ),
        ("unified_rw_reporting=1", "not modeled yet"),
        ("foo=1", "unknown option 'foo'"),
        ("ioengine=mmap", "ioengine=mmap is not modeled"),
        (
            "ioengine=ftruncate",
            "ioengine=ftruncate is not modeled: it needs a file system",
        ),
        ("ioengine=libiscsi", "ioengine=libiscsi is not modeled"),
        ("ioengine=libzbc", "ioengine=libzbc is not modeled"),
        ("ioengine=libblkio", "ioengine=libblkio is not modeled"),
        ("ioengine=page_fault", "ioengine=page_fault is not modeled"),
        ("ioengine=cpp_null", "ioengine=cpp_null is not modeled"),
        ("ioengine=external:/x.so", "is not modeled"),
        (
            "ioengine=bogus",
            "invalid ioengine 'bogus' (fio has no such engine",
        ),
        ("direct=2", "expected 0 or 1"),
        ("direct", "requires a value"),
        ("runtime=10sec", "malformed time"),
        ("size=1.5g", "fractional"),
        ("cgroup_weight=50", "below the minimum of 100"),
        ("prio=8", "above the maximum of 7"),
        ("prioclass=4", "above the maximum of 3"),
        ("rwmixread=101", "above the maximum of 100"),
        ("cpus_allowed=3-1", "reversed CPU range"),
        ("filename=/dev/a:b", "several files"),
        ("kb_base=512", "invalid value '512' for kb_base"),
        ("size=$mb_memory", "not supported"),
        ("iodepth=4,8", "single integer"),
        ("thread=x", "expected an integer"),
        ("verify=crc99", "invalid value 'crc99' for verify"),
        ("do_verify=2", "expected 0 or 1"),
        ("verify_backlog=-1", "verify_backlog"),
        ("rw=write\nverify=md5\ndirect=0", "verify with buffered I/O"),
        (
            "rw=write\nverify=md5\ndirect=1\nverify_only\ntime_based\nruntime=1",
            "verify_only does not support time_based",
        ),
        (
            "io_submit_mode=later",
            "invalid value 'later' for io_submit_mode",
        ),
        ("filesize=big", "malformed number"),
        ("directory=a:b", "several directories"),
        ("offset_increment=10%", "percentage is not modeled yet"),
        ("random_distribution=sequence", "needs block indices"),
        (
            "random_distribution=sequence:1,x",
            "malformed block index 'x'",
        ),
        ("random_sequence_stride=yes", "expected 0 or 1"),
        (
            "experimental_verify=1",
            "option 'experimental_verify' is not modeled yet",
        ),
    ];
    for (extra, want) in cases {
        let e = one(extra).expect_err(extra);
        assert!(
            e.message().contains(want),
            "{extra:?}: got '{e}', want '{want}'"
        );
        assert_eq!(e.file(), Some("t.fio"));
        assert!(e.line().is_some(), "{extra:?}");
    }
}

#[test]
fn error_display_has_file_and_line() {
    let e = err("[j]\ndirect=1\nbs=4q\n");
    assert_eq!(e.to_string(), "t.fio:3: option 'bs': malformed number '4q'");
    assert_eq!(e.line(), Some(3));
    // Job-level validation points at the section header.
    let e = err("\n[big]\ndirect=1\nbs=8k\nsize=4k\n");
    assert_eq!(e.line(), Some(2));
    assert!(
        e.to_string()
            .starts_with("t.fio:2: job 'big': size too small"),
        "{e}"
    );
}

#[test]
fn buffered_io_is_modeled_with_some_refusals() {
    // fio's default is buffered: I/O goes through the page cache.
    let j = job("[j]\nrw=randwrite\nfsync=1\nfsync_on_close=1\ninvalidate=0\n").unwrap();
    let j = &j.jobs[0];
    assert!(!j.direct && j.fsync_on_close && !j.invalidate);
    assert_eq!(j.fadvise_hint, "1");
    let j = job("[j]\nrw=read\nfadvise_hint=sequential\nbs=512\n").unwrap();
    assert_eq!(j.jobs[0].fadvise_hint, "sequential");
    assert!(err("[j]\nrw=read\nfadvise_hint=maybe\n")
        .message()
        .contains("invalid value 'maybe' for fadvise_hint"));
    let e = err("[j]\nrw=read\nfadvise_hint=noreuse\n");
    assert!(e.message().contains("fadvise_hint=noreuse"));
    assert!(job("[j]\ndirect=1\nrw=read\nfadvise_hint=noreuse\n").is_ok());
    let e = err("[j]\nrw=write\nsync=1\n");
    assert!(e.message().contains("sync with buffered I/O"));
    let e = err("[j]\nrw=randrw\nbs=512\n");
    assert!(e.message().contains("part of a page"));
    let e = err("[j]\nrw=write\noffset=1k\n");
    assert!(e.message().contains("part of a page"));
}

#[test]
fn structural_errors() {
    let e = err("bs=4k\n[j]\n");
    assert_eq!(e.line(), Some(1));
    assert!(e.message().contains("outside of a [section]"));
    let e = err("");
    assert_eq!(e.to_string(), "t.fio: no jobs defined");
    assert_eq!(e.line(), None);
    assert!(err("[global]\ndirect=1\n")
        .message()
        .contains("no jobs defined"));
    assert!(err("; only comments\n")
        .message()
        .contains("no jobs defined"));
    let e = err("[j]\ninclude other.fio\n");
    assert!(e.message().contains("include"));
    assert!(err("[j\n").message().contains("malformed section header"));
    assert!(err("[]\n").message().contains("empty section name"));
}

#[test]
fn global_prefix_sections_are_global() {
    // fio treats any section starting with "global" as global.
    let input = job("[global-settings]\ndirect=1\niodepth=4\n[j]\n").unwrap();
    assert_eq!(input.jobs.len(), 1);
    assert_eq!(input.jobs[0].iodepth, 4);
}

#[test]
fn env_expansion() {
    let env = |k: &str| match k {
        "DEV" => Some("/dev/nvme0n1".to_string()),
        "QD" => Some("64".to_string()),
        _ => None,
    };
    let input = parse_job_file_with_env(
        "e.fio",
        "[j]\ndirect=1\nfilename=${DEV}\niodepth=${QD}\n",
        env,
    )
    .unwrap();
    assert_eq!(input.jobs[0].filename.as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(input.jobs[0].iodepth, 64);
    // An unset variable is named (fio would substitute nothing).
    let e = parse_job_file_with_env("e.fio", "[j]\ndirect=1\nbs=${NOPE}\n", env).unwrap_err();
    assert!(e.message().contains("environment variable 'NOPE'"), "{e}");
    assert_eq!((e.file(), e.line()), (Some("e.fio"), Some(3)));
}

#[test]
fn ignored_options_are_listed_once_in_order() {
    let input = job("[global]\ndirect=1\nlockmem=1g\ndescription=hello world\n\
         [a]\ninvalidate=1\nlockmem=2g\nwrite_hist_log=x\nserialize_overlap=0\nsoftrandommap=0\n\
         [b]\ngtod_reduce=1\ndescription=x\n")
    .unwrap();
    assert_eq!(
        input.ignored,
        vec![
            "lockmem",
            "description",
            "invalidate",
            "write_hist_log",
            "serialize_overlap",
            "softrandommap",
            "gtod_reduce"
        ]
    );
    // Ignored options still get their values checked.
    assert!(one("invalidate=yes").is_err());
    assert!(one("lockmem=lots").is_err());
}

#[test]
fn time_based_without_runtime_warns() {
    let input = one("time_based").unwrap();
    assert!(!input.jobs[0].time_based);
    assert_eq!(input.warnings.len(), 1);
    let e = cli("--warnings-fatal --name=a --direct=1 --time_based").unwrap_err();
    assert!(e.message().contains("time_based"));
}

#[test]
fn command_line_forms() {
    // --opt val for options with a value, flags do not consume the next arg.
    let input =
        cli("--direct 1 --thread --bs 8k --name j1 --rw=write -iodepth 4 --ioengine libaio")
            .unwrap();
    let j = &input.jobs[0];
    assert_eq!(j.name, "j1");
    assert_eq!(j.bs.write, 8192);
    assert_eq!(j.rw, RwMode::Write);
    assert_eq!(j.ioengine.max_in_flight(j.iodepth), 4);
    // Several jobs; later globals (after --name=global) only affect later jobs.
    let input = cli("--direct=1 --name=a --name=global --iodepth=8 --name=b").unwrap();
    assert_eq!(input.jobs.len(), 2);
    assert_eq!(input.jobs[0].iodepth, 1);
    assert_eq!(input.jobs[1].iodepth, 8);
    assert_eq!(input.jobs[1].name, "b");
}

#[test]
fn command_line_program_options() {
    let input =
        cli("--output-format=json --output=out.json --eta=never --name=a --direct=1").unwrap();
    assert_eq!(input.output.formats, vec![OutputFormat::Json]);
    assert_eq!(input.output.output_file.as_deref(), Some("out.json"));
    assert_eq!(input.ignored, vec!["eta"]);
    let plus = cli("--output-format=json+ --name=a --direct=1").unwrap();
    assert_eq!(plus.output.formats, vec![OutputFormat::JsonPlus]);
    let both = cli("--output-format=normal,json --name=a --direct=1").unwrap();
    assert_eq!(
        both.output.formats,
        vec![OutputFormat::Json, OutputFormat::Normal]
    );
    let t = cli("--output-format=terse --terse-version=4 --name=a --direct=1").unwrap();
    assert_eq!(
        (t.output.formats.clone(), t.output.terse_version),
        (vec![OutputFormat::Terse], 4)
    );
    let m = cli("--minimal --name=a --direct=1").unwrap();
    assert_eq!(
        (m.output.formats.clone(), m.output.terse_version),
        (vec![OutputFormat::Terse], 3)
    );
    assert!(cli("--terse-version=2 --name=a --direct=1").is_err());
    // --bandwidth-log takes an optional value, as in fio.
    assert!(cli("--bandwidth-log=x --name=a --direct=1").is_ok());
    // Value-taking program options are refused for their real reason.
    for (arg, why) in [
        ("--status-interval=1", "periodic status output"),
        ("--debug=io", "debug logging"),
        ("--section=x", "--section selects sections"),
        ("--profile=tiobench", "built-in job profiles"),
        ("--terse-version=9", "invalid terse version '9'"),
        ("--trigger-file=/tmp/t", "triggers"),
        ("--aux-path=/tmp", "--aux-path"),
        ("--append-terse=1", "--output-format=normal,terse"),
        ("--client=host", "client/server"),
        ("--idle-prof=system", "idle profiling"),
        ("--cmdhelp=bs", "not supported by the simulator"),
        ("--version=1", "not supported by the simulator"),
    ] {
        let e = cli(&format!("{arg} --name=a --direct=1")).unwrap_err();
        assert!(e.message().contains(why), "{arg}: {e}");
        assert!(!e.message().contains("does not take a value"), "{arg}: {e}");
    }
    // The separate-argument form consumes the value too.
    let e = cli("--status-interval 1 --name=a --direct=1").unwrap_err();
    assert!(e.message().contains("periodic status output"), "{e}");
    assert!(cli("--readonly=1 --name=a --direct=1")
        .unwrap_err()
        .message()
        .contains("does not take a value"));
    let e = cli("--readonly --name=w --direct=1 --rw=write").unwrap_err();
    assert!(e.message().contains("read-only"));
    assert!(cli("--readonly --name=r --direct=1 --rw=randread").is_ok());
}

#[test]
fn command_line_errors() {
    let e = cli("--name=a --direct=1 -bs=4q").unwrap_err();
    assert_eq!(
        e.to_string(),
        "command line: option '-bs': malformed number '4q'"
    );
    assert_eq!(e.option(), Some("-bs"));
    assert!(e.is_command_line() && e.line().is_none());
    let e = cli("--name=a --direct=1 --foo=1").unwrap_err();
    assert!(e.to_string().contains("unknown option 'foo'"));
    let e = cli("--name=a --direct=1 --sprandom=1").unwrap_err();
    assert_eq!(e.to_string(), "command line: option '--sprandom': option 'sprandom': fio's SSD preconditioning order (sprandom.c: regions written in a random order that leaves a set share of each invalid) is not modeled yet; precondition with rw=randwrite");
    let ok = cli("--name=a --direct=1 --fsync=1 --fdatasync=4 --end_fsync=1 --sync=dsync").unwrap();
    let j = &ok.jobs[0];
    assert_eq!(
        (j.fsync_blocks, j.fdatasync_blocks, j.end_fsync, j.sync),
        (1, 4, true, true)
    );
    let e = cli("--name=a --bs").unwrap_err();
    assert!(e.message().contains("requires an argument"));
    let e = cli("--name=a --bs=").unwrap_err();
    assert!(e.message().contains("requires an argument"));
    let e = cli("job.fio").unwrap_err();
    assert!(e.message().contains("iosched run job.fio"));
    let e = cli("--direct=1 --bs=4k").unwrap_err();
    assert!(e.message().contains("no jobs defined"));
    let e = cli("--name=a --size=1k --bs=4k --direct=1").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("command line: option '--name=a': job 'a': size too small"),
        "{e}"
    );
    // fio's defaults: a buffered sequential read.
    assert!(!cli("--name=a").unwrap().jobs[0].direct);
    // A flag with a separate value: fio treats "1" as a job file.
    assert!(cli("--name=a --direct=1 --thread 1").is_err());
}

proptest! {
    #[test]
    fn job_file_never_panics(text in "\\PC*") {
        let _ = parse_job_file("p.fio", &text);
    }

    #[test]
    fn job_file_structured_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("[global]".to_string()),
                "\\[[a-z]{0,5}\\]?",
                "[a-z_]{1,12}=[0-9a-zA-Z%:,.\\-${}]{0,8}",
                "[a-z_]{1,12}",
                "[;#].*",
            ],
            0..12,
        )
    ) {
        let _ = parse_job_file("p.fio", &lines.join("\n"));
    }

    #[test]
    fn command_line_never_panics(args in proptest::collection::vec("\\PC*", 0..8)) {
        let _ = parse_command_line(&args);
    }

    #[test]
    fn command_line_structured_never_panics(
        args in proptest::collection::vec(
            "-{0,2}[a-z_]{1,10}(=[0-9a-zA-Z%:,.\\-]{0,6})?",
            0..10,
        )
    ) {
        let _ = parse_command_line(&args);
    }
}
