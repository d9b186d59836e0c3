//! One NBD connection: the fixed newstyle handshake, then the transmission phase
//! (a reader that checks requests, moves write data into the store and hands the
//! requests to the engine; a writer that sends each reply when the engine says
//! its modelled completion has come), and the statistics replies feed.

use super::engine::{BlockOp, Clock, Done, Msg, Submit};
use super::proto::{self, Command};
use super::store::{Store, StoreError};
use blk::{Ns, Op, ReqFlags};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// The export as negotiated.
#[derive(Clone, Debug)]
pub struct Export {
    /// Its name (the empty name is accepted too).
    pub name: String,
    /// `NBD_INFO_DESCRIPTION`.
    pub description: String,
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags (without `SEND_DF`, which follows structured replies).
    pub flags: u16,
    /// Block sizes advertised.
    pub min_block: u32,
    /// Preferred block size.
    pub preferred_block: u32,
    /// Maximum payload.
    pub max_block: u32,
    /// Requests in flight per connection.
    pub max_inflight: usize,
    /// Bytes in flight per connection.
    pub max_inflight_bytes: u64,
}

/// What every connection shares.
pub struct Shared {
    /// The export.
    pub export: Export,
    /// Its data.
    pub store: Arc<dyn Store>,
    /// The engine's inbox.
    pub engine: std::sync::mpsc::Sender<Msg<Token>>,
    /// The model's clock.
    pub clock: Clock,
    /// Statistics.
    pub stats: Arc<Mutex<Stats>>,
    /// Connection slots.
    pub conns: Arc<Semaphore>,
    /// Next connection number.
    pub next_conn: AtomicU32,
}

/// How long a client may take over the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest write payload read and thrown away after an error; a longer one
/// ends the session (the stream cannot be trusted to carry that much).
const MAX_DRAIN: u64 = 64 << 20;
/// Units of the per-connection data budget.
const BUDGET_UNIT: u64 = 4096;

/// Accept TCP connections until the runtime stops.
pub async fn serve_tcp(l: tokio::net::TcpListener, sh: Arc<Shared>) -> anyhow::Result<()> {
    loop {
        let (s, _) = match l.accept().await {
            Ok(x) => x,
            // Out of descriptors and the like: the listener stays.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = s.set_nodelay(true);
        spawn(s, &sh);
    }
}

/// Accept Unix-socket connections until the runtime stops.
pub async fn serve_unix(l: tokio::net::UnixListener, sh: Arc<Shared>) -> anyhow::Result<()> {
    loop {
        let (s, _) = match l.accept().await {
            Ok(x) => x,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        spawn(s, &sh);
    }
}

fn spawn<S: AsyncRead + AsyncWrite + Send + 'static>(s: S, sh: &Arc<Shared>) {
    // Past the connection limit: closed at once.
    let Ok(slot) = sh.conns.clone().try_acquire_owned() else {
        return;
    };
    let sh = sh.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let id = sh.next_conn.fetch_add(1, Ordering::Relaxed);
        sh.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .connections += 1;
        let _ = connection(s, id, sh).await;
    });
}

/// Why a session ended early (a hard disconnect), for no one but the logs.
type Hard = String;

async fn connection<S: AsyncRead + AsyncWrite + Send + 'static>(
    s: S,
    id: u32,
    sh: Arc<Shared>,
) -> Result<(), Hard> {
    let (rd, mut wr) = tokio::io::split(s);
    // Buffered: a request header is 28 bytes, and a client at depth sends many
    // at once; one read system call takes them all.
    let mut rd = tokio::io::BufReader::with_capacity(128 * 1024, rd);
    let neg = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut rd, &mut wr, &sh)).await
    {
        Ok(Ok(Some(n))) => n,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("handshake timed out".into()),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(writer(wr, rx, sh.clone(), neg.structured));
    let r = reader(rd, id, &sh, neg, tx).await;
    // The writer ends once every reply still owed has gone out.
    let _ = writer.await;
    r
}

