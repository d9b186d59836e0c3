//! The NBD wire format (the NetworkBlockDevice project's `doc/proto.md`): magic
//! numbers, flags, option and command codes, and the pure encoders and decoders of
//! its messages. Nothing here does I/O, so every parser can be fed any bytes.

/// `NBDMAGIC` (also the old `INIT_PASSWD`).
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: the newstyle handshake's magic and every option's.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of an option reply.
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// `NBD_REQUEST_MAGIC`.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// `NBD_SIMPLE_REPLY_MAGIC`.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// `NBD_STRUCTURED_REPLY_MAGIC`.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flag `NBD_FLAG_FIXED_NEWSTYLE`.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag `NBD_FLAG_NO_ZEROES`.
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag `NBD_FLAG_C_FIXED_NEWSTYLE`.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag `NBD_FLAG_C_NO_ZEROES`.
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Transmission flag `NBD_FLAG_HAS_FLAGS` (always set).
pub const TF_HAS_FLAGS: u16 = 1 << 0;
/// `NBD_FLAG_READ_ONLY`.
pub const TF_READ_ONLY: u16 = 1 << 1;
/// `NBD_FLAG_SEND_FLUSH`.
pub const TF_SEND_FLUSH: u16 = 1 << 2;
/// `NBD_FLAG_SEND_FUA`.
pub const TF_SEND_FUA: u16 = 1 << 3;
/// `NBD_FLAG_ROTATIONAL`.
pub const TF_ROTATIONAL: u16 = 1 << 4;
/// `NBD_FLAG_SEND_TRIM`.
pub const TF_SEND_TRIM: u16 = 1 << 5;
/// `NBD_FLAG_SEND_WRITE_ZEROES`.
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// `NBD_FLAG_SEND_DF`.
pub const TF_SEND_DF: u16 = 1 << 7;
/// `NBD_FLAG_CAN_MULTI_CONN`.
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;

/// `NBD_OPT_EXPORT_NAME`.
pub const OPT_EXPORT_NAME: u32 = 1;
/// `NBD_OPT_ABORT`.
pub const OPT_ABORT: u32 = 2;
/// `NBD_OPT_LIST`.
pub const OPT_LIST: u32 = 3;
/// `NBD_OPT_STARTTLS`.
pub const OPT_STARTTLS: u32 = 5;
/// `NBD_OPT_INFO`.
pub const OPT_INFO: u32 = 6;
/// `NBD_OPT_GO`.
pub const OPT_GO: u32 = 7;
/// `NBD_OPT_STRUCTURED_REPLY`.
pub const OPT_STRUCTURED_REPLY: u32 = 8;

/// `NBD_REP_ACK`.
pub const REP_ACK: u32 = 1;
/// `NBD_REP_SERVER`.
pub const REP_SERVER: u32 = 2;
/// `NBD_REP_INFO`.
pub const REP_INFO: u32 = 3;
/// `NBD_REP_ERR_UNSUP`.
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
/// `NBD_REP_ERR_POLICY`.
pub const REP_ERR_POLICY: u32 = (1 << 31) + 2;
/// `NBD_REP_ERR_INVALID`.
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;
/// `NBD_REP_ERR_UNKNOWN`: no such export.
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;

/// `NBD_INFO_EXPORT`.
pub const INFO_EXPORT: u16 = 0;
/// `NBD_INFO_NAME`.
pub const INFO_NAME: u16 = 1;
/// `NBD_INFO_DESCRIPTION`.
pub const INFO_DESCRIPTION: u16 = 2;
/// `NBD_INFO_BLOCK_SIZE`.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// `NBD_CMD_READ`.
pub const CMD_READ: u16 = 0;
/// `NBD_CMD_WRITE`.
pub const CMD_WRITE: u16 = 1;
/// `NBD_CMD_DISC`.
pub const CMD_DISC: u16 = 2;
/// `NBD_CMD_FLUSH`.
pub const CMD_FLUSH: u16 = 3;
/// `NBD_CMD_TRIM`.
pub const CMD_TRIM: u16 = 4;
/// `NBD_CMD_WRITE_ZEROES`.
pub const CMD_WRITE_ZEROES: u16 = 6;

