//! Durability invariant: with a device that loses its volatile cache at a power cut,
//! every write acknowledged before an fsync that then completed — or written with
//! FUA and acknowledged — is on the media. Writes go to fresh sectors (a log), so
//! "on the media" is unambiguous; merging, plugging and both flush insert positions
//! are exercised, on an NCQ-exclusive and on a fully queued flush.

mod common;
use blk::mq::FlushInsert;
use blk::{Ns, ReqFlags};
use common::*;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
enum Io {
    Write { sector: u64, n: u32, fua: bool },
    Fsync { submitted: Ns },
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn check(seed: u64, fua: bool, insert: FlushInsert, exclusive: bool) -> usize {
    let mut q = none_queue(cfg(16, true, fua, insert));
    let mut d = Disk::ncq(16);
    d.exclusive_flush = exclusive;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let cut = Ns(1_000_000 + rng.next() % 50_000_000);
    let mut ios: HashMap<u64, Io> = HashMap::new();
    let mut acked: Vec<(u64, Ns)> = Vec::new();
    let mut log_head = 0u64;
    let mut owner = 0u64;
    let mut issue = |q: &mut blk::mq::Queue,
                     d: &mut Disk,
                     now: Ns,
                     rng: &mut Rng,
                     ios: &mut HashMap<u64, Io>| {
        owner += 1;
        let r = rng.next() % 10;
        let b = if r < 2 {
            ios.insert(owner, Io::Fsync { submitted: now });
            fsync(owner)
        } else {
            let n = 8 * (1 + (rng.next() % 4) as u32);
            // Sometimes continue the log right after the last write: merges.
            let sector = log_head;
            log_head += n as u64 + if rng.next().is_multiple_of(2) { 0 } else { 8 };
            let fua = r == 2;
            ios.insert(owner, Io::Write { sector, n, fua });
            let mut b = write(sector, n, owner);
            if fua {
                b.flags = b.flags.with(ReqFlags::FUA);
            }
            b
        };
        q.submit_bio_direct(now, b, d);
    };
    // Eight submitters, a few plugged batches at the start.
    q.start_plug();
    for _ in 0..8 {
        issue(&mut q, &mut d, Ns(0), &mut rng, &mut ios);
    }
    q.finish_plug(Ns(0), Some(&mut d));
    run_until(&mut q, &mut d, cut, |q, d, now, o| {
        acked.push((o, now));
        issue(q, d, now, &mut rng, &mut ios);
    });
    d.power_cut();
    // The latest completed fsync submitted after each write's ack makes it durable.
    let fsyncs: Vec<(Ns, Ns)> = acked
        .iter()
        .filter_map(|(o, t)| match ios[o] {
            Io::Fsync { submitted } => Some((submitted, *t)),
            _ => None,
        })
        .collect();
    let mut checked = 0;
    for (o, t) in &acked {
        if let Io::Write { sector, n, fua } = ios[o] {
            let synced = fsyncs.iter().any(|(s, done)| *s >= *t && *done <= cut);
            if fua || synced {
                checked += 1;
                assert!(
                    d.persisted(sector, n),
                    "seed {seed} fua={fua} {insert:?} exclusive={exclusive}: write {o} \
                     ({sector}+{n}) acked at {t} lost (fsync'd: {synced})"
                );
            }
        }
    }
    checked
}

#[test]
fn acknowledged_and_flushed_writes_survive_a_power_cut() {
    let mut checked = 0;
    for seed in 0..40 {
        for fua in [true, false] {
            for insert in [FlushInsert::Head, FlushInsert::Tail] {
                for exclusive in [true, false] {
                    checked += check(seed, fua, insert, exclusive);
                }
            }
        }
    }
    // The workload must actually exercise the invariant.
    assert!(checked > 10_000, "only {checked} durable writes checked");
}