/// What the handshake settled.
#[derive(Clone, Copy, Debug)]
struct Negotiated {
    structured: bool,
}

fn io(e: std::io::Error) -> Hard {
    e.to_string()
}

/// The fixed newstyle handshake: `Some` when transmission starts, `None` when the
/// client ended the session (`NBD_OPT_ABORT`).
async fn handshake<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    rd: &mut R,
    wr: &mut W,
    sh: &Shared,
) -> Result<Option<Negotiated>, Hard> {
    wr.write_all(&proto::greeting()).await.map_err(io)?;
    wr.flush().await.map_err(io)?;
    let cflags = rd.read_u32().await.map_err(io)?;
    proto::check_client_flags(cflags)?;
    let no_zeroes = cflags & proto::FLAG_C_NO_ZEROES != 0;
    let x = &sh.export;
    let mut structured = false;
    loop {
        let mut h = [0u8; 16];
        rd.read_exact(&mut h).await.map_err(io)?;
        let oh = proto::parse_option_header(&h)?;
        if oh.len > proto::MAX_OPTION_LEN {
            return Err(format!(
                "option {} with {} bytes of data",
                oh.option, oh.len
            ));
        }
        let mut data = vec![0u8; oh.len as usize];
        rd.read_exact(&mut data).await.map_err(io)?;
        let reply = |kind: u32, d: &[u8]| proto::option_reply(oh.option, kind, d);
        let known = |n: &str| n.is_empty() || n == x.name;
        let flags = |structured: bool| {
            if structured {
                x.flags | proto::TF_SEND_DF
            } else {
                x.flags
            }
        };
        let mut out = Vec::new();
        match oh.option {
            proto::OPT_EXPORT_NAME => {
                let ok = std::str::from_utf8(&data).is_ok_and(known);
                if !ok {
                    // This option cannot answer an error: the session ends.
                    return Err("NBD_OPT_EXPORT_NAME of an unknown export".into());
                }
                let r = proto::export_name_reply(x.size, flags(structured), no_zeroes);
                wr.write_all(&r).await.map_err(io)?;
                wr.flush().await.map_err(io)?;
                return Ok(Some(Negotiated { structured }));
            }
            proto::OPT_ABORT => {
                let _ = wr.write_all(&reply(proto::REP_ACK, &[])).await;
                let _ = wr.flush().await;
                return Ok(None);
            }
            proto::OPT_LIST if !data.is_empty() => {
                out = reply(proto::REP_ERR_INVALID, b"NBD_OPT_LIST carries no data");
            }
            proto::OPT_LIST => {
                let mut d = (x.name.len() as u32).to_be_bytes().to_vec();
                d.extend_from_slice(x.name.as_bytes());
                d.extend_from_slice(x.description.as_bytes());
                out.extend(reply(proto::REP_SERVER, &d));
                out.extend(reply(proto::REP_ACK, &[]));
            }
            proto::OPT_STRUCTURED_REPLY if !data.is_empty() => {
                out = reply(
                    proto::REP_ERR_INVALID,
                    b"NBD_OPT_STRUCTURED_REPLY carries no data",
                );
            }
            proto::OPT_STRUCTURED_REPLY => {
                structured = true;
                out = reply(proto::REP_ACK, &[]);
            }
            proto::OPT_INFO | proto::OPT_GO => match proto::parse_info_request(&data) {
                Err(e) => out = reply(proto::REP_ERR_INVALID, e.as_bytes()),
                Ok(r) if !known(&r.name) => {
                    out = reply(
                        proto::REP_ERR_UNKNOWN,
                        format!("no export '{}' (this server has '{}')", r.name, x.name).as_bytes(),
                    );
                }
                Ok(r) => {
                    for &i in &r.infos {
                        match i {
                            proto::INFO_NAME => out.extend(reply(
                                proto::REP_INFO,
                                &proto::info_string(proto::INFO_NAME, &x.name),
                            )),
                            proto::INFO_DESCRIPTION => out.extend(reply(
                                proto::REP_INFO,
                                &proto::info_string(proto::INFO_DESCRIPTION, &x.description),
                            )),
                            _ => {}
                        }
                    }
                    // Block sizes are sent whether asked for or not (the server
                    // may): a client that ignores them still gets EINVAL for
                    // misaligned requests.
                    out.extend(reply(
                        proto::REP_INFO,
                        &proto::info_block_size(x.min_block, x.preferred_block, x.max_block),
                    ));
                    out.extend(reply(
                        proto::REP_INFO,
                        &proto::info_export(x.size, flags(structured)),
                    ));
                    out.extend(reply(proto::REP_ACK, &[]));
                    if oh.option == proto::OPT_GO {
                        wr.write_all(&out).await.map_err(io)?;
                        wr.flush().await.map_err(io)?;
                        return Ok(Some(Negotiated { structured }));
                    }
                }
            },
            proto::OPT_STARTTLS => {
                out = reply(proto::REP_ERR_POLICY, b"this server does not offer TLS");
            }
            _ => out = reply(proto::REP_ERR_UNSUP, b"option not supported"),
        }
        wr.write_all(&out).await.map_err(io)?;
        wr.flush().await.map_err(io)?;
    }
}

