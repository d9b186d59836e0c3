//! `iosched hosts`: list host profiles (CPUs, costs, locks).

use anyhow::Result;

/// List the built-in host profiles with every parameter: name, value, unit, meaning.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iosched hosts\n  iosched hosts kunpeng920\n  iosched hosts --host-file crates/host/profiles/laptop-4c.toml"
)]
pub struct Args {
    /// Show only this host.
    pub name: Option<String>,
    /// Check and show a host profile file instead.
    #[arg(long, value_name = "FILE", conflicts_with = "name")]
    pub host_file: Option<String>,
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let list = match (&args.name, &args.host_file) {
        (_, Some(f)) => vec![host::load_host_file(std::path::Path::new(f))?],
        (Some(n), None) => vec![host::host(n)?],
        (None, None) => host::hosts(),
    };
    let mut out = String::new();
    for h in list {
        let default = if h.name == host::DEFAULT_HOST {
            " (default)"
        } else {
            ""
        };
        out.push_str(&format!("{}{default}: {}\n", h.name, h.about));
        if h.is_free() {
            out.push_str("  model: free (no CPU model: only --submit-ns per submission)\n");
        } else {
            out.push_str("  model: cpus\n");
        }
        for (k, unit, v, help) in h.params() {
            out.push_str(&format!("  {k:<18} {v:>8} {unit:<6} {help}\n"));
        }
        out.push('\n');
    }
    super::output::print(&out)
}