/// `NBD_CMD_FLAG_FUA`.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
/// `NBD_CMD_FLAG_NO_HOLE`.
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// `NBD_CMD_FLAG_DF`.
pub const CMD_FLAG_DF: u16 = 1 << 2;

/// `NBD_REPLY_FLAG_DONE`.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
/// `NBD_REPLY_TYPE_OFFSET_DATA`.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// `NBD_REPLY_TYPE_ERROR`.
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

/// `EPERM`.
pub const EPERM: u32 = 1;
/// `EIO`.
pub const EIO: u32 = 5;
/// `EINVAL`.
pub const EINVAL: u32 = 22;
/// `ENOSPC`.
pub const ENOSPC: u32 = 28;

/// Size of a request header.
pub const REQUEST_LEN: usize = 28;
/// The longest option payload read (longer ones end the session: a name is at
/// most 4096 bytes, and no option this server knows carries more).
pub const MAX_OPTION_LEN: u32 = 64 * 1024;

/// The first bytes the server sends: `NBDMAGIC`, `IHAVEOPT`, handshake flags.
pub fn greeting() -> [u8; 18] {
    let mut b = [0u8; 18];
    b[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    b[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    b[16..18].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    b
}

/// Why the client's flags end the session (unknown bits), if they do.
pub fn check_client_flags(flags: u32) -> Result<(), String> {
    let known = FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES;
    if flags & !known != 0 {
        return Err(format!("unknown client flags {flags:#x}"));
    }
    Ok(())
}

/// An option header: magic, option, data length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionHeader {
    /// The option code.
    pub option: u32,
    /// Length of its data.
    pub len: u32,
}

/// Decode an option header; a wrong magic ends the session.
pub fn parse_option_header(b: &[u8; 16]) -> Result<OptionHeader, String> {
    let magic = u64::from_be_bytes(b[0..8].try_into().expect("8 bytes"));
    if magic != IHAVEOPT {
        return Err(format!("option magic {magic:#018x}, expected IHAVEOPT"));
    }
    Ok(OptionHeader {
        option: u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
        len: u32::from_be_bytes(b[12..16].try_into().expect("4 bytes")),
    })
}

/// An option reply: header and data.
pub fn option_reply(option: u32, reply: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + data.len());
    v.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    v.extend_from_slice(&option.to_be_bytes());
    v.extend_from_slice(&reply.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

/// The data of `NBD_OPT_INFO` / `NBD_OPT_GO`: the export name and the
/// information types asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InfoRequest {
    /// Export name.
    pub name: String,
    /// `NBD_INFO_*` types requested.
    pub infos: Vec<u16>,
}

/// Decode the data of `NBD_OPT_INFO` / `NBD_OPT_GO` (32-bit name length, name,
/// 16-bit count, that many 16-bit info types, nothing after).
pub fn parse_info_request(d: &[u8]) -> Result<InfoRequest, String> {
    let take = |at: usize, n: usize| d.get(at..at + n).ok_or("option data too short");
    let nlen = u32::from_be_bytes(take(0, 4)?.try_into().expect("4 bytes")) as usize;
    if nlen > 4096 {
        return Err(format!("export name of {nlen} bytes (at most 4096)"));
    }
    let name =
        std::str::from_utf8(take(4, nlen)?).map_err(|_| "export name is not UTF-8".to_string())?;
    if name.contains('\0') {
        return Err("export name contains NUL".into());
    }
    let at = 4 + nlen;
    let n = u16::from_be_bytes(take(at, 2)?.try_into().expect("2 bytes")) as usize;
    let list = take(at + 2, 2 * n)?;
    if d.len() != at + 2 + 2 * n {
        return Err("trailing bytes after the information requests".into());
    }
    Ok(InfoRequest {
        name: name.to_string(),
        infos: list
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
    })
}

/// `NBD_REP_INFO` data of `NBD_INFO_EXPORT`: size and transmission flags.
pub fn info_export(size: u64, flags: u16) -> Vec<u8> {
    let mut v = Vec::with_capacity(12);
    v.extend_from_slice(&INFO_EXPORT.to_be_bytes());
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(&flags.to_be_bytes());
    v
}

/// `NBD_REP_INFO` data of `NBD_INFO_BLOCK_SIZE`.
pub fn info_block_size(min: u32, preferred: u32, max: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(14);
    v.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    v.extend_from_slice(&min.to_be_bytes());
    v.extend_from_slice(&preferred.to_be_bytes());
    v.extend_from_slice(&max.to_be_bytes());
    v
}

/// `NBD_REP_INFO` data of a string information (`NBD_INFO_NAME`,
/// `NBD_INFO_DESCRIPTION`).
pub fn info_string(kind: u16, s: &str) -> Vec<u8> {
    let mut v = kind.to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, flags, and 124 zero bytes unless
/// the client asked for none.
pub fn export_name_reply(size: u64, flags: u16, no_zeroes: bool) -> Vec<u8> {
    let mut v = Vec::with_capacity(134);
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(&flags.to_be_bytes());
    if !no_zeroes {
        v.extend_from_slice(&[0u8; 124]);
    }
    v
}

/// A transmission request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags.
    pub flags: u16,
    /// Command type.
    pub kind: u16,
    /// The client's handle, echoed in the reply.
    pub handle: u64,
    /// Byte offset.
    pub offset: u64,
    /// Byte length (of the payload that follows for a write).
    pub len: u32,
}

/// Decode a request header; a wrong magic ends the session (the stream cannot be
/// resynchronised).
pub fn parse_request(b: &[u8; REQUEST_LEN]) -> Result<Request, String> {
    let magic = u32::from_be_bytes(b[0..4].try_into().expect("4 bytes"));
    if magic != REQUEST_MAGIC {
        return Err(format!(
            "request magic {magic:#010x}, expected {REQUEST_MAGIC:#010x}"
        ));
    }
    Ok(Request {
        flags: u16::from_be_bytes([b[4], b[5]]),
        kind: u16::from_be_bytes([b[6], b[7]]),
        handle: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
        offset: u64::from_be_bytes(b[16..24].try_into().expect("8 bytes")),
        len: u32::from_be_bytes(b[24..28].try_into().expect("4 bytes")),
    })
}

/// Encode a request header (for tests).
#[cfg(test)]
pub fn encode_request(r: &Request) -> [u8; REQUEST_LEN] {
    let mut b = [0u8; REQUEST_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&r.flags.to_be_bytes());
    b[6..8].copy_from_slice(&r.kind.to_be_bytes());
    b[8..16].copy_from_slice(&r.handle.to_be_bytes());
    b[16..24].copy_from_slice(&r.offset.to_be_bytes());
    b[24..28].copy_from_slice(&r.len.to_be_bytes());
    b
}

/// A simple reply header.
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// A structured reply chunk header.
pub fn chunk_header(flags: u16, kind: u16, handle: u64, len: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b[16..20].copy_from_slice(&len.to_be_bytes());
    b
}

/// A final `NBD_REPLY_TYPE_ERROR` chunk with a message.
pub fn error_chunk(handle: u64, error: u32, msg: &str) -> Vec<u8> {
    let msg = &msg.as_bytes()[..msg.len().min(1024)];
    let mut v = chunk_header(
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        handle,
        6 + msg.len() as u32,
    )
    .to_vec();
    v.extend_from_slice(&error.to_be_bytes());
    v.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

/// What a request asks for, once checked against the export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write the payload at `offset`.
    Write,
    /// Flush the volatile cache.
    Flush,
    /// Discard the range.
    Trim,
    /// Write zeroes to the range (`punch`: the range may become a hole).
    WriteZeroes {
        /// `NBD_CMD_FLAG_NO_HOLE` was clear.
        punch: bool,
    },
    /// End the session.
    Disconnect,
}

/// What the export allows, for [`check_request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportLimits {
    /// Export size in bytes.
    pub size: u64,
    /// Advertised transmission flags.
    pub flags: u16,
    /// Minimum block size (offsets and lengths must be multiples).
    pub min_block: u32,
    /// Maximum block size (longest read, write, trim or write-zeroes payload).
    pub max_block: u32,
    /// Structured replies were negotiated.
    pub structured: bool,
}

