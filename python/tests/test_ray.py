# SPDX-License-Identifier: GPL-2.0-only
"""A grid fanned out as Ray tasks on a local two-worker Ray gives the local table."""

import os
from pathlib import Path

import pytest

import iosched

# CI sets IOSCHED_REQUIRE_RAY so that a missing Ray fails instead of skipping.
if os.environ.get("IOSCHED_REQUIRE_RAY"):
    import ray
else:
    ray = pytest.importorskip("ray")
import iosched.ray  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_sweep_equals_the_local_sweep(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    local = iosched.sweep(EXAMPLES / "sweep.toml", as_="csv")
    for shards in (1, 4):
        got = iosched.ray.sweep(EXAMPLES / "sweep.toml", shards=shards, out=tmp_path / f"r{shards}", as_="csv")
        assert got == local
    df = iosched.ray.sweep(EXAMPLES / "sweep.toml", shards=2)
    assert len(df) == 6