/// A request in flight, as its reply needs it.
pub struct Token {
    handle: u64,
    cmd: Command,
    offset: u64,
    len: u32,
    fua: bool,
    /// An error found before the model (the reply goes at once).
    error: u32,
    /// The connection's request slot and data budget this request holds until
    /// its reply is sent.
    _count: Option<OwnedSemaphorePermit>,
    _budget: Option<OwnedSemaphorePermit>,
}

/// The block-layer operation for a command. Writes are submitted as a direct
/// writer's are (`dio_bio_write_op` in `block/fops.c`: `REQ_SYNC | REQ_IDLE`,
/// plus `REQ_FUA`); a flush as `blkdev_issue_flush` sends it (an empty
/// `REQ_PREFLUSH` write); write-zeroes as a write of the range (the kernel's
/// `REQ_OP_WRITE_ZEROES` is not modelled: the device is charged the data).
fn block_op(cmd: Command, offset: u64, len: u32, fua: bool) -> BlockOp {
    let sector = offset / 512;
    let end = (offset + u64::from(len)).div_ceil(512);
    let sectors = (end - sector) as u32;
    let fua = if fua { ReqFlags::FUA } else { ReqFlags::NONE };
    let (op, flags, sectors) = match cmd {
        Command::Read => (Op::Read, ReqFlags::NONE, sectors),
        Command::Write | Command::WriteZeroes { .. } => {
            (Op::Write, ReqFlags::SYNC | ReqFlags::IDLE | fua, sectors)
        }
        Command::Trim => (Op::Discard, ReqFlags::NONE, sectors),
        Command::Flush | Command::Disconnect => (Op::Write, ReqFlags::PREFLUSH, 0),
    };
    BlockOp {
        op,
        flags,
        sector,
        sectors,
    }
}

