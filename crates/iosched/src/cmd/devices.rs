//! `iosched devices`: list device profiles; `iosched devices import-disksim`: turn a
//! DiskSim drive into an `hdd-table` profile.

use anyhow::Result;
use std::io::Write as _;

/// List the built-in device profiles with every parameter: name, unit, value, meaning.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched devices\n  iosched devices hdd-7200\n  iosched devices --device-file crates/devices/profiles/ssd-sata.toml\n  iosched devices import-disksim data/disksim-valid/atlas_III.parv --out atlas_III.toml"
)]
pub struct Args {
    /// Show only this profile (or `import-disksim DRIVE.parv`: import a DiskSim drive).
    pub name: Option<String>,
    /// With `import-disksim`: the drive's DiskSim `.parv` file (it names the
    /// `.diskspecs`, `.model` and `.seek` files, read from beside it).
    #[arg(value_name = "DRIVE.parv")]
    pub parv: Option<String>,
    /// With `import-disksim`: write the profile here (default: standard output).
    #[arg(long, value_name = "PROFILE.toml")]
    pub out: Option<String>,
    /// Check and show a profile file instead.
    #[arg(long, value_name = "FILE", conflicts_with = "name")]
    pub device_file: Option<String>,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    if args.name.as_deref() == Some("import-disksim") {
        let Some(parv) = &args.parv else {
            anyhow::bail!("usage: iosched devices import-disksim DRIVE.parv [--out PROFILE.toml]");
        };
        return import_disksim(parv, args.out.as_deref());
    }
    if let Some(p) = &args.parv {
        anyhow::bail!("unexpected argument '{p}' (only `import-disksim` takes a second argument)");
    }
    if args.out.is_some() {
        anyhow::bail!("--out is only used with `import-disksim`");
    }
    let list = match (&args.name, &args.device_file) {
        (_, Some(f)) => vec![devices::load_profile_file(std::path::Path::new(f))?],
        (Some(n), None) => vec![devices::profile(n)?],
        (None, None) => devices::profiles(),
    };
    let mut out = super::output::stdout();
    for p in list {
        let dev = p.build();
        let info = dev.info();
        writeln!(out, "{}: {}", p.name, p.about)?;
        writeln!(out, "  model: {}", p.model())?;
        writeln!(
            out,
            "  default scheduler: {}   capacity: {} bytes   rotational: {}   write cache: {}",
            info.default_scheduler,
            info.capacity_sectors * 512,
            info.rotational,
            info.write_cache
        )?;
        for prm in p.params() {
            writeln!(
                out,
                "  {:<24} {:>18} {:<9} {}",
                prm.name, prm.value, prm.unit, prm.help
            )?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// `iosched devices import-disksim DRIVE.parv [--out PROFILE.toml]`.
fn import_disksim(parv: &str, dest: Option<&str>) -> Result<()> {
    let imp = devices::disksim::import(std::path::Path::new(parv))?;
    let text = imp.to_toml();
    // The profile must load back as written.
    devices::parse_profile("<imported>", &text, &|n| devices::profile(n).ok())
        .map_err(|e| anyhow::anyhow!("imported profile does not validate: {e}"))?;
    match dest {
        Some(path) => {
            super::output::write_file(path, text.as_bytes())?;
            eprintln!(
                "wrote {path}: {} ({} zones); {} DiskSim parameters not used by the model (listed at the end of the file)",
                imp.name,
                imp.params.zones.len(),
                imp.unused.len()
            );
        }
        None => super::output::print(&text)?,
    }
    Ok(())
}
