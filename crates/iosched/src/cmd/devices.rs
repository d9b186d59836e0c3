//! `iosched devices`: list device profiles.

use anyhow::Result;

/// List the built-in device profiles with every parameter: name, unit, value, meaning.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  iosched devices\n  iosched devices ideal")]
pub struct Args {
    /// Show only this profile.
    pub name: Option<String>,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let list = match &args.name {
        Some(n) => vec![devices::profile(n)?],
        None => devices::profiles(),
    };
    for p in list {
        let dev = p.build();
        let info = dev.info();
        println!("{}: {}", p.name, p.about);
        println!(
            "  default scheduler: {}   capacity: {} bytes   rotational: {}   write cache: {}",
            info.default_scheduler,
            info.capacity_sectors * 512,
            info.rotational,
            info.write_cache
        );
        for prm in p.params() {
            println!(
                "  {:<14} {:>14} {:<9} {}",
                prm.name, prm.value, prm.unit, prm.help
            );
        }
        println!();
    }
    Ok(())
}
