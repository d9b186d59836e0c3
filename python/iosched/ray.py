# SPDX-License-Identifier: GPL-2.0-only
"""Fan a sweep out over a Ray cluster: one Ray task per shard of the grid.

    import ray, iosched.ray
    ray.init()                                  # or ray.init(address="auto")
    df = iosched.ray.sweep("examples/sweep.toml", shards=64)

Each task runs ``iosched sweep --shard I/N`` on its worker (the grid and its job
file travel with the task, so workers need no shared file system, only the
``iosched`` package) and returns its runs' result files; the driver joins them with
``iosched sweep merge``, so the table is the one a local ``iosched.sweep`` of the
same grid gives, byte for byte in CSV, whatever the number of shards.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import iosched

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - older interpreters
    tomllib = None


def _portable(grid: Union[str, os.PathLike, Mapping[str, Any]]) -> tuple:
    """(grid file text, job file text or None): the grid with its job file read, so
    that a worker can rebuild both in a directory of its own."""
    if isinstance(grid, Mapping):
        g, base = dict(grid), Path.cwd()
    else:
        if tomllib is None:
            raise iosched.IoschedError("iosched.ray needs Python 3.11 (tomllib) for grid files")
        path = Path(grid)
        with open(path, "rb") as f:
            g = tomllib.load(f)
        base = path.parent
    job_text = None
    if "job" in g:
        job = Path(base, g["job"])
        job_text = iosched._native.read_job_file(str(job))
        g["job"] = "job.fio"
    # The job file sits beside the grid on the worker: keep its path relative.
    return iosched.grid_toml(g, absolute_job=False), job_text


def _run_shard(grid_text: str, job_text: Optional[str], index: int, shards: int, jobs: int) -> dict:
    """One shard on a worker: its runs' result files, by name."""
    with tempfile.TemporaryDirectory(prefix="iosched-ray-") as tmp:
        grid = os.path.join(tmp, "grid.toml")
        with open(grid, "w", encoding="utf-8") as f:
            f.write(grid_text)
        if job_text is not None:
            with open(os.path.join(tmp, "job.fio"), "w", encoding="utf-8") as f:
                f.write(job_text)
        out = os.path.join(tmp, "out")
        iosched._native.sweep(grid, out, jobs, f"{index}/{shards}")
        runs = os.path.join(out, "runs")
        files = {}
        for name in sorted(os.listdir(runs)):
            with open(os.path.join(runs, name), encoding="utf-8") as f:
                files[name] = f.read()
        return files


def sweep(
    grid: Union[str, os.PathLike, Mapping[str, Any]],
    *,
    shards: Optional[int] = None,
    jobs_per_task: int = 1,
    out: Optional[Union[str, os.PathLike]] = None,
    as_: str = "pandas",
    **remote_options: Any,
):
    """Run ``grid`` (a grid file or a dict of its keys) as ``shards`` Ray tasks
    (default: the cluster's CPUs) of ``jobs_per_task`` runs at once each, and
    return the joined table (``as_`` as in :func:`iosched.sweep`). ``out`` keeps
    the shards' result files (``out/shard-I/runs``) and the merged CSV
    (``out/results.csv``). Extra keywords go to ``ray.remote`` (e.g.
    ``num_cpus=2``, ``memory=...``)."""
    import ray

    if not ray.is_initialized():
        ray.init()
    if shards is None:
        shards = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if shards < 1:
        raise iosched.IoschedError(f"shards={shards}: expected at least 1")
    grid_text, job_text = _portable(grid)
    opts = {"num_cpus": jobs_per_task, **remote_options}
    task = ray.remote(**opts)(_run_shard)
    pending = [task.remote(grid_text, job_text, i, shards, jobs_per_task) for i in range(shards)]
    results = ray.get(pending)
    with tempfile.TemporaryDirectory(prefix="iosched-ray-merge-") as tmp:
        root = Path(out) if out is not None else Path(tmp)
        dirs = []
        for i, files in enumerate(results):
            d = root / f"shard-{i}"
            (d / "runs").mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (d / "runs" / name).write_text(text, encoding="utf-8")
            dirs.append(str(d))
        return iosched.sweep_merge(dirs, out=root / "results.csv", as_=as_)