/// Check a request against the export: the command, or the NBD error to reply
/// with (`EINVAL` for an unknown command or flag, a flag not valid for the
/// command, a misaligned or oversize request or a range past the end on a read
/// or trim; `ENOSPC` for a write past the end; `EPERM` for a write to a read-only
/// export).
pub fn check_request(r: &Request, x: &ExportLimits) -> Result<Command, u32> {
    let known = CMD_FLAG_FUA | CMD_FLAG_NO_HOLE | CMD_FLAG_DF;
    if r.flags & !known != 0 {
        return Err(EINVAL);
    }
    if r.flags & CMD_FLAG_FUA != 0 && x.flags & TF_SEND_FUA == 0 {
        return Err(EINVAL);
    }
    if r.flags & CMD_FLAG_NO_HOLE != 0 && r.kind != CMD_WRITE_ZEROES {
        return Err(EINVAL);
    }
    if r.flags & CMD_FLAG_DF != 0 && (r.kind != CMD_READ || !x.structured) {
        return Err(EINVAL);
    }
    let cmd = match r.kind {
        CMD_READ => Command::Read,
        CMD_WRITE => Command::Write,
        CMD_DISC => return Ok(Command::Disconnect),
        CMD_FLUSH if x.flags & TF_SEND_FLUSH != 0 => {
            if r.offset != 0 || r.len != 0 {
                return Err(EINVAL);
            }
            return Ok(Command::Flush);
        }
        CMD_TRIM if x.flags & TF_SEND_TRIM != 0 => Command::Trim,
        CMD_WRITE_ZEROES if x.flags & TF_SEND_WRITE_ZEROES != 0 => Command::WriteZeroes {
            punch: r.flags & CMD_FLAG_NO_HOLE == 0,
        },
        _ => return Err(EINVAL),
    };
    let writes = !matches!(cmd, Command::Read);
    if writes && x.flags & TF_READ_ONLY != 0 {
        return Err(EPERM);
    }
    // The maximum block size bounds payloads (reads and writes); trims and
    // write-zeroes carry none and may be as long as the export.
    let payload = matches!(cmd, Command::Read | Command::Write);
    if r.len == 0 || (payload && r.len > x.max_block) {
        return Err(EINVAL);
    }
    let m = u64::from(x.min_block.max(1));
    if !r.offset.is_multiple_of(m) || !u64::from(r.len).is_multiple_of(m) {
        return Err(EINVAL);
    }
    match r.offset.checked_add(u64::from(r.len)) {
        Some(end) if end <= x.size => Ok(cmd),
        _ if matches!(cmd, Command::Write | Command::WriteZeroes { .. }) => Err(ENOSPC),
        _ => Err(EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ExportLimits {
        ExportLimits {
            size: 1 << 20,
            flags: TF_HAS_FLAGS | TF_SEND_FLUSH | TF_SEND_FUA | TF_SEND_TRIM | TF_SEND_WRITE_ZEROES,
            min_block: 512,
            max_block: 1 << 16,
            structured: false,
        }
    }

    fn req(kind: u16, flags: u16, offset: u64, len: u32) -> Request {
        Request {
            flags,
            kind,
            handle: 42,
            offset,
            len,
        }
    }

    #[test]
    fn request_round_trips() {
        let r = req(CMD_WRITE, CMD_FLAG_FUA, 4096, 512);
        assert_eq!(parse_request(&encode_request(&r)), Ok(r));
        let mut b = encode_request(&r);
        b[0] ^= 1;
        assert!(parse_request(&b).is_err());
    }

    #[test]
    fn requests_are_checked_as_the_protocol_says() {
        let x = limits();
        assert_eq!(
            check_request(&req(CMD_READ, 0, 0, 4096), &x),
            Ok(Command::Read)
        );
        // Past the end: EINVAL for a read, ENOSPC for a write.
        assert_eq!(
            check_request(&req(CMD_READ, 0, (1 << 20) - 512, 1024), &x),
            Err(EINVAL)
        );
        assert_eq!(
            check_request(&req(CMD_WRITE, 0, 1 << 20, 512), &x),
            Err(ENOSPC)
        );
        // Offset + length overflowing u64 is past the end, not a wrap.
        assert_eq!(
            check_request(&req(CMD_READ, 0, u64::MAX - 511, 512), &x),
            Err(EINVAL)
        );
        // Misaligned, empty, oversize.
        assert_eq!(check_request(&req(CMD_READ, 0, 100, 512), &x), Err(EINVAL));
        assert_eq!(check_request(&req(CMD_READ, 0, 0, 100), &x), Err(EINVAL));
        assert_eq!(check_request(&req(CMD_READ, 0, 0, 0), &x), Err(EINVAL));
        assert_eq!(
            check_request(&req(CMD_READ, 0, 0, (1 << 16) + 512), &x),
            Err(EINVAL)
        );
        assert_eq!(
            check_request(&req(CMD_WRITE, 0, 0, (1 << 16) + 512), &x),
            Err(EINVAL)
        );
        assert_eq!(
            check_request(&req(CMD_TRIM, 0, 0, 1 << 20), &x),
            Ok(Command::Trim)
        );
        // Unknown command and flag; flags not valid for the command.
        assert_eq!(check_request(&req(99, 0, 0, 512), &x), Err(EINVAL));
        assert_eq!(
            check_request(&req(CMD_READ, 1 << 9, 0, 512), &x),
            Err(EINVAL)
        );
        assert_eq!(
            check_request(&req(CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 512), &x),
            Err(EINVAL)
        );
        assert_eq!(
            check_request(&req(CMD_READ, CMD_FLAG_DF, 0, 512), &x),
            Err(EINVAL)
        );
        // Flush: offset and length must be zero.
        assert_eq!(
            check_request(&req(CMD_FLUSH, 0, 0, 0), &x),
            Ok(Command::Flush)
        );
        assert_eq!(check_request(&req(CMD_FLUSH, 0, 0, 512), &x), Err(EINVAL));
        assert_eq!(
            check_request(&req(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 0, 512), &x),
            Ok(Command::WriteZeroes { punch: false })
        );
        // Commands the export did not advertise.
        let bare = ExportLimits {
            flags: TF_HAS_FLAGS | TF_READ_ONLY,
            ..x
        };
        assert_eq!(check_request(&req(CMD_FLUSH, 0, 0, 0), &bare), Err(EINVAL));
        assert_eq!(
            check_request(&req(CMD_WRITE, CMD_FLAG_FUA, 0, 512), &bare),
            Err(EINVAL)
        );
        assert_eq!(check_request(&req(CMD_WRITE, 0, 0, 512), &bare), Err(EPERM));
    }

    #[test]
    fn info_requests_parse_strictly() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        assert_eq!(
            parse_info_request(&d),
            Ok(InfoRequest {
                name: "abc".into(),
                infos: vec![INFO_BLOCK_SIZE, INFO_NAME]
            })
        );
        assert!(parse_info_request(&d[..d.len() - 1]).is_err());
        let mut long = d.clone();
        long.push(0);
        assert!(parse_info_request(&long).is_err());
        // A name length past the data.
        let mut bad = u32::MAX.to_be_bytes().to_vec();
        bad.extend_from_slice(&[0; 4]);
        assert!(parse_info_request(&bad).is_err());
    }

    proptest::proptest! {
        /// Any bytes: the parsers answer, never panic.
        #[test]
        fn parsers_never_panic(d in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = parse_info_request(&d);
            let mut h = [0u8; REQUEST_LEN];
            for (i, b) in d.iter().take(REQUEST_LEN).enumerate() {
                h[i] = *b;
            }
            if let Ok(r) = parse_request(&h) {
                let _ = check_request(&r, &limits());
            }
            let mut o = [0u8; 16];
            for (i, b) in d.iter().take(16).enumerate() {
                o[i] = *b;
            }
            let _ = parse_option_header(&o);
        }
        /// A request accepted for I/O lies inside the export and is aligned.
        #[test]
        fn accepted_requests_are_in_bounds(kind in 0u16..8, flags in 0u16..8, offset in 0u64..(2 << 20), len in 0u32..(1 << 17)) {
            let x = limits();
            if let Ok(c) = check_request(&req(kind, flags, offset, len), &x) {
                if !matches!(c, Command::Flush | Command::Disconnect) {
                    proptest::prop_assert!(offset + len as u64 <= x.size);
                    proptest::prop_assert!(len > 0);
                    if matches!(c, Command::Read | Command::Write) {
                        proptest::prop_assert!(len <= x.max_block);
                    }
                    proptest::prop_assert_eq!(offset % 512, 0);
                    proptest::prop_assert_eq!(len % 512, 0);
                }
            }
        }
    }
}
