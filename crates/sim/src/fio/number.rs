//! Number parsing with fio's size and time suffixes.
//!
//! fio's own parser (`str_to_decimal` in parse.c) is very lenient: it reads
//! the leading digits with `strtoll` and then guesses a multiplier from
//! whatever follows, treating anything it does not recognise as "×1". That
//! means `bs=4q` is 4 bytes, `size=1.5g` is 1 byte and `runtime=10sec` is
//! 10 microseconds. We accept exactly the spellings that fio gives a meaning
//! to and reject the rest, so a value is never silently misread.

/// A parsed byte quantity: either an absolute number or a percentage
/// (fio allows `size=50%`, meaning a share of the file or device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByteValue {
    Bytes(u64),
    Percent(u64),
}

fn is_hex(s: &str) -> bool {
    s.contains("0x") || s.contains("0X")
}

/// Parses a hexadecimal `0x...` literal. fio switches `strtoll` to base 16
/// whenever the string contains "0x" and ignores any suffix; we require the
/// whole value to be the literal.
fn parse_hex(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .ok_or_else(|| format!("malformed number '{s}'"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("malformed number '{s}'"));
    }
    u64::from_str_radix(digits, 16).map_err(|_| format!("number '{s}' is too large"))
}

/// Splits `s` into its leading decimal digits (parsed) and the rest.
fn split_decimal(s: &str) -> Result<(u64, &str), String> {
    if s.starts_with('(') {
        return Err(format!("arithmetic expressions are not supported: '{s}'"));
    }
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    if end == 0 {
        return Err(format!("malformed number '{s}'"));
    }
    let n: u64 = s[..end]
        .parse()
        .map_err(|_| format!("number '{s}' is too large"))?;
    let rest = &s[end..];
    if rest.starts_with('.') {
        // fio would read "1.5g" as 1 byte; refuse instead of guessing.
        return Err(format!("fractional values are not supported: '{s}'"));
    }
    Ok((n, rest))
}

/// Parses a byte quantity the way fio's `check_str_bytes` does, honouring
/// `kb_base`.
///
/// With `kb_base=1024` (fio's default "compatibility mode") the SI-looking
/// prefixes `k`, `kb`, `m`, `mb`, ... are powers of 1024 and the IEC
/// prefixes `kib`, `mib`, ... are powers of 1000. With `kb_base=1000` both
/// mean what they say. Suffixes are case-insensitive; a trailing `b` alone
/// means bytes.
pub(crate) fn parse_bytes(s: &str, kb_base: u32) -> Result<ByteValue, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty value".to_string());
    }
    if is_hex(s) {
        return parse_hex(s).map(ByteValue::Bytes);
    }
    let (n, rest) = split_decimal(s)?;
    let suffix = rest.to_ascii_lowercase();
    // The base used for the IEC spellings is the opposite of kb_base.
    let base = u64::from(kb_base);
    let iec = if kb_base == 1000 { 1024 } else { 1000 };
    let (mult_base, pow) = match suffix.as_str() {
        "" | "b" => (1, 0),
        "%" => return Ok(ByteValue::Percent(n)),
        "k" | "kb" => (base, 1),
        "m" | "mb" => (base, 2),
        "g" | "gb" => (base, 3),
        "t" | "tb" => (base, 4),
        "p" | "pb" => (base, 5),
        "kib" => (iec, 1),
        "mib" => (iec, 2),
        "gib" => (iec, 3),
        "tib" => (iec, 4),
        "pib" => (iec, 5),
        "z" => return Err(format!("zone-relative values ('{s}') are not modeled yet")),
        _ => return Err(format!("malformed number '{s}'")),
    };
    let mult = mult_base.checked_pow(pow).unwrap_or(u64::MAX);
    n.checked_mul(mult)
        .map(ByteValue::Bytes)
        .ok_or_else(|| format!("number '{s}' is too large"))
}

