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
