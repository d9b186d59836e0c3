# SPDX-License-Identifier: GPL-2.0-only
"""The Python package against the command line: same reports, same tables, same
errors."""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

import iosched

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
JOB = "[r]\nrw=randread\nbs=4k\nsize=16m\ndirect=1\nioengine=libaio\niodepth=8\nnumber_ios=2000\n"


def cli(*args, env=None):
    exe = os.environ.get("IOSCHED_BIN", str(ROOT / "target" / "debug" / "iosched"))
    e = dict(os.environ, SOURCE_DATE_EPOCH="0", **(env or {}))
    return subprocess.run([exe, *args], capture_output=True, text=True, env=e, check=False)


@pytest.fixture(autouse=True)
def fixed_epoch(monkeypatch):
    # Reports carry a date: fix it so that Python and the command line agree.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")


def test_run_matches_the_command_line_report(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text(JOB)
    r = iosched.run(job, device="ssd-sata", sched="mq-deadline", set={"mq-deadline.fifo_batch": 4}, seed=3)
    c = cli("run", str(job), "--device", "ssd-sata", "--sched", "mq-deadline",
            "--set", "mq-deadline.fifo_batch=4", "--seed", "3", "--output-format=json")
    assert c.returncode == 0, c.stderr
    assert r == json.loads(c.stdout)
    assert r["jobs"][0]["read"]["total_ios"] == 2000


def test_job_text_and_fio_command_line():
    a = iosched.run(JOB, device="ideal")
    b = iosched.fio("--name=r --rw=randread --bs=4k --size=16m --direct=1 --ioengine=libaio "
                    "--iodepth=8 --number_ios=2000", device="ideal")
    assert a["jobs"][0]["read"]["total_ios"] == b["jobs"][0]["read"]["total_ios"] == 2000


def test_errors_are_exceptions_with_the_command_lines_message(tmp_path):
    job = tmp_path / "bad.fio"
    job.write_text("[r]\nrw=randread\nbs=4k\nsize=16m\niodepth=banana\n")
    with pytest.raises(iosched.IoschedError) as e:
        iosched.run(job)
    c = cli("run", str(job))
    assert c.returncode == 2
    assert str(e.value) in c.stderr
    assert "bad.fio:5" in str(e.value)
    with pytest.raises(iosched.IoschedError, match="no-such-device"):
        iosched.run(JOB, device="no-such-device")
    with pytest.raises(iosched.IoschedError, match="cannot read job file"):
        iosched.run(tmp_path / "missing.fio")
    # The native layer refuses an option it does not know rather than ignore it.
    with pytest.raises(iosched.IoschedError, match="unknown simulation option 'bogus'"):
        iosched._native.run_fio(["--name=r", "--size=1m"], {"bogus": 1})


def test_runs_release_the_interpreter_lock():
    # While a run simulates, another Python thread keeps running.
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    job = JOB.replace("number_ios=2000", "number_ios=400000")
    start = time.monotonic()
    iosched.run(job, device="ideal")
    end = time.monotonic()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert len(during) >= 0.5 * (end - start) / 0.002, (len(during), end - start)


def test_sweep_is_the_command_lines_table(tmp_path):
    out = tmp_path / "py"
    df = iosched.sweep(EXAMPLES / "sweep.toml", out=out, jobs=2)
    c = cli("sweep", str(EXAMPLES / "sweep.toml"), "--out", str(tmp_path / "cli"), "--jobs", "1")
    assert c.returncode == 0, c.stderr
    assert (out / "results.csv").read_bytes() == (tmp_path / "cli" / "results.csv").read_bytes()
    assert len(df) == 6 and set(df["sched"]) == {"none", "mq-deadline"}
    assert (df["status"] == "ok").all() and (df["iops"] > 0).all()
    # A dict grid gives the same table as its file.
    grid = {"job": str(EXAMPLES / "randread-4k.fio"), "device": "hdd-7200",
            "sched": ["none", "mq-deadline"], "seed": [1, 2, 3], "set": {"blk.nr_requests": 32}}
    assert iosched.sweep(grid, as_="csv") == (out / "results.csv").read_text()


def test_sweep_shards_merge_to_the_whole(tmp_path):
    whole = iosched.sweep(EXAMPLES / "sweep.toml", as_="csv")
    dirs = []
    for i in range(3):
        d = tmp_path / f"s{i}"
        iosched.sweep(EXAMPLES / "sweep.toml", out=d, shard=f"{i}/3", jobs=1)
        dirs.append(d)
    assert iosched.sweep_merge(dirs, as_="csv") == whole


def test_bad_grid_names_its_line(tmp_path):
    g = tmp_path / "g.toml"
    g.write_text('job = "%s"\ndevice = "hdd-7200"\nsched = ["none", "nope"]\n' % (EXAMPLES / "randread-4k.fio"))
    with pytest.raises(iosched.IoschedError, match=r"g\.toml:3"):
        iosched.sweep(g)


def test_replay_devices_and_schedulers():
    trace = ROOT / "crates" / "sim" / "tests" / "data" / "traces" / "sample.blkparse"
    r = iosched.replay(trace, "blkparse", device="ssd-sata", sched="bfq")
    assert r["jobs"][0]["read"]["total_ios"] + r["jobs"][0]["write"]["total_ios"] > 0
    c = cli("replay", "--format", "blkparse", str(trace), "--device", "ssd-sata",
            "--sched", "bfq", "--host", "free", "--submit-ns", "0", "--output-format=json")
    assert c.returncode == 0, c.stderr
    r = iosched.replay(trace, "blkparse", device="ssd-sata", sched="bfq", host="free", submit_ns=0)
    mine = json.loads(c.stdout)["jobs"][0]["read"]
    assert r["jobs"][0]["read"]["clat_ns"] == mine["clat_ns"]
    names = {d["name"] for d in iosched.devices()}
    assert {"hdd-7200", "nvme-gen4", "ideal"} <= names
    s = {x["name"]: x for x in iosched.schedulers()}
    assert set(s) == {"none", "mq-deadline", "kyber", "bfq"}
    fifo = {t["name"]: t for t in s["mq-deadline"]["tunables"]}["fifo_batch"]
    assert fifo["default"] == "16"
    assert iosched.__version__
