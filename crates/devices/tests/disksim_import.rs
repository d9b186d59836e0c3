//! The DiskSim importer on small hand-written drives: it accepts a well-formed one
//! and rejects malformed parameter files with `file:line` errors; and the imported
//! model's track-end read-ahead on the well-formed one.

use devices::disksim::{import, TableDisk};
use std::path::PathBuf;

const PARV: &str = "disksim_bus B { Read block transfer time = 0.1, Write block transfer time = 0.1 }\nsource t.diskspecs\ninstantiate [ disk0 ] as T\n";

const SPECS: &str = "disksim_disk T {
   Model = source t.model,
   Per-request overhead time = 0.0,
   Time scale for overheads = 1.0,
   Bulk sector transfer time = 0.05,
   Hold bus entire read xfer = 0,
   Max queue length = 1,
   Number of buffer segments = 2,
   Segment size (in blks) = 64,
   High (read) water mark = 0.5,
   Set watermark by reqsize = 1,
   Enable caching in buffer = 1,
   Buffer continuous read = 1,
   Maximum read-ahead (blks) = 32,
   Read-ahead over requested = 0,
   Read-ahead on idle hit = 0,
   Fast write level = 0,
   Read hit over. after read = 0.1,
   Read hit over. after write = 0.1,
   Read miss over. after read = 0.2,
   Read miss over. after write = 0.2,
   Write hit over. after read = 0.3,
   Write hit over. after write = 0.3,
   Write miss over. after read = 0.3,
   Write miss over. after write = 0.3,
   Read completion overhead = 0.0,
   Write completion overhead = 0.0,
   Data preparation overhead = 0.0,
   First reselect overhead = 0.0,
   Other reselect overhead = 0.0,
   Extra write disconnect = 0,
   Extradisc command overhead = 0.0,
   Extradisc disconnect overhead = 0.0,
   Extradisc inter-disconnect delay = 0.0,
   Extradisc seek delta = 0.0,
   Minimum seek delay = 0.0,
   Extradisc 2nd disconnect overhead = 0.0,
   Write disconnect overhead = 0.0,
   Read disconnect afterread = 0.0,
   Read disconnect afterwrite = 0.0,
   Use separate write segment = 0,
   Never disconnect = 0
}
";

const MODEL: &str = "dm_disk T_model {
   Number of data surfaces = 2,
   Number of cylinders = 100,
   Block count = 20000,
   Layout Model = dm_layout_g1 {
      LBN-to-PBN mapping scheme = 0,
      Sparing scheme used = 0,
      Rangesize for sparing = 1,
      Zones = [
         dm_layout_g1_zone {
            First cylinder number = 0,
            Last cylinder number = 99,
            Blocks per track = 100,
            Offset of first block = 0,
            Empty space at zone front = 0,
            Skew for track switch = 5,
            Skew for cylinder switch = 10,
            Number of spares = 0,
            slips = [],
            defects = []
         }
      ]
   },
   Mechanical Model = dm_mech_g1 {
      Access time type = trackSwitchPlusRotation,
      Seek type = extracted,
      Full seek curve = t.seek,
      Add. write settling delay = 0.0,
      Head switch time = 0.5,
      Rotation speed (in rpms) = 6000,
      Percent error in rpms = 0.0
   }
}
";

const SEEK: &str = "Seek distances measured: 3\n1, 1.0\n10, 2.0\n99, 5.0\n";

fn drive(tag: &str, parv: &str, specs: &str, model: &str, seek: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iosched-dsimp-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("t.parv"), parv).unwrap();
    std::fs::write(d.join("t.diskspecs"), specs).unwrap();
    std::fs::write(d.join("t.model"), model).unwrap();
    std::fs::write(d.join("t.seek"), seek).unwrap();
    d.join("t.parv")
}

