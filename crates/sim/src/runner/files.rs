//! Where each job's file lies on the simulated device.
//!
//! iosched simulates one device. A `filename` under `/dev/` is that device
//! itself. Any other file (a `filename` that is not a device, or the files
//! fio names itself for a job without `filename=`, `$jobname.$jobnum.0` in
//! `directory`) lives on a fresh file system on the device: one contiguous
//! extent per file, placed in the order fio creates them (job by job, clone
//! by clone: fio's `setup_files` runs for each job in turn, `create_serialize`
//! being the default), each starting at the next 4 KiB boundary after the
//! previous one, the first at byte 0. The file system's own metadata takes
//! no space and causes no I/O. A file named by several jobs is created once,
//! as large as the largest of them needs.
//!
//! A job with neither `filename` nor a size (`size`, `filesize`,
//! `fill_device`) runs on the whole device, where fio would refuse to
//! create a file of unknown size.

use crate::fio::{JobSpec, SizeSpec};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The file system's block size: where extents start (ext4's and XFS's
/// default 4 KiB).
pub const FS_BLOCK: u64 = 4096;

/// One clone's file on the device, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First byte on the device.
    pub start: u64,
    /// Length of the file (for the device itself, its capacity).
    pub len: u64,
}

/// A file to create, in creation order.
struct File {
    name: String,
    /// Bytes it must hold; `None`: all the space left (`fill_device`).
    need: Option<u64>,
}

/// Which file a clone uses: the device, or an index into the files.
#[derive(Clone, Copy)]
enum Target {
    Device,
    File(usize),
}

/// fio's `subjob_number` of clone `c` of a job of `numjobs` clones: the job
/// itself is 0, and `add_job` numbers the clones it adds from `numjobs - 1`
/// down to 1.
pub fn subjob_number(c: u32, numjobs: u32) -> u64 {
    if c == 0 {
        0
    } else {
        u64::from(numjobs - c)
    }
}

/// The names of clone `c`'s files: `filename`'s (shared by every clone),
/// else `nrfiles` names made from `filename_format` (fio's default
/// `$jobname.$jobnum.$filenum`), in `directory`.
fn own_file_names(spec: &JobSpec, c: u32) -> Result<Vec<String>, String> {
    if let Some(f) = &spec.filename {
        let mut names = vec![in_directory(spec, f)];
        names.extend(spec.files.more_names.iter().map(|n| in_directory(spec, n)));
        return Ok(names);
    }
    let format = spec
        .files
        .filename_format
        .as_deref()
        .unwrap_or("$jobname.$jobnum.$filenum");
    if format.contains("$clientuid") {
        return Err(
            "filename_format's $clientuid (fio's client/server mode) is not modeled".to_string(),
        );
    }
    Ok((0..spec.files.nrfiles.max(1))
        .map(|f| {
            let name = format
                .replace("$jobname", &spec.name)
                .replace("$jobnum", &c.to_string())
                .replace("$filenum", &f.to_string());
            in_directory(spec, &name)
        })
        .collect())
}

fn in_directory(spec: &JobSpec, name: &str) -> String {
    match &spec.files.directory {
        Some(d) if !name.starts_with('/') => format!("{}/{name}", d.trim_end_matches('/')),
        _ => name.to_string(),
    }
}

/// fio's `get_rand_file_size`: uniform in `[min, max)`, rounded down to the
/// smallest block size.
fn file_size(spec: &JobSpec, rng: &mut Pcg64Mcg) -> Option<u64> {
    let (min, max) = spec.files.filesize?;
    if max <= min {
        return Some(min);
    }
    let s = min + rng.gen_range(0..max - min);
    let bs = spec.bs.min().max(1);
    Some((s - s % bs).max(bs))
}

