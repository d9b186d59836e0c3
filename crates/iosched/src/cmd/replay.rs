//! `iosched replay --format disksim-validate`: replay a measured device trace against
//! a device model, one request outstanding at a time, and compare the simulated
//! service times with the measured ones (DiskSim's demerit figure).

use anyhow::{anyhow, bail, Result};
use devices::disksim::{demerit, trace, TableDisk};
use devices::ProfileKind;
use std::io::Write as _;
use std::path::Path;

/// Replay a DiskSim validation trace.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched devices import-disksim data/disksim-valid/atlas_III.parv --out atlas_III.toml\n  iosched replay --format disksim-validate data/disksim-valid/atlas_III.trace --device-file atlas_III.toml --plot atlas_III.svg\n  iosched replay --format disksim-validate data/disksim-valid/atlas_III.trace --device-file data/disksim-valid/atlas_III.parv --write_lat_log=atlas"
)]
pub struct Args {
    /// Trace format (only `disksim-validate`).
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// The trace.
    pub file: String,
    /// Device profile (`hdd-table`), or a DiskSim `.parv` imported on the fly.
    #[arg(long, value_name = "PROFILE")]
    pub device_file: String,
    /// Write fio-style completion latency log `PREFIX_clat.1.log`.
    #[arg(long = "write_lat_log", value_name = "PREFIX")]
    pub write_lat_log: Option<String>,
    /// Plot both service-time CDFs to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
}

fn load_disk(path: &str) -> Result<(String, TableDisk)> {
    let p = Path::new(path);
    if p.extension().is_some_and(|e| e == "parv") {
        let imp = devices::disksim::import(p)?;
        return Ok((imp.name.clone(), TableDisk::new(&imp.name, imp.params)));
    }
    let prof = devices::load_profile_file(p)?;
    match prof.kind {
        ProfileKind::HddTable(t) => Ok((prof.name.clone(), TableDisk::new(&prof.name, *t))),
        _ => bail!(
            "{path}: model '{}' cannot replay disksim-validate traces; use an hdd-table profile (`iosched devices import-disksim`)",
            prof.model()
        ),
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if args.format != "disksim-validate" {
        bail!(
            "unknown --format '{}': expected disksim-validate",
            args.format
        );
    }
    let (name, mut disk) = load_disk(&args.device_file)?;
    let reqs = trace::read_trace(Path::new(&args.file))?;
    if reqs.is_empty() {
        bail!("{}: no requests", args.file);
    }
    let out = trace::replay(&mut disk, &reqs);
    let sim: Vec<f64> = out.iter().map(|r| r.sim_ms).collect();
    let real: Vec<f64> = out.iter().map(|r| r.real_ms).collect();
    let d = demerit::demerit(&sim, &real);
    let mut ss = sim.clone();
    ss.sort_by(f64::total_cmp);
    let mut rs = real.clone();
    rs.sort_by(f64::total_cmp);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // No wall time in the output: the same trace and profile give the same bytes.
    let mut text_out = crate::cmd::output::stdout();
    writeln!(
        text_out,
        "replay {} on {name}: {} requests ({} reads, {} writes)",
        args.file,
        reqs.len(),
        reqs.iter().filter(|r| !r.write).count(),
        reqs.iter().filter(|r| r.write).count(),
    )?;
    writeln!(text_out, "service time (ms)   simulated    measured")?;
    writeln!(
        text_out,
        "  mean            {:>11.3} {:>11.3}",
        mean(&sim),
        mean(&real)
    )?;
    for q in [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0] {
        writeln!(
            text_out,
            "  p{:<14} {:>11.3} {:>11.3}",
            format!("{}", q * 100.0),
            quantile(&ss, q),
            quantile(&rs, q)
        )?;
    }
    writeln!(
        text_out,
        "demerit (DiskSim rms of the CDF distance): {d:.3} ms"
    )?;
    text_out.flush()?;
    drop(text_out);
    if let Some(prefix) = &args.write_lat_log {
        // fio's clat log with log_offset=1 (time ms, clat ns, direction, bytes,
        // offset, priority), written whole or not at all.
        let path = sim::iolog::log_file_name(prefix, sim::iolog::LogKind::Clat, 1, true);
        let params = sim::iolog::LogParams {
            offset: true,
            ..Default::default()
        };
        let mut text = Vec::new();
        for (r, o) in reqs.iter().zip(&out) {
            let sample = sim::iolog::Sample {
                time_ms: ((o.arrive_ms + o.sim_ms).round()) as u64,
                value: (o.sim_ms * 1e6).round() as u64,
                ddir: u8::from(r.write),
                bs: r.bcount as u64 * 512,
                offset: r.blkno * 512,
                ..Default::default()
            };
            sim::iolog::format_sample(&mut text, &params, &sample);
        }
        let text = String::from_utf8(text).map_err(|e| anyhow!("{path}: {e}"))?;
        crate::cmd::output::write_file(&path, text.as_bytes())?;
        eprintln!("wrote {path}");
    }
    if let Some(svg) = &args.plot {
        let series = vec![
            ("measured".to_string(), demerit::binned_cdf(&real)),
            ("simulated".to_string(), demerit::binned_cdf(&sim)),
        ];
        crate::cmd::plot::cdf_lines(
            svg,
            &format!("{name}: service time CDF (demerit {d:.3} ms)"),
            "service time (ms)",
            &series,
        )?;
        eprintln!("wrote {svg}");
    }
    Ok(())
}
