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
