# SPDX-License-Identifier: GPL-2.0-only
"""The cluster recipes in examples/cluster/ run as their scheduler would run them
(array-task variables set by hand) and give the single-machine table."""

import os
import shutil
import subprocess
from pathlib import Path

import yaml

import iosched

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = os.environ.get("IOSCHED_BIN", str(ROOT / "target" / "debug" / "iosched"))


def env(**extra):
    path = str(Path(BIN).parent) + os.pathsep + os.environ.get("PATH", "")
    return dict(os.environ, SOURCE_DATE_EPOCH="0", PATH=path, IOSCHED=BIN, **extra)


def test_slurm_array_gives_the_whole_table(tmp_path):
    whole = iosched.sweep(EXAMPLES / "sweep.toml", as_="csv")
    script = EXAMPLES / "cluster" / "slurm-sweep.sh"
    root = tmp_path / "shards"
    for i in range(4):
        r = subprocess.run(["bash", str(script), str(EXAMPLES / "sweep.toml"), str(root)],
                           env=env(SLURM_ARRAY_TASK_ID=str(i), SLURM_ARRAY_TASK_COUNT="4"),
                           capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in root.iterdir()) == ["0", "1", "2", "3"]
    assert iosched.sweep_merge(sorted(root.iterdir()), as_="csv") == whole
    # Outside an array job the script says what is missing instead of running.
    r = subprocess.run(["bash", str(script), str(EXAMPLES / "sweep.toml")], env=env(),
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0 and "SLURM_ARRAY_TASK_ID" in r.stderr


def test_kubernetes_indexed_job_gives_the_whole_table(tmp_path):
    spec = yaml.safe_load((EXAMPLES / "cluster" / "k8s-sweep.yaml").read_text())
    n = spec["spec"]["completions"]
    assert spec["spec"]["completionMode"] == "Indexed"
    container = spec["spec"]["template"]["spec"]["containers"][0]
    command = container["command"] + container["args"]
    assert f'/{n}"' in command[-1], "the --shard count must equal completions"
    # The ConfigMap holds grid.toml and job.fio side by side.
    grid_dir, results = tmp_path / "grid", tmp_path / "results"
    grid_dir.mkdir()
    shutil.copy(EXAMPLES / "randread-4k.fio", grid_dir / "job.fio")
    text = (EXAMPLES / "sweep.toml").read_text().replace('"randread-4k.fio"', '"job.fio"')
    (grid_dir / "grid.toml").write_text(text)
    local = [c.replace("/grid/", f"{grid_dir}/").replace("/results/", f"{results}/") for c in command]
    for i in range(n):
        r = subprocess.run(local, env=env(JOB_COMPLETION_INDEX=str(i)), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    whole = iosched.sweep(grid_dir / "grid.toml", as_="csv")
    assert iosched.sweep_merge(sorted(results.iterdir()), as_="csv") == whole