async fn reader<R: AsyncRead + Unpin>(
    mut rd: R,
    id: u32,
    sh: &Arc<Shared>,
    neg: Negotiated,
    tx: mpsc::UnboundedSender<Done<Token>>,
) -> Result<(), Hard> {
    let x = &sh.export;
    let limits = proto::ExportLimits {
        size: x.size,
        flags: x.flags,
        min_block: x.min_block,
        max_block: x.max_block,
        structured: neg.structured,
    };
    let count = Arc::new(Semaphore::new(x.max_inflight));
    let bytes = Arc::new(Semaphore::new(
        (x.max_inflight_bytes / BUDGET_UNIT) as usize,
    ));
    let now_error = |handle, cmd, error| {
        let now = sh.clock.now();
        let _ = tx.send(Done {
            token: Token {
                handle,
                cmd,
                offset: 0,
                len: 0,
                fua: false,
                error,
                _count: None,
                _budget: None,
            },
            submitted: now,
            completed: now,
        });
    };
    let mut scratch = Vec::new();
    loop {
        let mut h = [0u8; proto::REQUEST_LEN];
        match rd.read_exact(&mut h).await {
            Ok(_) => {}
            // The client went away (after its last request, or in the middle of
            // one): what is in flight completes, its replies are dropped.
            Err(_) => return Ok(()),
        }
        let r = proto::parse_request(&h)?;
        let cmd = match proto::check_request(&r, &limits) {
            Ok(Command::Disconnect) => return Ok(()),
            Ok(c) => c,
            Err(e) => {
                if r.kind == proto::CMD_WRITE {
                    // Skip the payload to stay in step, if it is not absurd.
                    if u64::from(r.len) > MAX_DRAIN {
                        return Err(format!("write of {} bytes refused", r.len));
                    }
                    drain(&mut rd, u64::from(r.len), &mut scratch).await?;
                }
                let cmd = if r.kind == proto::CMD_READ {
                    Command::Read
                } else {
                    Command::Flush
                };
                now_error(r.handle, cmd, e);
                continue;
            }
        };
        // Room in this connection's budget first: a client past it is not read
        // from until replies free some.
        let units = match cmd {
            Command::Read | Command::Write => u64::from(r.len).div_ceil(BUDGET_UNIT) as u32,
            _ => 0,
        };
        let c = count
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let permit = bytes
            .clone()
            .acquire_many_owned(units)
            .await
            .map_err(|e| e.to_string())?;
        let fua = r.flags & proto::CMD_FLAG_FUA != 0;
        let mut error = 0;
        match cmd {
            Command::Write => {
                let mut data = vec![0u8; r.len as usize];
                rd.read_exact(&mut data).await.map_err(io)?;
                error = store_error(sh.store.write_at(r.offset, &data));
            }
            Command::Trim => error = store_error(sh.store.zero(r.offset, u64::from(r.len), true)),
            Command::WriteZeroes { punch } => {
                error = store_error(sh.store.zero(r.offset, u64::from(r.len), punch));
            }
            _ => {}
        }
        let token = Token {
            handle: r.handle,
            cmd,
            offset: r.offset,
            len: r.len,
            fua,
            error,
            _count: Some(c),
            _budget: Some(permit),
        };
        if error != 0 {
            let now = sh.clock.now();
            let _ = tx.send(Done {
                token,
                submitted: now,
                completed: now,
            });
            continue;
        }
        let op = block_op(cmd, r.offset, r.len, fua);
        let msg = Msg::Submit(Submit {
            conn: id,
            op,
            token,
            reply: tx.clone(),
        });
        if sh.engine.send(msg).is_err() {
            return Err("the engine stopped".into());
        }
    }
}

fn store_error(r: Result<(), StoreError>) -> u32 {
    match r {
        Ok(()) => 0,
        Err(StoreError::NoSpace) => proto::ENOSPC,
        Err(StoreError::Io) => proto::EIO,
    }
}

async fn drain<R: AsyncRead + Unpin>(
    rd: &mut R,
    mut n: u64,
    scratch: &mut Vec<u8>,
) -> Result<(), Hard> {
    scratch.resize(64 * 1024, 0);
    while n > 0 {
        let k = n.min(scratch.len() as u64) as usize;
        rd.read_exact(&mut scratch[..k]).await.map_err(io)?;
        n -= k as u64;
    }
    Ok(())
}

