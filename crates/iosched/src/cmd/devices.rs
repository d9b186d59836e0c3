//! `iosched devices`: list device profiles.

use anyhow::Result;

/// List the built-in device profiles with every parameter: name, unit, value, meaning.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched devices\n  iosched devices hdd-7200\n  iosched devices --device-file my-disk.toml"
)]
pub struct Args {
    /// Show only this profile.
    pub name: Option<String>,
    /// Check and show a profile file instead.
    #[arg(long, value_name = "FILE", conflicts_with = "name")]
    pub device_file: Option<String>,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let list = match (&args.name, &args.device_file) {
        (_, Some(f)) => vec![devices::load_profile_file(std::path::Path::new(f))?],
        (Some(n), None) => vec![devices::profile(n)?],
        (None, None) => devices::profiles(),
    };
    for p in list {
        let dev = p.build();
        let info = dev.info();
        println!("{}: {}", p.name, p.about);
        println!("  model: {}", p.model());
        println!(
            "  default scheduler: {}   capacity: {} bytes   rotational: {}   write cache: {}",
            info.default_scheduler,
            info.capacity_sectors * 512,
            info.rotational,
            info.write_cache
        );
        for prm in p.params() {
            println!(
                "  {:<24} {:>18} {:<9} {}",
                prm.name, prm.value, prm.unit, prm.help
            );
        }
        println!();
    }
    Ok(())
}