#[track_caller]
#[allow(clippy::too_many_arguments)]
fn bad(
    tag: &str,
    parv: &str,
    specs: &str,
    model: &str,
    seek: &str,
    file: &str,
    line: usize,
    needle: &str,
) {
    let e = import(&drive(tag, parv, specs, model, seek)).expect_err("must be refused");
    let s = e.to_string();
    let loc = e.loc.as_ref().unwrap_or_else(|| panic!("no location: {s}"));
    assert!(loc.file.ends_with(file), "{s}");
    assert_eq!(loc.line, line, "{s}");
    assert!(s.contains(needle), "{s}");
    assert!(s.contains(&format!("{file}:{line}: ")), "{s}");
}

#[test]
fn imports_a_small_drive() {
    let imp = import(&drive("ok", PARV, SPECS, MODEL, SEEK)).unwrap();
    assert_eq!(imp.params.capacity_sectors, 20000);
    assert_eq!(imp.params.bus_read_ms, 0.1, "slowest of disk and bus");
    // "Never disconnect" and "Percent error in rpms" are not used: listed.
    assert!(
        imp.unused.iter().any(|u| u.contains("Never disconnect")),
        "{:?}",
        imp.unused
    );
    assert!(
        imp.unused.iter().any(|u| u.contains("Percent error")),
        "{:?}",
        imp.unused
    );
    let text = imp.to_toml();
    let p = devices::parse_profile("x.toml", &text, &|_| None).unwrap();
    assert_eq!(p.model(), "hdd-table");
}

#[test]
fn syntax_errors_name_file_and_line() {
    let specs = SPECS.replace("Max queue length = 1,", "Max queue length 1,");
    bad(
        "syn",
        PARV,
        &specs,
        MODEL,
        SEEK,
        "t.diskspecs",
        7,
        "syntax error",
    );
    let model = MODEL.replace(
        "   Block count = 20000,\n",
        "   Block count = 20000,\n   }\n",
    );
    bad(
        "syn2",
        PARV,
        SPECS,
        &model,
        SEEK,
        "t.model",
        6,
        "syntax error",
    );
}

#[test]
fn bad_values_name_file_and_line() {
    let specs = SPECS.replace(
        "Segment size (in blks) = 64",
        "Segment size (in blks) = lots",
    );
    bad(
        "num",
        PARV,
        &specs,
        MODEL,
        SEEK,
        "t.diskspecs",
        9,
        "must be a number",
    );
    let model = MODEL.replace(
        "Rotation speed (in rpms) = 6000",
        "Rotation speed (in rpms) = 0",
    );
    bad("rpm", PARV, SPECS, &model, SEEK, "t.model", 30, "positive");
    let model = MODEL.replace("Seek type = extracted", "Seek type = magic");
    bad(
        "seek",
        PARV,
        SPECS,
        &model,
        SEEK,
        "t.model",
        26,
        "not supported",
    );
}

#[test]
fn missing_parameters_name_the_block() {
    let specs = SPECS.replace("   Fast write level = 0,\n", "");
    bad(
        "miss",
        PARV,
        &specs,
        MODEL,
        SEEK,
        "t.diskspecs",
        1,
        "Fast write level",
    );
}

#[test]
fn bad_seek_files_name_file_and_line() {
    bad(
        "sk",
        PARV,
        SPECS,
        MODEL,
        "Seek distances measured: 3\n1, 1.0\n10 two\n99, 5.0\n",
        "t.seek",
        3,
        "distance, ms",
    );
    bad(
        "sk2",
        PARV,
        SPECS,
        MODEL,
        "Seek distances measured: 3\n1, 1.0\n1, 2.0\n99, 5.0\n",
        "t.seek",
        3,
        "increasing",
    );
}