async fn writer<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::UnboundedReceiver<Done<Token>>,
    sh: Arc<Shared>,
    structured: bool,
) {
    let mut w = BufWriter::with_capacity(256 * 1024, wr);
    let mut sent: Vec<(Command, u32, Ns, Ns)> = Vec::new();
    let mut buf = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut ok = true;
        while let Some(d) = next {
            if ok {
                match reply(&mut w, &d, &sh, structured, &mut buf).await {
                    Ok(Some(rec)) => sent.push(rec),
                    Ok(None) => {}
                    Err(_) => ok = false,
                }
            }
            next = rx.try_recv().ok();
        }
        if !ok || w.flush().await.is_err() {
            // The client is gone: the rest of its replies are dropped as they come.
            while rx.recv().await.is_some() {}
            return;
        }
        let now = Instant::now();
        let mut st = sh.stats.lock().unwrap_or_else(|e| e.into_inner());
        for (cmd, len, sub, done) in sent.drain(..) {
            let late = now.saturating_duration_since(sh.clock.instant(done));
            st.record(cmd, len, done.0 - sub.0, late.as_nanos() as u64);
        }
    }
    let _ = w.shutdown().await;
}

/// Send one reply; `Some((command, bytes, submitted, completed))` for the
/// statistics when the request succeeded.
async fn reply<W: AsyncWrite + Unpin>(
    w: &mut W,
    d: &Done<Token>,
    sh: &Shared,
    structured: bool,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(Command, u32, Ns, Ns)>> {
    let t = &d.token;
    let mut error = t.error;
    if error == 0 {
        match t.cmd {
            Command::Read => {
                buf.clear();
                buf.resize(t.len as usize, 0);
                error = store_error(sh.store.read_at(t.offset, buf));
            }
            Command::Flush => error = store_error(sh.store.flush()),
            _ if t.fua => error = store_error(sh.store.flush()),
            _ => {}
        }
    }
    if error != 0 {
        if structured {
            w.write_all(&proto::error_chunk(t.handle, error, "request failed"))
                .await?;
        } else {
            w.write_all(&proto::simple_reply(error, t.handle)).await?;
        }
        sh.stats.lock().unwrap_or_else(|e| e.into_inner()).errors += 1;
        return Ok(None);
    }
    if t.cmd == Command::Read {
        if structured {
            w.write_all(&proto::chunk_header(
                proto::REPLY_FLAG_DONE,
                proto::REPLY_TYPE_OFFSET_DATA,
                t.handle,
                t.len + 8,
            ))
            .await?;
            w.write_all(&t.offset.to_be_bytes()).await?;
        } else {
            w.write_all(&proto::simple_reply(0, t.handle)).await?;
        }
        w.write_all(buf).await?;
    } else {
        w.write_all(&proto::simple_reply(0, t.handle)).await?;
    }
    Ok(Some((t.cmd, t.len, d.submitted, d.completed)))
}

/// Counters of one kind of request.
pub struct Kind {
    /// Requests replied to.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Modelled latency (submission to modelled completion), ns.
    pub lat: Histogram<u64>,
}

impl Kind {
    fn new() -> Kind {
        Kind {
            ios: 0,
            bytes: 0,
            lat: hist(),
        }
    }
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// Statistics of the whole server.
pub struct Stats {
    /// Reads, writes (writes and write-zeroes), and others (flush, trim).
    pub kinds: [Kind; 3],
    /// Lateness of replies (sent − modelled completion), ns.
    pub late: Histogram<u64>,
    /// Lateness since the last status line.
    pub late_interval: Histogram<u64>,
    /// Error replies.
    pub errors: u64,
    /// Connections accepted.
    pub connections: u64,
}

/// Counters at the last status line.
pub struct Snapshot {
    ios: [u64; 3],
    bytes: [u64; 3],
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Stats {
        Stats {
            kinds: [Kind::new(), Kind::new(), Kind::new()],
            late: hist(),
            late_interval: hist(),
            errors: 0,
            connections: 0,
        }
    }

    fn record(&mut self, cmd: Command, len: u32, lat_ns: u64, late_ns: u64) {
        let k = match cmd {
            Command::Read => 0,
            Command::Write | Command::WriteZeroes { .. } => 1,
            _ => 2,
        };
        let kind = &mut self.kinds[k];
        kind.ios += 1;
        if k < 2 {
            kind.bytes += u64::from(len);
        }
        kind.lat.saturating_record(lat_ns.max(1));
        self.late.saturating_record(late_ns.max(1));
        self.late_interval.saturating_record(late_ns.max(1));
    }

    /// Start a new status interval.
    pub fn interval_reset(&mut self) -> Snapshot {
        self.late_interval.reset();
        Snapshot {
            ios: [0, 1, 2].map(|i| self.kinds[i].ios),
            bytes: [0, 1, 2].map(|i| self.kinds[i].bytes),
        }
    }

    /// The periodic status line: rates since `snap` over `dt` seconds.
    pub fn status_line(&self, dt: f64, qd: usize, snap: &Snapshot) -> String {
        let rate = |i: usize| (self.kinds[i].ios - snap.ios[i]) as f64 / dt;
        let bw = |i: usize| (self.kinds[i].bytes - snap.bytes[i]) as f64 / dt / 1048576.0;
        let h = &self.late_interval;
        let (p50, p99, max) = if h.is_empty() {
            (0.0, 0.0, 0.0)
        } else {
            (
                h.value_at_quantile(0.5) as f64 / 1e3,
                h.value_at_quantile(0.99) as f64 / 1e3,
                h.max() as f64 / 1e3,
            )
        };
        format!(
            "read {:.0} IOPS {:.1} MiB/s, write {:.0} IOPS {:.1} MiB/s, other {:.0}/s, qd {qd}, late p50 {p50:.0} us p99 {p99:.0} us max {max:.0} us",
            rate(0),
            bw(0),
            rate(1),
            bw(1),
            rate(2)
        )
    }

    /// The summary printed on exit.
    pub fn summary(
        &self,
        device: &str,
        sched: &str,
        end: &super::engine::EngineEnd,
        elapsed: Duration,
    ) -> String {
        use std::fmt::Write;
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "iosched serve: device {}, scheduler {}: {:.2} s, {} connections, {} device requests, {} error replies",
            device,
            sched,
            secs,
            self.connections,
            end.requests,
            self.errors
        );
        let us = |v: u64| v as f64 / 1e3;
        for (name, k) in ["read", "write", "flush/trim"].iter().zip(&self.kinds) {
            if k.ios == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "  {name}: IOPS={:.0}, BW={:.1}MiB/s ({} bytes in {} requests)",
                k.ios as f64 / secs,
                k.bytes as f64 / secs / 1048576.0,
                k.bytes,
                k.ios
            );
            let _ = writeln!(
                s,
                "    modelled lat (usec): min={:.1}, avg={:.1}, p50={:.1}, p99={:.1}, max={:.1}",
                us(k.lat.min()),
                k.lat.mean() / 1e3,
                us(k.lat.value_at_quantile(0.5)),
                us(k.lat.value_at_quantile(0.99)),
                us(k.lat.max())
            );
        }
        if !self.late.is_empty() {
            let h = &self.late;
            let _ = writeln!(
                s,
                "  lateness (usec, reply sent after its modelled instant): p50={:.1}, p90={:.1}, p99={:.1}, max={:.1}",
                us(h.value_at_quantile(0.5)),
                us(h.value_at_quantile(0.9)),
                us(h.value_at_quantile(0.99)),
                us(h.max())
            );
        }
        let d = &end.disk;
        let _ = writeln!(
            s,
            "  disk stats (read/write): ios={}/{}, merge={}/{}, sectors={}/{}, flushes={}",
            d.ios[0], d.ios[1], d.merges[0], d.merges[1], d.sectors[0], d.sectors[1], d.flush_ios
        );
        s
    }
}
