# SPDX-License-Identifier: GPL-2.0-only
"""iosched from Python: the Linux block layer's I/O schedulers, simulated.

Every call runs what the ``iosched`` command line runs, in-process and with the
interpreter's lock released while it simulates::

    import iosched
    r = iosched.run("examples/randread-4k.fio", device="hdd-7200", sched="bfq")
    r["jobs"][0]["read"]["iops"]

    df = iosched.sweep("examples/sweep.toml")          # pandas DataFrame
    iosched.devices(), iosched.schedulers()

Errors (a bad job, setting or trace) raise :class:`IoschedError` with the message
the command line prints.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._native import IoschedError

__all__ = [
    "IoschedError",
    "run",
    "fio",
    "sweep",
    "sweep_merge",
    "replay",
    "devices",
    "schedulers",
    "grid_toml",
    "__version__",
]

__version__ = _native.version()

PathLike = Union[str, "os.PathLike[str]"]


def _settings(set: Optional[Mapping[str, Any]]) -> list:
    """``{"mq-deadline.fifo_batch": 1}`` as the command line's ``--set`` values."""
    if not set:
        return []
    return [f"{k}={_value(v)}" for k, v in set.items()]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _sim_kwargs(device, device_file, sched, set, seed, host, host_file, cpus, hz, submit_ns):
    return dict(
        device=device,
        device_file=None if device_file is None else os.fspath(device_file),
        sched=sched,
        set=_settings(set),
        seed=seed,
        host=host,
        host_file=None if host_file is None else os.fspath(host_file),
        cpus=cpus,
        hz=hz,
        submit_ns=submit_ns,
    )


def run(
    job: PathLike,
    *,
    device: Optional[str] = None,
    device_file: Optional[PathLike] = None,
    sched: Optional[str] = None,
    set: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    host: Optional[str] = None,
    host_file: Optional[PathLike] = None,
    cpus: Optional[int] = None,
    hz: int = 250,
    submit_ns: Optional[int] = None,
) -> dict:
    """Simulate a fio job file and return fio's JSON report as Python objects.

    ``job`` is the path of a job file, or the text of one (any string with a
    newline in it). The keywords are the command line's options (``iosched run
    --help``): ``set={"bfq.low_latency": 0}`` is ``--set bfq.low_latency=0``.
    """
    if isinstance(job, str) and "\n" in job:
        text, name = job, "<job>"
    else:
        name = os.fspath(job)
        text = _native.read_job_file(name)
    kw = _sim_kwargs(device, device_file, sched, set, seed, host, host_file, cpus, hz, submit_ns)
    return json.loads(_native.run_job(text, name, kw))


def fio(
    args: Union[str, Sequence[str]],
    *,
    device: Optional[str] = None,
    device_file: Optional[PathLike] = None,
    sched: Optional[str] = None,
    set: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    host: Optional[str] = None,
    host_file: Optional[PathLike] = None,
    cpus: Optional[int] = None,
    hz: int = 250,
    submit_ns: Optional[int] = None,
) -> dict:
    """Simulate a job given in fio's command-line syntax (``iosched fio``), e.g.
    ``iosched.fio("--name=r --rw=randread --bs=4k --size=64m --direct=1")``;
    fio's JSON report as Python objects."""
    argv = args.split() if isinstance(args, str) else [str(a) for a in args]
    kw = _sim_kwargs(device, device_file, sched, set, seed, host, host_file, cpus, hz, submit_ns)
    return json.loads(_native.run_fio(argv, kw))


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string is a JSON string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise IoschedError(f"grid value {v!r}: expected a string, number, boolean or list of them")


