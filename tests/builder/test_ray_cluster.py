"""Builds on a real two-node Ray cluster on 127.0.0.1 (``--ray ADDRESS``) give the local build's bytes: the rows
file, its build record and ``rows_sha256``, for Qwen3.5, gpt-oss and a Jinja-rendered profile, with tasks of any
size; a task whose worker is killed mid-build is retried with the same bytes; a driver killed mid-build leaves no
output and the next build cleans up after it. Skipped without ``ray``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from helpers import REPO  # noqa: E402
from helpers import s3 as s3_helper  # noqa: E402
from helpers.family_vocabs import TEMPLATES, save_stand_in_dir  # noqa: E402
from sftpack.builder.config import BuildConfig  # noqa: E402
from sftpack.builder.pipeline import build  # noqa: E402

# Ray on Linux binds a cluster to the machine's address unless told otherwise: the tests' cluster and drivers use
# 127.0.0.1 only.
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The environment of an S3 endpoint on 127.0.0.1 holding the sample in shards; None without moto or s3fs."""
    if not s3_helper.available():
        yield None
        return
    with s3_helper.s3_server(tmp_path_factory.mktemp("s3")) as (env, _):
        yield env


@pytest.fixture(scope="module")
def cluster(o200k_caches, s3):
    """A head and a second node, one CPU each: every build's tasks run on both."""
    from ray.cluster_utils import Cluster

    env = {**LOOPBACK, **(s3 or {})}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # before the nodes start: their workers inherit it (and the o200k caches)
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes()
        yield nodes.address
    finally:
        nodes.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def inkling_tokenizer(tmp_path_factory):
    if not (TEMPLATES / "inkling.jinja").exists():
        pytest.skip("Inkling's chat template is only in ../shared (beside the project in CI and dev sessions)")
    return str(save_stand_in_dir("inkling", tmp_path_factory.mktemp("inkling")))


def outputs(record) -> tuple[bytes, bytes]:
    return record.paths.parquet.read_bytes(), record.paths.record.read_bytes()


def local_and_ray(tmp_path, address, **options):
    options = {"source": "sample", "progress": False, **options}
    local = build(BuildConfig(out=str(tmp_path / "local"), workers=2, **options))
    clustered = build(BuildConfig(out=str(tmp_path / "ray"), ray=address, **options))
    return local, clustered


# (model, options, conversations per task): the whole sample with tasks that are not whole chunks, and the first rows
@pytest.mark.parametrize("model, options, task", [
    ("Qwen3.5-122B-A10B", {"rows": "all", "row_tokens": 4096}, "700"),
    ("gpt-oss-20b", {"rows": 48, "row_tokens": 2048}, "100"),
    ("Inkling-Small", {"rows": "all", "row_tokens": 1024}, None),
])
def test_a_ray_build_writes_the_local_builds_bytes(model, options, task, cluster, tmp_path, monkeypatch, request):
    if task:
        monkeypatch.setenv("SFTPACK_RAY_TASK", task)
    if model == "Inkling-Small":
        options["tokenizer"] = request.getfixturevalue("inkling_tokenizer")
    address = cluster
    if model == "gpt-oss-20b":  # --ray auto: the cluster this process belongs to, here by RAY_ADDRESS
        monkeypatch.setenv("RAY_ADDRESS", cluster)
        address = "auto"
    local, clustered = local_and_ray(tmp_path, address, model=model, **options)
    assert clustered.rows_sha256 == local.rows_sha256 and clustered.rows == local.rows > 0
    assert outputs(clustered) == outputs(local)
    assert clustered.paths.parquet.name == local.paths.parquet.name


def ray_tasks_running() -> list[int]:
    """Worker processes running an encoding task: Ray titles a worker ``ray::TASK`` while it runs one."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(b"ray::encode_range"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_a_task_whose_worker_is_killed_is_retried_with_the_same_bytes(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SFTPACK_RAY_TASK", "1024")  # the whole sample in 3 tasks of a second or more each
    killed: list[int] = []
    done = threading.Event()

    def kill_one_task():
        while not done.is_set() and not killed:
            for pid in ray_tasks_running():
                os.kill(pid, signal.SIGKILL)  # mid-task
                killed.append(pid)
                break
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one_task)
    killer.start()
    try:
        clustered = build(BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows="all", row_tokens=2048,
                                      out=str(tmp_path / "ray"), ray=cluster, progress=False))
    finally:
        done.set()
        killer.join()
    assert killed, "no encoding task was seen running"
    local = build(BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows="all", row_tokens=2048,
                              out=str(tmp_path / "local"), workers=2, progress=False))
    assert outputs(clustered) == outputs(local)


def released(lock: Path, timeout: float = 30.0) -> bool:
    """Whether the output lock is free within ``timeout``: the killed driver's rows writer process (which shares
    it) dies with the driver (PR_SET_PDEATHSIG), a moment later."""
    import fcntl

    deadline = time.monotonic() + timeout
    with open(lock, "a") as f:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(0.02)
                continue
            fcntl.flock(f, fcntl.LOCK_UN)
            return True
    return False


def test_a_driver_killed_mid_build_leaves_no_output_and_the_next_build_cleans_up(cluster, tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "sftpack", "build", "--model", "Qwen3.5-122B-A10B", "--source", "sample",
            "--rows", "all", "--row-tokens", "256", "--out", str(out), "--ray", cluster]
    env = {**os.environ, "PYTHONPATH": str(REPO), "SFTPACK_RAY_TASK": "256"}
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not list(out.glob(".*.parquet.tmp")) and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert driver.poll() is None, driver.stderr.read().decode()  # still building: its rows are being written
    assert list(out.glob(".*.parquet.tmp")), "no rows written in 240 s"
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    progress = driver.stderr.read().decode()
    driver.stderr.close()
    assert "sftpack build" in progress and "/3000 [" in progress  # the progress bar, on the driver's stderr
    assert all(released(lock) for lock in out.glob(".*.lock"))
    assert not [p.name for p in out.iterdir() if not p.name.startswith(".")]  # no output, only the temporaries
    # the next build (here on the cluster) removes the temporaries and the lock the killed one left
    again = build(BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows="all", row_tokens=256, out=str(out),
                              ray=cluster, progress=False))
    assert sorted(out.iterdir()) == sorted([again.paths.parquet, again.paths.record])
    local = build(BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows="all", row_tokens=256,
                              out=str(tmp_path / "local"), workers=2, progress=False))
    assert outputs(again) == outputs(local)


def test_an_s3_source_is_read_by_every_node_and_gives_the_local_builds_bytes(cluster, s3, tmp_path):
    if s3 is None:
        pytest.skip("needs moto[server] and s3fs")
    options = {"model": "Qwen3.5-122B-A10B", "rows": 24, "row_tokens": 2048, "progress": False}
    url = "s3://sft/sample/"  # a directory of parquet shards, read in name order
    local, clustered = local_and_ray(tmp_path, cluster, source=url, **options)
    assert outputs(clustered) == outputs(local)
    from_file = build(BuildConfig(source="sample", out=str(tmp_path / "file"), workers=1, **options))
    assert clustered.rows_sha256 == from_file.rows_sha256  # the shards hold the sample's rows, in its order
    assert clustered.dataset.name == url and clustered.dataset.source == "url"
    assert clustered.dataset.revision.startswith("listing ")  # the shards' names and ETags, hashed
