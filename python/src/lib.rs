//! `iosched._native`: the Rust side of the `iosched` Python package.
//!
//! Every function here runs what the command line runs (the `iosched` library's
//! commands), with the interpreter's lock released while it simulates, and returns
//! fio's JSON report (or a listing) as a JSON string; the Python side
//! (`python/iosched/__init__.py`) turns it into Python objects and DataFrames. An
//! error becomes `iosched.IoschedError` with the message the command line prints.

use anyhow::{Context, Result};
use iosched::cmd::sim_opts::{run_options, simulate, SimArgs};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Value};

create_exception!(
    _native,
    IoschedError,
    PyException,
    "A bad job, setting or trace, or a run that failed: the message names what and where."
);

fn to_py(e: anyhow::Error) -> PyErr {
    IoschedError::new_err(format!("{e:#}"))
}

/// The simulation options of one call, as the command line's `SimArgs`, from the
/// dict the Python side builds (`device`, `device_file`, `sched`, `set`, `seed`,
/// `host`, `host_file`, `cpus`, `hz`, `submit_ns`; `None` values are absent). An
/// unknown key is an error: it would be an option silently ignored.
fn sim_args(d: &Bound<'_, PyDict>) -> PyResult<SimArgs> {
    let mut a = SimArgs::default();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        match key.as_str() {
            "device" => a.target.device = Some(v.extract()?),
            "device_file" => a.target.device_file = Some(v.extract()?),
            "sched" => a.target.sched = Some(v.extract()?),
            "set" => a.target.set = v.extract()?,
            "seed" => a.seed = Some(v.extract()?),
            "host" => a.host = Some(v.extract()?),
            "host_file" => a.host_file = Some(v.extract()?),
            "cpus" => a.cpus = Some(v.extract()?),
            "hz" => a.target.hz = v.extract()?,
            "submit_ns" => a.submit_ns = Some(v.extract()?),
            other => {
                return Err(IoschedError::new_err(format!(
                    "unknown simulation option '{other}'"
                )))
            }
        }
    }
    Ok(a)
}

fn run_input(input: sim::fio::FioInput, args: &SimArgs) -> Result<String> {
    let opts = run_options(args)?;
    let report = simulate(&input, &opts, false)?;
    Ok(sim::report::json::to_string(&report))
}

/// Simulate the fio job file `text` (named `name` in messages) with the
/// simulation options `sim` ([`sim_args`]); fio's JSON report.
#[pyfunction]
fn run_job(
    py: Python<'_>,
    text: String,
    name: String,
    sim: &Bound<'_, PyDict>,
) -> PyResult<String> {
    let args = sim_args(sim)?;
    py.allow_threads(|| run_input(sim::fio::parse_job_file(&name, &text)?, &args))
        .map_err(to_py)
}

/// Simulate a job given as fio command-line arguments; fio's JSON report.
#[pyfunction]
fn run_fio(py: Python<'_>, argv: Vec<String>, sim: &Bound<'_, PyDict>) -> PyResult<String> {
    let args = sim_args(sim)?;
    py.allow_threads(|| run_input(sim::fio::parse_command_line(&argv)?, &args))
        .map_err(to_py)
}

/// `iosched sweep GRID --out OUT [--jobs N] [--shard I/N]`.
#[pyfunction]
#[pyo3(signature = (grid, out, jobs=None, shard=None))]
fn sweep(
    py: Python<'_>,
    grid: String,
    out: String,
    jobs: Option<usize>,
    shard: Option<String>,
) -> PyResult<()> {
    let args = iosched::cmd::sweep::Args {
        merge: None,
        grid: Some(grid),
        out,
        jobs,
        shard,
    };
    py.allow_threads(|| iosched::cmd::sweep::run(args))
        .map_err(to_py)
}

