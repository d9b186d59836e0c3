//! Impossible profiles are refused with an error naming the field (and line).

use devices::{parse_profile, ProfileError};

const HDD: &str = include_str!("../profiles/hdd-7200.toml");
const SSD: &str = include_str!("../profiles/ssd-sata.toml");

fn with(base: &str, key: &str, value: &str) -> String {
    base.lines()
        .map(|l| {
            if l.split('=').next().map(str::trim) == Some(key) {
                format!("{key} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn parse(text: &str) -> Result<devices::Profile, ProfileError> {
    parse_profile("p.toml", text, &|n| devices::profile(n).ok())
}

#[track_caller]
fn bad(text: &str, field: &str, needle: &str) {
    let e = parse(text).expect_err("must be refused");
    let s = e.to_string();
    assert_eq!(e.field.as_deref(), Some(field), "{s}");
    assert!(e.line.is_some(), "{s}");
    assert!(
        s.contains(&format!("field '{field}'")) && s.contains(needle),
        "{s}"
    );
}

#[test]
fn builtins_parse() {
    assert!(parse(HDD).is_ok());
    assert!(parse(SSD).is_ok());
}

#[test]
fn zero_rpm() {
    bad(&with(HDD, "rpm", "0"), "rpm", "out of range");
}

#[test]
fn negative_or_zero_latencies() {
    bad(
        &with(HDD, "average_seek_ms", "-3"),
        "average_seek_ms",
        "greater than zero",
    );
    bad(
        &with(HDD, "track_to_track_ms", "0"),
        "track_to_track_ms",
        "greater than zero",
    );
    bad(&with(SSD, "read_us", "0"), "read_us", "greater than zero");
    bad(
        &with(SSD, "write_overhead_us", "-1"),
        "write_overhead_us",
        "negative",
    );
}

#[test]
fn geometry_must_cover_capacity() {
    bad(
        &with(HDD, "cylinders", "1000"),
        "cylinders",
        "less than capacity_bytes",
    );
}

#[test]
fn queue_depth_zero() {
    bad(
        &with(HDD, "queue_depth", "0"),
        "queue_depth",
        "out of range",
    );
    bad(
        &with(SSD, "queue_depth", "0"),
        "queue_depth",
        "out of range",
    );
}

#[test]
fn seek_figures_that_no_curve_fits() {
    bad(
        &with(HDD, "average_seek_ms", "30"),
        "average_seek_ms",
        "track_to_track_ms < average_seek_ms",
    );
}

#[test]
fn unknown_missing_and_mistyped_fields() {
    bad(&format!("{HDD}\nspeed = 3\n"), "speed", "unknown field");
    bad(&with(HDD, "rpm", "\"fast\""), "rpm", "expected an integer");
    bad(
        &with(SSD, "interface", "\"scsi\""),
        "interface",
        "expected \"sata\" or \"nvme\"",
    );
    let e = parse(&HDD.replace("rpm = 7200", "")).unwrap_err();
    assert!(e.to_string().contains("field 'rpm': missing"), "{e}");
}

#[test]
fn syntax_errors_carry_file_and_line() {
    let e = parse("name = \"x\"\nabout = \"y\"\nmodel \"hdd\"\n").unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().starts_with("p.toml:3: syntax error"), "{e}");
}

#[test]
fn raid_member_must_exist() {
    let r = include_str!("../profiles/raid0-2x-mg04aca400n.toml");
    bad(
        &with(r, "member", "\"floppy\""),
        "member",
        "unknown member profile",
    );
}

/// `devices::profile` finds a built-in profile by its file name, so each
/// built-in file must hold the profile it is named after.
#[test]
fn every_builtin_file_is_named_after_its_profile() {
    for (file, _) in devices::BUILTIN_FILES {
        let name = file.strip_suffix(".toml").expect("a .toml file");
        let p = devices::profile(name).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(p.name, name, "{file}");
    }
    let names: Vec<String> = devices::profiles().into_iter().map(|p| p.name).collect();
    assert_eq!(names.len(), devices::BUILTIN_FILES.len() + 2, "{names:?}");
    assert!(devices::profile("no-such-disk").is_err());
}

const SMR: &str = include_str!("../profiles/mg04-smr-hm.toml");
const ZNS: &str = include_str!("../profiles/zns-zn540.toml");

/// Line of `key` (in the `[zoned]` table) in `text`.
fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.split('=').next().map(str::trim) == Some(key))
        .expect("key present")
        + 1
}

#[test]
fn zoned_builtins_parse_with_their_geometry() {
    let p = parse(SMR).unwrap();
    let g = p.zoned.expect("zoned");
    assert_eq!(
        (g.zone_sectors, g.nr_conv_zones, g.max_open, g.max_active),
        (524_288, 149, 128, 0)
    );
    assert_eq!(g.protocol, devices::zoned::ZoneProtocol::Zbc);
    let g = parse(ZNS).unwrap().zoned.expect("zoned");
    assert_eq!(
        (g.zone_capacity, g.max_open, g.max_active),
        (1077 * 2048, 14, 14)
    );
    assert_eq!(g.protocol, devices::zoned::ZoneProtocol::Zns);
    assert!(parse(HDD).unwrap().zoned.is_none());
}

#[test]
fn zoned_table_checked_field_by_field() {
    let at = |t: &str, k: &str| format!("p.toml:{}: field 'zoned.{k}'", line_of(t, k));
    let e = parse(&with(SMR, "zone_size_mib", "300"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(SMR, "zone_size_mib")) && e.contains("not a power of two"),
        "{e}"
    );
    let e = parse(&with(SMR, "nr_conv_zones", "20000"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(SMR, "nr_conv_zones")) && e.contains("out of range: expected 0 to 14904"),
        "{e}"
    );
    let e = parse(&with(SMR, "max_active_zones", "10"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(SMR, "max_active_zones"))
            && e.contains("ZBC/ZAC define no active-zone limit"),
        "{e}"
    );
    let e = parse(&with(SMR, "zone_capacity_mib", "128"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(SMR, "zone_capacity_mib")) && e.contains("must equal zone_size_mib"),
        "{e}"
    );
    let e = parse(&with(ZNS, "zone_capacity_mib", "4096"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(ZNS, "zone_capacity_mib")) && e.contains("expected 1 to 2048"),
        "{e}"
    );
    let e = parse(&with(ZNS, "max_active_zones", "8"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(ZNS, "max_active_zones")) && e.contains("below max_open_zones = 14"),
        "{e}"
    );
    let e = parse(&with(ZNS, "max_open_zones", "-1"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&at(ZNS, "max_open_zones")) && e.contains("out of range"),
        "{e}"
    );
    // A table on a model that cannot be zoned: its keys are unknown fields.
    let r = include_str!("../profiles/raid0-2x-mg04aca400n.toml");
    let e = parse(&format!("{r}\n[zoned]\nzone_size_mib = 256\n")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("zoned.zone_size_mib"), "{e}");
    assert!(e.to_string().contains("unknown field"), "{e}");
    // Nested tables are refused with their line.
    let e = parse(&format!("{SMR}[zoned.more]\nx = 1\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("syntax error") && e.contains("[zoned.more]"),
        "{e}"
    );
}
