//! Files on the simulated file system: one contiguous extent each, laid out
//! in the order fio creates them, 4 KiB aligned (docs/fio.md, "Files").

use sim::fio::parse_job_file;
use sim::runner::{self, RunOptions};

fn plan(text: &str) -> Result<Vec<(u64, u64)>, String> {
    let input = parse_job_file("f.fio", text).map_err(|e| e.to_string())?;
    let o = RunOptions::new(devices::profile("ideal").unwrap());
    let p = runner::plan(&input, &o).map_err(|e| e.to_string())?;
    Ok(p.clones.iter().map(|c| (c.offset, c.size)).collect())
}

#[test]
fn jobs_without_filename_get_their_own_files_one_after_another() {
    // a.0.0 (10000 B, rounded up to 12 KiB for the next), a.1.0, then b.0.0.
    let r = plan("[a]\nsize=10000\nbs=512\nnumjobs=2\n[b]\nsize=4k\noffset=4k\n").unwrap();
    assert_eq!(r, vec![(0, 10000), (12288, 10000), (24576 + 4096, 4096)]);
}

#[test]
fn a_named_file_is_shared_and_as_large_as_its_largest_user_needs() {
    let r = plan(
        "[global]\nfilename=data\ndirectory=/mnt\n[w]\nsize=1m\n[r]\nsize=64k\noffset=1m\n[o]\nfilename=/mnt/other\nsize=4k\n",
    )
    .unwrap();
    // /mnt/data holds 1 MiB + 64 KiB; /mnt/other follows it.
    assert_eq!(
        r,
        vec![(0, 1 << 20), (1 << 20, 65536), ((1 << 20) + 65536, 4096)]
    );
}

#[test]
fn devices_fill_device_and_filesize() {
    let cap = 1_099_511_627_776u64;
    // A device under /dev/ is the device itself.
    assert_eq!(
        plan("[d]\nfilename=/dev/sdb\nsize=4k\noffset=8k\n").unwrap(),
        vec![(8192, 4096)]
    );
    // filesize sets the file (and, without size, the region); fill_device
    // takes what is left.
    let r = plan("[a]\nfilesize=1m\n[b]\nfill_device=1\nrw=write\n").unwrap();
    assert_eq!(r, vec![(0, 1 << 20), (1 << 20, cap - (1 << 20))]);
    // A range is drawn per file, a multiple of the block size in [min, max).
    let r = plan("[a]\nfilesize=64k-128k\nbs=4k\nnumjobs=4\n").unwrap();
    for (i, (off, size)) in r.iter().enumerate() {
        assert!((65536..131072).contains(size) && size % 4096 == 0, "{r:?}");
        if i > 0 {
            assert_eq!(*off, r[i - 1].0 + r[i - 1].1, "{r:?}");
        }
    }
}

#[test]
fn offset_increment_follows_fio_subjob_numbers() {
    // fio numbers the job 0 and its clones from numjobs-1 down to 1.
    let r =
        plan("[j]\nfilename=/dev/x\nsize=4k\noffset=4k\noffset_increment=1m\nnumjobs=3\n").unwrap();
    let offs: Vec<u64> = r.iter().map(|x| x.0).collect();
    assert_eq!(offs, vec![4096, 4096 + (2 << 20), 4096 + (1 << 20)]);
}

#[test]
fn files_that_do_not_fit_or_have_no_size_are_refused() {
    let e = plan("[a]\nfilesize=600g\n[b]\nfilesize=600g\n").unwrap_err();
    assert!(
        e.contains("f.fio:3") && e.contains("b.0.0") && e.contains("does not fit"),
        "{e}"
    );
    let e = plan("[a]\nfilename=data\n").unwrap_err();
    assert!(
        e.contains("f.fio:1") && e.contains("give size= or filesize="),
        "{e}"
    );
}

