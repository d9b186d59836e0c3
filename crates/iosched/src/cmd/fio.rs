//! `iosched fio ARGS...`: fio's own command-line syntax.

use super::sim_opts::{simulate_and_print, SimArgs};
use anyhow::{bail, Result};
use sim::fio::parse_command_line;

/// Simulate a job written in fio's command-line syntax (single- or double-dash
/// options; `--name` starts a job, options before it are global). The simulation
/// options below may appear anywhere among fio's.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example (seed 0's command, verbatim):\n  iosched fio -ioengine=psync -lockmem=1G -buffered=0 -time_based=1 -direct=1 -iodepth=1 -thread -bs=512B -size=110g -numjobs=16 -runtime=300 -group_reporting -name=read -filename=/dev/sdb14 -ioscheduler=mq-deadline -rw=read\n  iosched fio --name=r --rw=randread --bs=4k --size=1g --direct=1 --ioengine=libaio --iodepth=32 --output-format=json --device ideal"
)]
pub struct Args {
    /// fio options, plus any of --device, --device-file, --sched, --set, --seed, --hz,
    /// --cpus, --host, --host-file, --submit-ns (see `iosched run --help`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "FIO OPTIONS"
    )]
    pub args: Vec<String>,
}

/// Our own options, recognised among fio's (long form only, `--x=v` or `--x v`).
const OURS: &[&str] = &[
    "device",
    "device-file",
    "sched",
    "set",
    "seed",
    "hz",
    "cpus",
    "host",
    "host-file",
    "submit-ns",
];

/// Split our options from fio's.
fn split(args: &[String]) -> Result<(SimArgs, Vec<String>)> {
    let mut sim = SimArgs::default();
    let mut fio = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let Some(body) = a.strip_prefix("--") else {
            fio.push(a.clone());
            i += 1;
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        if !OURS.contains(&name) {
            fio.push(a.clone());
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                match args.get(i) {
                    Some(v) => v.clone(),
                    None => bail!("--{name} needs a value"),
                }
            }
        };
        let num = |v: &str| -> Result<u64> {
            v.parse()
                .map_err(|_| anyhow::anyhow!("--{name}={v}: expected a non-negative integer"))
        };
        match name {
            "device" => sim.target.device = Some(value),
            "device-file" => sim.target.device_file = Some(value),
            "sched" => sim.target.sched = Some(value),
            "set" => sim.target.set.push(value),
            "seed" => sim.seed = Some(num(&value)?),
            "hz" => sim.target.hz = num(&value)? as u32,
            "cpus" => sim.cpus = Some(num(&value)? as u32),
            "host" => sim.host = Some(value),
            "host-file" => sim.host_file = Some(value),
            "submit-ns" => sim.submit_ns = Some(num(&value)?),
            _ => unreachable!("OURS lists exactly the names matched above"),
        }
        i += 1;
    }
    Ok((sim, fio))
}

/// Run the command.
pub fn run(args: Args) -> Result<()> {
    let (sim, fio) = split(&args.args)?;
    if fio.is_empty() {
        bail!("no fio options given; try `iosched fio --help`");
    }
    let input = parse_command_line(&fio)?;
    simulate_and_print(input, &sim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_options_are_taken_out_anywhere() {
        let v: Vec<String> = [
            "-bs=4k",
            "--device",
            "ideal",
            "--name=x",
            "--set=mq-deadline.fifo_batch=1",
            "--seed=3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (sim, fio) = split(&v).unwrap();
        assert_eq!(sim.target.device.as_deref(), Some("ideal"));
        assert_eq!(sim.target.set, vec!["mq-deadline.fifo_batch=1"]);
        assert_eq!(sim.seed, Some(3));
        assert_eq!(fio, vec!["-bs=4k", "--name=x"]);
    }
}
