//! `iosched serve`: a modelled disk in real time over the Network Block Device
//! protocol. Real clients (fio's nbd engine, qemu-img/qemu-io, nbdcopy, the kernel's
//! nbd driver) connect; each request goes through iosched's block layer and
//! scheduler to a device model ([`sim::emulate`]), and its reply leaves at the
//! request's modelled completion instant. Data lives in a sparse backing file or
//! in memory.
//!
//! Threads: one real-time engine thread owns the model ([`engine`]); a
//! single-threaded tokio runtime does the network (handshake, request parsing,
//! data, replies). Connections hand requests to the engine over a channel and get
//! completions back on their own channel.

mod conn;
pub mod engine;
pub mod proto;
pub mod store;

use anyhow::{bail, Context, Result};
use conn::{Export, Shared, Stats};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of `iosched serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    iosched serve --device nvme-gen4 --size 8g\n  \
    fio --name=r --ioengine=nbd --uri=nbd://127.0.0.1:10809/ --rw=randread --bs=4k --iodepth=1 --time_based --runtime=10\n  \
    iosched serve --device hdd-7200 --sched bfq --backing disk.img --size 1g --port 10810\n  \
    qemu-io -f raw -c 'write -P 0xab 0 1m' -c 'read -P 0xab 0 1m' nbd://127.0.0.1:10810\n  \
    iosched serve --device ssd-sata --socket /tmp/ssd.sock   (then nbd+unix:///?socket=/tmp/ssd.sock)\n\n\
    Stop with Ctrl-C or SIGTERM: the summary goes to standard output.")]
pub struct Args {
    /// Device, scheduler, settings, HZ (as for `iosched run`).
    #[command(flatten)]
    pub target: super::sim_opts::TargetArgs,
    /// Software queues (simulated CPUs); connection N submits on queue N mod this.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub cpus: u32,
    /// Address to listen on (TCP). Loopback by default: NBD has no authentication.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: String,
    /// TCP port; 0 picks a free one (printed at start).
    #[arg(long, value_name = "PORT", default_value_t = 10809)]
    pub port: u16,
    /// Listen on this Unix socket instead of TCP.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<String>,
    /// Keep the data in this file (created if missing, extended sparse to the
    /// export size, never truncated); without it, data is kept in memory.
    #[arg(long, value_name = "FILE")]
    pub backing: Option<String>,
    /// Export size (bytes, or with k/m/g/t: powers of 1024), a multiple of 512;
    /// default: the device's capacity.
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Without --backing: most data kept in memory; writes past it fail with ENOSPC.
    #[arg(long, value_name = "SIZE", default_value = "1g")]
    pub mem_limit: String,
    /// Name of the export (clients asking for another name are refused; the empty
    /// name, the default export, is always accepted).
    #[arg(long, value_name = "NAME", default_value = "iosched")]
    pub export_name: String,
    /// Refuse writes (EPERM) and advertise a read-only export.
    #[arg(long)]
    pub read_only: bool,
    /// Minimum block size advertised and enforced (offsets and lengths must be
    /// multiples; EINVAL otherwise): 1 to 4096, a power of two.
    #[arg(long, value_name = "BYTES", default_value_t = 1)]
    pub min_block: u32,
    /// Maximum read or write payload (longer requests get EINVAL).
    #[arg(long, value_name = "SIZE", default_value = "32m")]
    pub max_block: String,
    /// Most connections at once; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_connections: usize,
    /// Most requests in flight per connection; a connection with that many waits
    /// (is not read from) until replies free room.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_inflight: usize,
    /// Most data in flight per connection (write payloads and read buffers).
    #[arg(long, value_name = "SIZE", default_value = "64m")]
    pub max_inflight_bytes: String,
    /// Print a status line to standard error every this many seconds (0: never).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub status: f64,
    /// Stop by itself after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The engine busy-waits the last this many microseconds before a modelled
    /// completion (more: replies closer to their instant, more CPU).
    #[arg(long, value_name = "US", default_value_t = 50)]
    pub spin_us: u64,
}

/// Parse a size: bytes, or with a k/m/g/t suffix (powers of 1024).
pub fn parse_size(what: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, shift) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        Some('t') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = num
        .parse()
        .with_context(|| format!("{what} {s}: expected a size such as 4096, 64m or 2g"))?;
    n.checked_mul(1u64 << shift)
        .with_context(|| format!("{what} {s}: too large"))
}

/// Everything `run` sets up before serving, checked.
struct Setup {
    /// The model's settings and profile: the engine thread builds its own model
    /// from them (a model is not `Send`), one like the one checked here.
    cfg: sim::simulate::SimConfig,
    device: devices::Profile,
    name: String,
    scheduler: String,
    export: Export,
    store: Arc<dyn store::Store>,
    where_: String,
}

fn setup(a: &Args) -> Result<Setup> {
    let device = a.target.profile()?;
    let hz = a.target.checked_hz()?;
    if a.cpus == 0 || a.cpus > 4096 {
        bail!("--cpus {}: expected 1 to 4096", a.cpus);
    }
    let mut opts = sim::runner::RunOptions::new(device.clone());
    opts.scheduler = a.target.sched.clone();
    opts.hz = hz;
    opts.nr_cpus = a.cpus;
    opts.settings = a.target.settings()?;
    let model = device.build();
    let info = model.info().clone();
    let cfg = sim::runner::emulator_config(&opts, &info)?;
    let emu = sim::emulate::Emulator::new(&cfg, model)?;
    let scheduler = emu.scheduler().to_string();
    drop(emu);
    let capacity = info.capacity_sectors * 512;
    let size = match &a.size {
        Some(s) => parse_size("--size", s)?,
        None => capacity,
    };
    if size == 0 || !size.is_multiple_of(512) {
        bail!("--size {size}: expected a positive multiple of 512 bytes");
    }
    if size > capacity {
        bail!(
            "--size {size}: larger than device '{}' ({capacity} bytes)",
            info.name
        );
    }
    if !(1..=4096).contains(&a.min_block) || !a.min_block.is_power_of_two() {
        bail!(
            "--min-block {}: expected a power of two from 1 to 4096",
            a.min_block
        );
    }
    let max_block = parse_size("--max-block", &a.max_block)?;
    if !(4096..=1 << 30).contains(&max_block) || !max_block.is_multiple_of(u64::from(a.min_block)) {
        bail!("--max-block {max_block}: expected 4k to 1g, a multiple of --min-block");
    }
    let inflight_bytes = parse_size("--max-inflight-bytes", &a.max_inflight_bytes)?;
    if inflight_bytes < max_block {
        bail!("--max-inflight-bytes {inflight_bytes}: must be at least --max-block ({max_block})");
    }
    if a.max_inflight == 0 || a.max_connections == 0 {
        bail!("--max-inflight and --max-connections must be at least 1");
    }
    if !(a.status >= 0.0 && a.status.is_finite()) {
        bail!("--status {}: expected seconds, 0 or more", a.status);
    }
    if a.timeout.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
        bail!("--timeout: expected a positive number of seconds");
    }
    if a.export_name.len() > 4096 || a.export_name.contains('\0') {
        bail!("--export-name: at most 4096 bytes, no NUL");
    }
    let store: Arc<dyn store::Store> = match &a.backing {
        Some(path) => Arc::new(
            store::FileStore::open(std::path::Path::new(path), size)
                .with_context(|| format!("--backing {path}"))?,
        ),
        None => Arc::new(store::MemStore::new(parse_size(
            "--mem-limit",
            &a.mem_limit,
        )?)),
    };
    // Transmission flags follow the model: flush and FUA where it has a volatile
    // cache (as the kernel's nbd driver then reports "write back"), rotational for
    // disks; every connection shares one model and one store, so flushes are
    // visible across connections (CAN_MULTI_CONN).
    let mut flags = proto::TF_HAS_FLAGS
        | proto::TF_SEND_TRIM
        | proto::TF_SEND_WRITE_ZEROES
        | proto::TF_CAN_MULTI_CONN;
    if info.write_cache {
        flags |= proto::TF_SEND_FLUSH | proto::TF_SEND_FUA;
    }
    if info.rotational {
        flags |= proto::TF_ROTATIONAL;
    }
    if a.read_only {
        flags |= proto::TF_READ_ONLY;
    }
    let export = Export {
        name: a.export_name.clone(),
        description: format!("iosched: device {} with scheduler {}", info.name, scheduler),
        size,
        flags,
        min_block: a.min_block,
        preferred_block: 4096u32.max(a.min_block),
        max_block: max_block as u32,
        max_inflight: a.max_inflight,
        max_inflight_bytes: inflight_bytes,
    };
    let where_ = match &a.socket {
        Some(p) => format!("nbd+unix:///?socket={p}"),
        None => String::new(),
    };
    Ok(Setup {
        cfg,
        device,
        name: info.name.clone(),
        scheduler,
        export,
        store,
        where_,
    })
}

/// Run `iosched serve`.
pub fn run(a: Args) -> Result<()> {
    let s = setup(&a)?;
    super::signals::stop_gracefully();
    let clock = engine::Clock::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let device = s.name.clone();
    let sched = s.scheduler.clone();
    let (cfg, profile) = (s.cfg, s.device);
    let nr_cpus = a.cpus;
    let spin = Duration::from_micros(a.spin_us);
    let inf = in_flight.clone();
    let engine = std::thread::Builder::new()
        .name("iosched-engine".into())
        .spawn(move || {
            let emu = sim::emulate::Emulator::new(&cfg, profile.build())
                .expect("the same settings were accepted at start-up");
            engine::run(emu, clock, rx, nr_cpus, spin, inf)
        })
        .context("cannot start the engine thread")?;
    let stats = Arc::new(Mutex::new(Stats::new()));
    let shared = Arc::new(Shared {
        export: s.export,
        store: s.store,
        engine: tx.clone(),
        clock,
        stats: stats.clone(),
        conns: Arc::new(tokio::sync::Semaphore::new(a.max_connections)),
        next_conn: std::sync::atomic::AtomicU32::new(0),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the network runtime")?;
    let started = Instant::now();
    let served = rt.block_on(async {
        let listen = async {
            match &a.socket {
                Some(path) => {
                    // A socket file left by an earlier run is replaced.
                    if std::fs::symlink_metadata(path)
                        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
                    {
                        let _ = std::fs::remove_file(path);
                    }
                    let l = tokio::net::UnixListener::bind(path)
                        .with_context(|| format!("--socket {path}: cannot listen"))?;
                    eprintln!(
                        "iosched serve: listening on {} (device {device}, scheduler {sched}, {} bytes)",
                        s.where_, shared.export.size
                    );
                    conn::serve_unix(l, shared.clone()).await
                }
                None => {
                    let l = tokio::net::TcpListener::bind((a.bind.as_str(), a.port))
                        .await
                        .with_context(|| format!("--bind {} --port {}: cannot listen", a.bind, a.port))?;
                    let addr = l.local_addr()?;
                    eprintln!(
                        "iosched serve: listening on nbd://{addr}/ (device {device}, scheduler {sched}, {} bytes)",
                        shared.export.size
                    );
                    conn::serve_tcp(l, shared.clone()).await
                }
            }
        };
        let watch = async {
            let mut last_status = Instant::now();
            let mut snap = stats.lock().unwrap_or_else(|e| e.into_inner()).interval_reset();
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if sim::runner::stop_requested() {
                    return;
                }
                if a.timeout.is_some_and(|t| started.elapsed().as_secs_f64() >= t) {
                    return;
                }
                if a.status > 0.0 && last_status.elapsed().as_secs_f64() >= a.status {
                    let dt = last_status.elapsed().as_secs_f64();
                    last_status = Instant::now();
                    let mut st = stats.lock().unwrap_or_else(|e| e.into_inner());
                    let line = st.status_line(dt, in_flight.load(Ordering::Relaxed), &snap);
                    snap = st.interval_reset();
                    drop(st);
                    eprintln!("{line}");
                }
            }
        };
        tokio::select! {
            r = listen => r,
            () = watch => Ok(()),
        }
    });
    // Dropping the runtime closes every connection; the engine then stops.
    drop(rt);
    let _ = tx.send(engine::Msg::Stop);
    drop(tx);
    drop(shared);
    let end = engine
        .join()
        .map_err(|_| anyhow::anyhow!("the engine thread failed"))?;
    if let Some(p) = &a.socket {
        let _ = std::fs::remove_file(p);
    }
    served?;
    let elapsed = started.elapsed();
    let st = stats.lock().unwrap_or_else(|e| e.into_inner());
    print!("{}", st.summary(&device, &sched, &end, elapsed));
    Ok(())
}