/// The offsets a job file's I/O goes to, in issue order (from its
/// `write_iolog`, which the job file must name as `LOG`).
fn offsets(text: &str) -> Vec<u64> {
    let dir = std::env::temp_dir().join(format!("iosched-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join(format!(
        "{:x}.log",
        text.len() as u64 * 31 + text.as_bytes()[5] as u64
    ));
    let text = text.replace("LOG", log.to_str().unwrap());
    let input = parse_job_file("f.fio", &text).unwrap();
    let o = RunOptions::new(devices::profile("ideal").unwrap());
    let p = runner::plan(&input, &o).unwrap();
    runner::run(&input, &o, p, None).unwrap();
    let got = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    got.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "read").then(|| f[3].parse().unwrap())
        })
        .collect()
}

#[test]
fn several_files_per_job_are_laid_out_and_served_as_fio_serves_them() {
    // nrfiles=3 of 16 KiB: mf.0.0, mf.0.1, mf.0.2 one after another. fio
    // 3.33 reads them round robin, one I/O each (its write_iolog:
    // mf.0.0 0, mf.0.1 0, mf.0.2 0, mf.0.0 4096, ...).
    let job = "[mf]\nbs=4k\nrw=read\nfilesize=16k\nnrfiles=3\nwrite_iolog=LOG\n";
    let k = 16384;
    let rr: Vec<u64> = (0..4)
        .flat_map(|b| (0..3).map(move |f| f * k + b * 4096))
        .collect();
    assert_eq!(offsets(job), rr);
    // `sequential` reads each file to its end first (fio 3.33 likewise).
    let seq: Vec<u64> = (0..12).map(|b| b * 4096).collect();
    assert_eq!(
        offsets(&job.replace("nrfiles=3", "nrfiles=3\nfile_service_type=sequential")),
        seq
    );
    // `roundrobin:2`: two I/Os per file.
    let rr2 = [0, 4096, k, k + 4096, 2 * k, 2 * k + 4096, 8192, 12288];
    assert_eq!(
        offsets(&job.replace("nrfiles=3", "nrfiles=3\nfile_service_type=roundrobin:2"))[..8],
        rr2[..]
    );
    // size is shared out: 3 files of 32 KiB for size=96k; filename_format
    // names them, filename=a:b names them directly.
    let r =
        plan("[j]\nsize=96k\nnrfiles=3\nfilename_format=f.$filenum\n[k]\nfilename=x:y\nsize=8k\n")
            .unwrap();
    assert_eq!(r, vec![(0, 32768), (3 * 32768, 4096)]);
    // A random service touches every file, and the job transfers its whole size.
    let ofs = offsets(
        "[r]\nbs=4k\nrw=randread\nfilesize=16k\nnrfiles=4\nfile_service_type=random\nwrite_iolog=LOG\n",
    );
    assert_eq!(ofs.len(), 16);
    let mut sorted = ofs.clone();
    sorted.sort();
    assert_eq!(sorted, (0..16).map(|b| b * 4096).collect::<Vec<u64>>());
}

#[test]
fn file_options_refuse_what_is_not_modeled() {
    for (job, want) in [
        ("nrfiles=0", "below the minimum of 1"),
        ("file_service_type=zipf:1.1", "not modeled yet"),
        (
            "file_service_type=rr",
            "invalid value 'rr' for file_service_type",
        ),
        ("file_service_type=random:0", "count"),
        ("openfiles=1\nnrfiles=2", "openfiles=1 with 2 files"),
        ("filename=/dev/sda:/dev/sdb", "with a device among them"),
        (
            "filename_format=$clientuid.$filenum\nnrfiles=2",
            "$clientuid",
        ),
    ] {
        let e = plan(&format!("[j]\nsize=64k\n{job}\n")).unwrap_err();
        assert!(e.starts_with("f.fio:") && e.contains(want), "{job}: {e}");
    }
    // openfiles at (or over) the number of files changes nothing.
    plan("[j]\nsize=64k\nnrfiles=2\nopenfiles=2\n").unwrap();
}