def grid_toml(
    grid: Mapping[str, Any], base: Optional[PathLike] = None, absolute_job: bool = True
) -> str:
    """A grid given as a dict (the keys of docs/sweeps.md; ``"set"`` a dict of
    ``"NS.NAME": value or list``) as the text of a grid file. A relative ``job``
    path is made absolute against ``base`` (default: the working directory) unless
    ``absolute_job`` is false."""
    lines = []
    for k, v in grid.items():
        if k == "set":
            continue
        if k == "job" and absolute_job and not os.path.isabs(v):
            v = str(Path(base or os.getcwd(), v).resolve())
        lines.append(f"{k} = {_toml_value(v)}")
    if grid.get("set"):
        lines.append("")
        lines.append("[set]")
        for k, v in grid["set"].items():
            lines.append(f"{json.dumps(k)} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _grid_file(grid: Union[PathLike, Mapping[str, Any]], tmp: str) -> str:
    if isinstance(grid, Mapping):
        path = os.path.join(tmp, "grid.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(grid_toml(grid))
        return path
    return os.fspath(grid)


def _table(path: str, as_: str):
    """The table at ``path`` (CSV or Parquet) as CSV text, a pyarrow Table or a
    pandas DataFrame."""
    if as_ == "csv":
        with open(path, encoding="utf-8") as f:
            return f.read()
    if as_ not in ("pandas", "arrow"):
        raise IoschedError(f"as_={as_!r}: expected 'pandas', 'arrow' or 'csv'")
    # Optional dependencies: pip install 'iosched[pandas]'.
    if path.endswith(".parquet"):
        import pyarrow.parquet

        t = pyarrow.parquet.read_table(path)
    else:
        import pyarrow.csv

        t = pyarrow.csv.read_csv(path)
    return t if as_ == "arrow" else t.to_pandas()


def sweep(
    grid: Union[PathLike, Mapping[str, Any]],
    *,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    shard: Optional[str] = None,
    as_: str = "pandas",
):
    """Run a grid (a grid file's path, or a dict of its keys) as ``iosched sweep``
    does and return its table: a pandas DataFrame (``as_="pandas"``), a pyarrow
    Table (``"arrow"``) or the CSV text (``"csv"``). Results are kept in ``out``
    (default: a temporary directory), so a second call with the same ``out`` only
    runs what is missing; ``shard="I/N"`` runs one slice."""
    with tempfile.TemporaryDirectory(prefix="iosched-sweep-") as tmp:
        path = _grid_file(grid, tmp)
        dest = os.fspath(out) if out is not None else os.path.join(tmp, "out")
        _native.sweep(path, dest, jobs, shard)
        name = "results.csv" if as_ == "csv" else "results.parquet"
        return _table(os.path.join(dest, name), as_)


def sweep_merge(dirs: Iterable[PathLike], *, out: Optional[PathLike] = None, as_: str = "pandas"):
    """Join the ``out`` directories of several shards (``iosched sweep merge``):
    the same table the whole grid gives, byte for byte in CSV."""
    dirs = [os.fspath(d) for d in dirs]
    with tempfile.TemporaryDirectory(prefix="iosched-merge-") as tmp:
        dest = os.fspath(out) if out is not None else os.path.join(tmp, "merged.csv")
        _native.sweep_merge(dest, dirs)
        return _table(dest, as_)


def replay(
    trace: PathLike,
    format: str,
    *,
    iodepth: Optional[int] = None,
    time_scale: Optional[float] = None,
    sort: bool = False,
    wrap: bool = False,
    ioengine: str = "libaio",
    device: Optional[str] = None,
    device_file: Optional[PathLike] = None,
    sched: Optional[str] = None,
    set: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    host: Optional[str] = None,
    host_file: Optional[PathLike] = None,
    cpus: Optional[int] = None,
    hz: int = 250,
    submit_ns: Optional[int] = None,
) -> dict:
    """Replay a block trace or fio iolog (``iosched replay --format FORMAT``:
    blkparse, blktrace, tracefs, msr, mqsim, disksim-ascii, fio) and return
    fio's JSON report as Python objects."""
    with tempfile.TemporaryDirectory(prefix="iosched-replay-") as tmp:
        report = os.path.join(tmp, "report.json")
        kw = _sim_kwargs(device, device_file, sched, set, seed, host, host_file, cpus, hz, submit_ns)
        _native.replay(
            os.fspath(trace),
            format,
            report,
            kw,
            iodepth=iodepth,
            time_scale=time_scale,
            sort=sort,
            wrap=wrap,
            ioengine=ioengine,
        )
        with open(report, encoding="utf-8") as f:
            return json.load(f)


def devices() -> list:
    """The built-in device profiles (``iosched devices``): name, about, model,
    default scheduler, capacity, rotational, write cache and every parameter."""
    return json.loads(_native.device_list())


def schedulers() -> list:
    """The schedulers (``iosched schedulers``) with their tunables (sysfs name,
    default, unit, meaning) and seed-patch variants."""
    return json.loads(_native.scheduler_list())