/// Track-end read-ahead ("Buffer continuous read = 1") reads to the end of the track
/// holding the first block after the request: a read ending at a track end reads the
/// next track ahead; one ending inside a track stops at that track's end.
#[test]
fn track_end_read_ahead_starts_on_the_track_after_the_request() {
    let imp = import(&drive("ra", PARV, SPECS, MODEL, SEEK)).unwrap();
    // 100 blocks a track, 10 ms a revolution, at most 32 blocks read ahead.
    let mut d = TableDisk::new("t", imp.params.clone());
    let first = d.serve(0.0, false, 4_090, 10); // ends at the end of track 40
    assert!(!first.hit);
    let next = d.serve(first.done_ms + 50.0, false, 4_100, 10);
    assert!(next.hit, "the next track was read ahead");

    let mut d = TableDisk::new("t", imp.params);
    let first = d.serve(0.0, false, 4_080, 10); // ends inside track 40
    let within = d.serve(first.done_ms + 50.0, false, 4_090, 10);
    assert!(within.hit, "the rest of the track was read ahead");
    let past = d.serve(within.done_ms + 50.0, false, 4_100, 10);
    assert!(!past.hit, "read-ahead stopped at the track end");
}

/// The small drive with `specs_edits` applied to its disk block and `model_edits` to
/// its model.
fn variant(tag: &str, specs_edits: &[(&str, &str)], model_edits: &[(&str, &str)]) -> PathBuf {
    let mut specs = SPECS.to_string();
    for (a, b) in specs_edits {
        assert!(specs.contains(a), "{a}");
        specs = specs.replace(a, b);
    }
    let mut model = MODEL.to_string();
    for (a, b) in model_edits {
        assert!(model.contains(a), "{a}");
        model = model.replace(a, b);
    }
    drive(tag, PARV, &specs, &model, SEEK)
}

/// Mapping scheme 1 (serpentine), sparing scheme 9 with a remapped defect, and
/// skews in revolutions, imported and written out as a profile that reads back the
/// same.
#[test]
fn imports_serpentine_layout_with_defects_and_revolution_skews() {
    let p = variant(
        "serp",
        &[],
        &[
            (
                "LBN-to-PBN mapping scheme = 0",
                "LBN-to-PBN mapping scheme = 1",
            ),
            ("Sparing scheme used = 0", "Sparing scheme used = 9"),
            ("Block count = 20000", "Block count = 19990"),
            ("Number of spares = 0", "Number of spares = 10"),
            ("defects = []", "defects = [ 5, 19995 ]"),
            (
                "Skew for track switch = 5,",
                "Skew units = revolutions,\n            Skew for track switch = 0.05,",
            ),
            (
                "Skew for cylinder switch = 10,",
                "Skew for cylinder switch = 0.1,",
            ),
        ],
    );
    let imp = import(&p).unwrap();
    assert_eq!(imp.params.mapping, 1);
    assert_eq!(imp.params.zones[0].defects, vec![(5, 19995)]);
    assert_eq!(
        imp.params.zones[0].track_skew, 5.0,
        "0.05 rev of 100 sectors"
    );
    let d = TableDisk::new("t", imp.params.clone());
    assert_eq!(d.layout_sectors(), 19990);
    // Block 200 starts cylinder 1, which runs from surface 1 back to surface 0: one
    // track switch (5) and one cylinder switch (10) of skew.
    let b = d.locate(200);
    assert_eq!((b.cyl, b.head), (1, 1));
    assert!((b.angle - 0.15).abs() < 1e-9, "{}", b.angle);
    assert_eq!(d.locate(300).head, 0);
    // Block 5 sits on the replacement of defective sector 5: zone sector 19995 is
    // cylinder 99, surface 1 (in block order; odd cylinder: physical surface 0),
    // sector 95.
    let r = d.locate(5);
    assert_eq!((r.cyl, r.head), (99, 0));
    let text = imp.to_toml();
    let back = devices::parse_profile("x.toml", &text, &|_| None).unwrap();
    match back.kind {
        devices::ProfileKind::HddTable(t) => assert_eq!(*t, imp.params),
        _ => panic!("not an hdd-table profile"),
    }
}

