//! fio's cmdprio (engines/cmdprio.c): a share of a libaio / io_uring job's
//! I/Os carries its own priority, the schedulers see it, and the report
//! keeps each priority's latencies apart (fio's `clat_prio`).

use sim::fio::parse_job_file;
use sim::report::RunReport;
use sim::runner::{self, RunOptions};

fn run_on(job: &str, device: &str, sched: &str) -> RunReport {
    let input = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let o = RunOptions {
        seed: 3,
        scheduler: Some(sched.to_string()),
        ..RunOptions::new(devices::profile(device).unwrap())
    };
    let plan = runner::plan(&input, &o).unwrap_or_else(|e| panic!("{e}"));
    runner::run(&input, &o, plan, None).unwrap()
}

fn refused(job: &str) -> String {
    let input = match parse_job_file("t.fio", job) {
        Ok(i) => i,
        Err(e) => return e.to_string(),
    };
    let o = RunOptions::new(devices::profile("ideal").unwrap());
    match runner::plan(&input, &o) {
        Ok(_) => panic!("accepted: {job}"),
        Err(e) => e.to_string(),
    }
}

const RANDREAD: &str = "[global]\nfilename=/dev/sda\ndirect=1\nrw=randread\nbs=64k\n\
                        ioengine=libaio\niodepth=16\ntime_based\nruntime=3\n";

#[test]
fn a_share_of_the_ios_gets_the_rt_class_and_mq_deadline_serves_it_first() {
    let r = run_on(
        &format!("{RANDREAD}[j]\ncmdprio_percentage=25\n"),
        "hdd-7200",
        "mq-deadline",
    );
    let d = &r.jobs[0].stats.read;
    let prios: Vec<_> = d.prios_with_samples().collect();
    assert_eq!(prios.len(), 2);
    // The job's own priority (none set: 0) first, then RT level 0 (1 << 13).
    assert_eq!(prios[0].value, 0);
    assert_eq!(prios[1].value, 1 << 13);
    let rt = prios[1].lat.count() as f64 / d.clat.count() as f64;
    assert!((0.20..0.30).contains(&rt), "{rt}");
    // mq-deadline dispatches RT requests before best-effort ones: on a
    // disk whose queue is deep, they wait far less.
    assert!(
        prios[1].lat.mean() * 2.0 < prios[0].lat.mean(),
        "rt {} vs be {}",
        prios[1].lat.mean(),
        prios[0].lat.mean()
    );
    // none has no priorities: the two classes wait alike.
    let r = run_on(
        &format!("{RANDREAD}[j]\ncmdprio_percentage=25\n"),
        "hdd-7200",
        "none",
    );
    let p: Vec<_> = r.jobs[0].stats.read.prios_with_samples().collect();
    let ratio = p[1].lat.mean() / p[0].lat.mean();
    assert!((0.7..1.4).contains(&ratio), "{ratio}");
}

#[test]
fn the_report_has_fio_prios_array_and_lines() {
    let r = run_on(
        &format!("{RANDREAD}runtime=1\n[j]\nprioclass=2\nprio=7\ncmdprio_percentage=50\ncmdprio_class=3\ncmdprio=2\n"),
        "ideal",
        "none",
    );
    let v = sim::report::json::to_value(&r);
    let prios = v["jobs"][0]["read"]["prios"].as_array().unwrap();
    assert_eq!(prios.len(), 2);
    assert_eq!(
        (
            &prios[0]["prioclass"],
            &prios[0]["prio"],
            &prios[0]["priohint"]
        ),
        (&2.into(), &7.into(), &0.into())
    );
    assert_eq!(
        (&prios[1]["prioclass"], &prios[1]["prio"]),
        (&3.into(), &2.into())
    );
    let n0 = prios[0]["clat_ns"]["N"].as_u64().unwrap();
    let n1 = prios[1]["clat_ns"]["N"].as_u64().unwrap();
    assert_eq!(
        n0 + n1,
        v["jobs"][0]["read"]["clat_ns"]["N"].as_u64().unwrap()
    );
    assert!(prios[1]["clat_ns"]["percentile"].is_object());
    let text = sim::report::text::to_string(&r);
    assert!(text.contains("    clat prio 2/7/0 ("), "{text}");
    assert!(text.contains("    clat prio 3/2/0 ("), "{text}");
    assert!(text.contains("% of IOs) percentiles ("), "{text}");
    // Without cmdprio (or with one priority only) there is no prios array.
    let r = run_on(&format!("{RANDREAD}runtime=1\n[j]\n"), "ideal", "none");
    let v = sim::report::json::to_value(&r);
    assert!(v["jobs"][0]["read"].get("prios").is_none());
    let r = run_on(
        &format!("{RANDREAD}runtime=1\n[j]\ncmdprio_percentage=100\n"),
        "ideal",
        "none",
    );
    let v = sim::report::json::to_value(&r);
    assert!(v["jobs"][0]["read"].get("prios").is_none());
}

#[test]
fn bssplit_gives_each_size_its_share_and_priorities() {
    // fio's cmdprio-bssplit.fio, advanced form: 64 KiB reads are 25 % RT/1
    // and 75 % IDLE/2; 1 MiB ones keep the job's priority.
    let job = format!(
        "{RANDREAD}runtime=2\n[j]\nbssplit=64k/40:1024k/60\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0\n"
    );
    let r = run_on(&job, "ideal", "none");
    let d = &r.jobs[0].stats.read;
    let p: Vec<(u16, u64)> = d
        .prios_with_samples()
        .map(|p| (p.value, p.lat.count()))
        .collect();
    assert_eq!(
        p.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![0, (1 << 13) | 1, (3 << 13) | 2]
    );
    let total = d.clat.count() as f64;
    let share = |i: usize| p[i].1 as f64 / total;
    assert!((0.55..0.65).contains(&share(0)), "{p:?}");
    assert!((0.07..0.13).contains(&share(1)), "{p:?}");
    assert!((0.25..0.35).contains(&share(2)), "{p:?}");
}

#[test]
fn bad_cmdprio_settings_are_refused() {
    let base = "[j]\nfilename=/dev/sda\ndirect=1\nrw=randread\nioengine=libaio\n";
    for (opts, want) in [
        ("cmdprio_percentage=101", "out of range (0 to 100)"),
        (
            "cmdprio_percentage=10\ncmdprio_class=4",
            "out of range (1 to 3)",
        ),
        ("cmdprio_percentage=10\ncmdprio=8", "out of range (0 to 7)"),
        (
            "cmdprio_percentage=10\ncmdprio_bssplit=4k/10",
            "mutually exclusive",
        ),
        ("cmdprio_bssplit=4k/60:4k/50", "exceeds 100"),
        ("cmdprio_bssplit=4k", "expected bs/percentage"),
        ("cmdprio_bssplit=4k/10/9", "class '9'"),
    ] {
        let e = refused(&format!("{base}{opts}\n"));
        assert!(e.starts_with("t.fio:") && e.contains(want), "{opts}: {e}");
    }
    let e = refused("[j]\nfilename=/dev/sda\ndirect=1\nrw=read\ncmdprio_percentage=10\n");
    assert!(e.contains("libaio and io_uring engines"), "{e}");
}