/// Parses an absolute byte quantity (percentages rejected).
pub(crate) fn parse_abs_bytes(s: &str, kb_base: u32) -> Result<u64, String> {
    match parse_bytes(s, kb_base)? {
        ByteValue::Bytes(n) => Ok(n),
        ByteValue::Percent(_) => Err(format!("a percentage ('{}') is not allowed here", s.trim())),
    }
}

/// Parses an integer option value. fio runs integer options through the
/// same byte parser, so `iodepth=1k` is 1024; we keep that, then range-check.
pub(crate) fn parse_int(s: &str, kb_base: u32, min: u64, max: u64) -> Result<u64, String> {
    let v = parse_abs_bytes(s, kb_base)?;
    if v < min {
        return Err(format!("value {v} is below the minimum of {min}"));
    }
    if v > max {
        return Err(format!("value {v} is above the maximum of {max}"));
    }
    Ok(v)
}

/// Parses a time value for an option whose unit defaults to seconds
/// (`runtime`, `ramp_time`), returning nanoseconds.
///
/// Accepted suffixes (case-insensitive), as in fio's `get_mult_time`:
/// `us`/`usec`, `ms`/`msec`, `s`, `m` (minutes), `h`, `d`; none = seconds.
pub(crate) fn parse_time_seconds_default(s: &str) -> Result<u64, String> {
    parse_time_default_unit(s, 1_000_000)
}

/// A time whose bare numbers are in microseconds (fio's `thinktime`,
/// `thinktime_spin`), in nanoseconds.
pub(crate) fn parse_time_us_default(s: &str) -> Result<u64, String> {
    parse_time_default_unit(s, 1)
}

/// A time with fio's suffixes, bare numbers (and hex) counting `bare_us`
/// microseconds each; in nanoseconds.
fn parse_time_default_unit(s: &str, bare_us: u64) -> Result<u64, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty value".to_string());
    }
    // fio keeps times in microseconds; we convert to ns at the end.
    let (n, mult_us) = if is_hex(s) {
        (parse_hex(s)?, bare_us)
    } else {
        let (n, rest) = split_decimal(s)?;
        let mult = match rest.to_ascii_lowercase().as_str() {
            "" => bare_us,
            "s" => 1_000_000,
            "us" | "usec" => 1,
            "ms" | "msec" => 1_000,
            "m" => 60 * 1_000_000,
            "h" => 60 * 60 * 1_000_000,
            "d" => 24 * 60 * 60 * 1_000_000,
            _ => {
                return Err(format!(
                    "malformed time '{s}' (suffixes: us, ms, s, m, h, d)"
                ))
            }
        };
        (n, mult)
    };
    n.checked_mul(mult_us)
        .and_then(|us| us.checked_mul(1_000))
        .filter(|&ns| ns <= MAX_TIME_NS)
        .ok_or_else(|| {
            format!("time '{s}' is too large: at most {MAX_TIME_NS} ns (about 146 years, so that simulated instants never overflow)")
        })
}

/// The longest time an option may give: 2^62 ns leaves every sum of a few such
/// times (start delay, ramp, runtime, deadlines) inside 64-bit nanoseconds.
pub(crate) const MAX_TIME_NS: u64 = 1 << 62;

/// Parses a strict decimal or hex unsigned integer without suffixes (used
/// for flag values such as `thread=1`, which fio reads with `sscanf("%u")`).
pub(crate) fn parse_plain_uint(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if is_hex(s) {
        return parse_hex(s);
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("expected an integer, got '{s}'"));
    }
    s.parse().map_err(|_| format!("number '{s}' is too large"))
}