/// `iosched sweep merge --out OUT DIRS...`.
#[pyfunction]
fn sweep_merge(py: Python<'_>, out: String, dirs: Vec<String>) -> PyResult<()> {
    let args = iosched::cmd::sweep::Args {
        merge: Some(iosched::cmd::sweep::MergeCmd::Merge { out, dirs }),
        grid: None,
        out: String::new(),
        jobs: None,
        shard: None,
    };
    py.allow_threads(|| iosched::cmd::sweep::run(args))
        .map_err(to_py)
}

/// `iosched replay --format FORMAT TRACE ...` with a JSON report, written to
/// `report` (the command writes its report to a file; the caller reads it), with
/// the simulation options `sim` ([`sim_args`]).
#[pyfunction]
#[pyo3(signature = (trace, format, report, sim, iodepth=None, time_scale=None, sort=false,
    wrap=false, ioengine="libaio".to_string()))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    trace: String,
    format: String,
    report: String,
    sim: &Bound<'_, PyDict>,
    iodepth: Option<u32>,
    time_scale: Option<f64>,
    sort: bool,
    wrap: bool,
    ioengine: String,
) -> PyResult<()> {
    let args = iosched::cmd::replay::Args {
        format,
        file: trace,
        iodepth,
        time_scale,
        sort,
        wrap,
        ioengine,
        output_format: "json".into(),
        output: Some(report),
        write_lat_log: None,
        plot: None,
        sim: sim_args(sim)?,
    };
    py.allow_threads(|| iosched::cmd::replay::run(args))
        .map_err(to_py)
}

/// The built-in device profiles, as `iosched devices` lists them (JSON).
#[pyfunction]
fn device_list() -> PyResult<String> {
    let list: Vec<Value> = ::devices::profiles()
        .iter()
        .map(|p| {
            let dev = p.build();
            let info = dev.info();
            let params: Vec<Value> = p
                .params()
                .iter()
                .map(|x| json!({"name": x.name, "value": x.value, "unit": x.unit, "help": x.help}))
                .collect();
            json!({
                "name": p.name,
                "about": p.about,
                "model": p.model(),
                "default_scheduler": info.default_scheduler,
                "capacity_bytes": info.capacity_sectors * 512,
                "rotational": info.rotational,
                "write_cache": info.write_cache,
                "params": params,
            })
        })
        .collect();
    Ok(Value::Array(list).to_string())
}

/// The schedulers with their tunables and variants, as `iosched schedulers` lists
/// them for nr_requests=256 and HZ=250 (JSON).
#[pyfunction]
fn scheduler_list() -> PyResult<String> {
    let params = blk::elevator::QueueParams {
        hz: 250,
        ..Default::default()
    };
    let list: Vec<Value> = blk::elevator::SCHEDULERS
        .iter()
        .map(|s| {
            let e = (s.make)(&params);
            let tunables: Vec<Value> = e
                .tunables()
                .iter()
                .map(|t| json!({"name": t.name, "default": t.default, "unit": t.unit, "help": t.help}))
                .collect();
            let variants: Vec<Value> = e
                .variants()
                .iter()
                .map(|v| json!({"name": v.name, "help": v.help}))
                .collect();
            json!({"name": s.name, "about": s.about, "tunables": tunables, "variants": variants})
        })
        .collect();
    Ok(Value::Array(list).to_string())
}

/// The version of iosched this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Read a whole text file, with the command line's message when it cannot be read.
#[pyfunction]
fn read_job_file(py: Python<'_>, path: String) -> PyResult<String> {
    py.allow_threads(|| {
        std::fs::read_to_string(&path).with_context(|| format!("cannot read job file '{path}'"))
    })
    .map_err(to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IoschedError", m.py().get_type::<IoschedError>())?;
    m.add_function(wrap_pyfunction!(run_job, m)?)?;
    m.add_function(wrap_pyfunction!(run_fio, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_merge, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(device_list, m)?)?;
    m.add_function(wrap_pyfunction!(scheduler_list, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(read_job_file, m)?)?;
    Ok(())
}