/// What clone `c` of `spec` needs each of its `nfiles` files to hold: its
/// offset plus its share of the size (fio gives each file `size / nrfiles`),
/// or the file's `filesize`; `None` with `fill_device`. An error when the
/// job gives no size at all.
fn need(spec: &JobSpec, c: u32, nfiles: u64, drawn: Option<u64>) -> Result<Option<u64>, String> {
    if spec.files.fill_device {
        return Ok(None);
    }
    if let Some(f) = drawn {
        return Ok(Some(f));
    }
    let offset =
        spec.offset + subjob_number(c, spec.numjobs).saturating_mul(spec.files.offset_increment);
    match spec.size {
        Some(SizeSpec::Bytes(b)) => Ok(Some(offset.saturating_add(b / nfiles.max(1)))),
        Some(SizeSpec::Percent(p)) => Err(format!(
            "size={p}% of a file that does not exist yet needs filesize= (or a device \
             filename under /dev/)"
        )),
        None => Err(
            "the file does not exist on the simulated file system: give size= or filesize= \
             (or a device filename under /dev/)"
                .to_string(),
        ),
    }
}

/// Each job's clones' files' extents, in job, clone and file order. The
/// error names the job (its index) and what is wrong.
pub fn lay_out(
    jobs: &[JobSpec],
    capacity: u64,
    seed: u64,
) -> Result<Vec<Vec<Vec<Extent>>>, (usize, String)> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0xF11E_5123);
    let mut files: Vec<File> = Vec::new();
    let mut targets: Vec<Vec<Vec<Target>>> = Vec::new();
    for (k, spec) in jobs.iter().enumerate() {
        let mut mine = Vec::new();
        for c in 0..spec.numjobs {
            let sized =
                spec.size.is_some() || spec.files.filesize.is_some() || spec.files.fill_device;
            if crate::fio::targets_device(spec.filename.as_deref(), sized) {
                mine.push(vec![Target::Device]);
                continue;
            }
            let names = own_file_names(spec, c).map_err(|e| (k, e))?;
            let nfiles = names.len() as u64;
            let mut clone_files = Vec::new();
            for name in names {
                let i = match files.iter().position(|f| f.name == name) {
                    Some(i) => {
                        // An existing file: the job uses it as it is, or grows it.
                        if let Ok(Some(n)) = need(spec, c, nfiles, None) {
                            if let Some(have) = files[i].need.as_mut() {
                                *have = (*have).max(n);
                            }
                        }
                        i
                    }
                    None => {
                        let drawn = file_size(spec, &mut rng);
                        let need = need(spec, c, nfiles, drawn)
                            .map_err(|e| (k, format!("{name}: {e}")))?;
                        files.push(File { name, need });
                        files.len() - 1
                    }
                };
                clone_files.push(Target::File(i));
            }
            mine.push(clone_files);
        }
        targets.push(mine);
    }
    let mut extents = Vec::with_capacity(files.len());
    let mut at = 0u64;
    for f in &files {
        let start = at.div_ceil(FS_BLOCK) * FS_BLOCK;
        let len = match f.need {
            Some(n) => n,
            None => capacity.saturating_sub(start),
        };
        if len == 0 || start.saturating_add(len) > capacity {
            let k = targets
                .iter()
                .position(|t| {
                    t.iter()
                        .flatten()
                        .any(|x| matches!(x, Target::File(i) if files[*i].name == f.name))
                })
                .unwrap_or(0);
            return Err((
                k,
                format!(
                    "file {} ({len} bytes at byte {start}) does not fit on the device \
                     (capacity {capacity} bytes): the run's files are laid out one after another",
                    f.name
                ),
            ));
        }
        extents.push(Extent { start, len });
        at = start + len;
    }
    let extent = |x: &Target| match x {
        Target::Device => Extent {
            start: 0,
            len: capacity,
        },
        Target::File(i) => extents[*i],
    };
    Ok(targets
        .iter()
        .map(|t| t.iter().map(|c| c.iter().map(extent).collect()).collect())
        .collect())
}