#[test]
fn layout_errors_name_file_and_line() {
    let model = MODEL.replace("defects = []", "defects = [ 5 ]");
    bad("def", PARV, SPECS, &model, SEEK, "t.model", 20, "pairs");
    let model = MODEL.replace(
        "LBN-to-PBN mapping scheme = 0",
        "LBN-to-PBN mapping scheme = 3",
    );
    bad(
        "map",
        PARV,
        SPECS,
        &model,
        SEEK,
        "t.model",
        6,
        "integer from 0 to 2",
    );
    let model = MODEL.replace("slips = [],", "slips = [ 1.5 ],");
    bad("slip", PARV, SPECS, &model, SEEK, "t.model", 19, "whole");
}

/// "Allow read hits on write data = 0": written blocks are not read from the buffer.
#[test]
fn read_hits_on_write_data_follow_the_parameter() {
    for (allow, hit) in [("1", true), ("0", false)] {
        let p = variant(
            &format!("rhw{allow}"),
            &[(
                "Never disconnect = 0",
                &format!("Never disconnect = 0,\n   Allow read hits on write data = {allow}"),
            )],
            &[],
        );
        let mut d = TableDisk::new("t", import(&p).unwrap().params);
        let w = d.serve(0.0, true, 5_000, 8);
        let r = d.serve(w.done_ms + 50.0, false, 5_000, 8);
        assert_eq!(r.hit, hit, "allow = {allow}");
    }
}

/// "Maximum number of write segments": with fast writes, a second write at another
/// place completes after its command and data (0.3 + 8 × 0.1 ms) when a second write
/// segment is free, and only after the first write reached the media when not.
#[test]
fn write_segments_let_fast_writes_overlap_the_media() {
    let mut got = Vec::new();
    for segs in [1, 2] {
        let p = variant(
            &format!("ws{segs}"),
            &[
                ("Fast write level = 0", "Fast write level = 2"),
                (
                    "Never disconnect = 0",
                    &format!("Never disconnect = 0,\n   Maximum number of write segments = {segs}"),
                ),
            ],
            &[],
        );
        let mut d = TableDisk::new("t", import(&p).unwrap().params);
        let w1 = d.serve(0.0, true, 1_000, 8);
        let at = w1.done_ms + 0.01;
        let w2 = d.serve(at, true, 15_000, 8);
        got.push(w2.done_ms - at);
    }
    assert!((got[1] - 1.1).abs() < 1e-6, "two segments: {got:?}");
    assert!(got[0] > 2.0, "one segment waits for the media: {got:?}");
}

/// "Read any free blocks": the blocks of the first track that pass under the head
/// while it waits for the request go into the segment. Worked by hand: the read of
/// block 4050 (cylinder 20, angle 0.50: 20 track switches × 5 + 20 cylinders × 10 +
/// 50 sectors) starts after the 0.2 ms read-miss overhead and a 2.337 ms seek
/// (10 → 99 cylinders: 2.0 + 10/89 × 3.0) at angle 0.2537, so 24 sectors pass before
/// it; the segment has room for 64 − 42 (request and read-ahead) = 22 of them.
#[test]
fn read_any_free_blocks_caches_the_sectors_before_the_request() {
    let on = variant(
        "free1",
        &[(
            "Never disconnect = 0",
            "Never disconnect = 0,\n   Read any free blocks = 1",
        )],
        &[],
    );
    let params = import(&on).unwrap().params;
    let mut d = TableDisk::new("t", params.clone());
    let first = d.serve(0.0, false, 4_050, 10);
    assert!(!first.hit);
    assert!(d.serve(first.done_ms + 50.0, false, 4_028, 22).hit);
    let mut d = TableDisk::new("t", params);
    let first = d.serve(0.0, false, 4_050, 10);
    assert!(!d.serve(first.done_ms + 50.0, false, 4_027, 1).hit);
    // Without it, not even the block just before the request is kept.
    let mut d = TableDisk::new(
        "t",
        import(&drive("free0", PARV, SPECS, MODEL, SEEK))
            .unwrap()
            .params,
    );
    let first = d.serve(0.0, false, 4_050, 10);
    assert!(!d.serve(first.done_ms + 50.0, false, 4_049, 1).hit);
}