/// Parses a boolean option: fio's bool options take 0 or 1.
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(format!("expected 0 or 1, got '{other}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str, kb: u32) -> u64 {
        parse_abs_bytes(s, kb).unwrap()
    }

    #[test]
    fn plain_and_byte_suffix() {
        assert_eq!(b("512", 1024), 512);
        assert_eq!(b("512B", 1024), 512);
        assert_eq!(b("512b", 1000), 512);
        assert_eq!(b(" 42 ", 1024), 42);
    }

    #[test]
    fn kb_base_1024_compat_mode() {
        assert_eq!(b("4k", 1024), 4096);
        assert_eq!(b("4K", 1024), 4096);
        assert_eq!(b("4KB", 1024), 4096);
        assert_eq!(b("4kib", 1024), 4000);
        assert_eq!(b("4KiB", 1024), 4000);
        assert_eq!(b("1m", 1024), 1 << 20);
        assert_eq!(b("1MiB", 1024), 1_000_000);
        assert_eq!(b("110g", 1024), 110 * (1u64 << 30));
        assert_eq!(b("1t", 1024), 1u64 << 40);
        assert_eq!(b("1p", 1024), 1u64 << 50);
        assert_eq!(b("1PiB", 1024), 1_000_000_000_000_000);
    }

    #[test]
    fn kb_base_1000() {
        assert_eq!(b("4k", 1000), 4000);
        assert_eq!(b("4kb", 1000), 4000);
        assert_eq!(b("4kib", 1000), 4096);
        assert_eq!(b("1GiB", 1000), 1 << 30);
        assert_eq!(b("1g", 1000), 1_000_000_000);
    }

    #[test]
    fn hex() {
        assert_eq!(b("0x10", 1024), 16);
        assert_eq!(b("0X1000", 1024), 4096);
        assert!(parse_bytes("0x", 1024).is_err());
        assert!(parse_bytes("0x10k", 1024).is_err());
    }

    #[test]
    fn percent() {
        assert_eq!(parse_bytes("50%", 1024).unwrap(), ByteValue::Percent(50));
        assert!(parse_abs_bytes("50%", 1024).is_err());
    }

    #[test]
    fn malformed() {
        for s in [
            "4q", "", "k", "-4k", "1.5g", "4 k", "4kk", "(1+2)", "4z", "4kbx",
        ] {
            assert!(parse_bytes(s, 1024).is_err(), "{s:?} should fail");
        }
        assert!(parse_bytes("99999999999999999999", 1024).is_err());
        assert!(parse_bytes("100000p", 1024).is_err());
    }

    #[test]
    fn ints() {
        assert_eq!(parse_int("1k", 1024, 1, u64::from(u32::MAX)).unwrap(), 1024);
        assert!(parse_int("0", 1024, 1, 10).is_err());
        assert!(parse_int("11", 1024, 1, 10).is_err());
    }

    #[test]
    fn times() {
        let s = 1_000_000_000u64;
        assert_eq!(parse_time_seconds_default("300").unwrap(), 300 * s);
        assert_eq!(parse_time_seconds_default("10s").unwrap(), 10 * s);
        assert_eq!(parse_time_seconds_default("10S").unwrap(), 10 * s);
        assert_eq!(parse_time_seconds_default("5m").unwrap(), 300 * s);
        assert_eq!(parse_time_seconds_default("2h").unwrap(), 7200 * s);
        assert_eq!(parse_time_seconds_default("1d").unwrap(), 86400 * s);
        assert_eq!(parse_time_seconds_default("250ms").unwrap(), 250_000_000);
        assert_eq!(parse_time_seconds_default("250msec").unwrap(), 250_000_000);
        assert_eq!(parse_time_seconds_default("7us").unwrap(), 7_000);
        assert_eq!(parse_time_seconds_default("7usec").unwrap(), 7_000);
        assert_eq!(parse_time_seconds_default("0x2").unwrap(), 2 * s);
        for bad in ["10sec", "10ns", "1.5", "", "s", "10 s", "-1"] {
            assert!(parse_time_seconds_default(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bools_and_plain() {
        assert!(parse_bool("1").unwrap());
        assert!(!parse_bool("0").unwrap());
        assert!(parse_bool("2").is_err());
        assert!(parse_bool("yes").is_err());
        assert_eq!(parse_plain_uint("7").unwrap(), 7);
        assert!(parse_plain_uint("7k").is_err());
    }
}
