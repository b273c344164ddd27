"""A source in object storage (``--source s3://...``), against an S3 server on 127.0.0.1: built from, it gives the
rows of the same file read locally and the record names the URL and the object's version; a changed object is a new
version (a new copy), a missing one or a missing file-system package is one line."""

from __future__ import annotations

import sys

import pytest

from helpers import s3 as s3_helper
from helpers.rows_fixtures import offline
from sftpack.base.errors import UsageError
from sftpack.builder.config import BuildConfig
from sftpack.builder.pipeline import build
from sftpack.cli import main
from sftpack.sources import open_source

MODEL = "Qwen3.5-122B-A10B"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    if not s3_helper.available():
        pytest.skip("needs moto[server] and s3fs")
    with s3_helper.s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture
def s3_env(s3, monkeypatch, tmp_path):
    env, client = s3
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "cache"))
    return client


def test_a_build_from_s3_has_the_rows_of_the_same_file_read_here_and_records_the_url(s3_env, tmp_path):
    options = {"model": MODEL, "rows": 16, "row_tokens": 2048, "progress": False, "workers": 1}
    with offline():
        remote = build(BuildConfig(source="s3://sft/sample.parquet", out=str(tmp_path / "s3"), **options))
        local = build(BuildConfig(source="sample", out=str(tmp_path / "local"), **options))
    assert remote.rows_sha256 == local.rows_sha256
    etag = s3_env.head_object(Bucket="sft", Key="sample.parquet")["ETag"].strip('"')
    assert (remote.dataset.name, remote.dataset.source, remote.dataset.revision) == (
        "s3://sft/sample.parquet", "url", f"ETag {etag}")
    copies = list((tmp_path / "cache").glob("sources/*/sample.parquet"))
    assert len(copies) == 1  # copied once; a second open reads the copy
    assert len(open_source("s3://sft/sample.parquet")) == 3000
    assert list((tmp_path / "cache").glob("sources/*/sample.parquet")) == copies


def test_a_directory_of_shards_reads_as_one_source_in_name_order(s3_env):
    source = open_source("s3://sft/sample/")
    whole = open_source("sample")
    assert len(source) == len(whole) == 3000
    assert source.take([0, 1500, 2999]) == whole.take([0, 1500, 2999])
    assert source.info.revision.startswith("listing ")


def test_a_changed_object_is_another_version(s3_env, tmp_path):
    import pyarrow.parquet as pq

    from sftpack.base.bundled import SAMPLE_PATH

    small = tmp_path / "small.parquet"
    pq.write_table(pq.read_table(SAMPLE_PATH).slice(0, 100), small)
    s3_env.upload_file(str(SAMPLE_PATH), "sft", "changing.parquet")
    before = open_source("s3://sft/changing.parquet")
    s3_env.upload_file(str(small), "sft", "changing.parquet")
    after = open_source("s3://sft/changing.parquet")
    assert (len(before), len(after)) == (3000, 100)
    assert before.info.revision != after.info.revision


def test_a_missing_object_or_file_system_is_one_line(s3_env, tmp_path, monkeypatch, capsys):
    argv = ["build", "--model", MODEL, "--source", "s3://sft/nothing.parquet", "--rows", "2", "--out",
            str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == "sftpack: error: --source s3://sft/nothing.parquet: no such object"
    import fsspec  # noqa: F401

    monkeypatch.setitem(sys.modules, "s3fs", None)  # as where s3fs is not installed: the import fails
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)  # the class fsspec imported
    with pytest.raises(UsageError, match=r"^--source s3://sft/sample.parquet: cannot open it here \(.*s3fs"):
        open_source("s3://sft/sample.parquet")


def test_verify_rebuild_builds_the_rows_again_from_the_url_the_record_names(s3_env, tmp_path, capsys):
    out = tmp_path / "out"
    with offline():
        record = build(BuildConfig(model=MODEL, source="s3://sft/sample.parquet", rows=8, row_tokens=1024,
                                   out=str(out), workers=1, progress=False))
        assert main(["verify", str(record.paths.record), "--rebuild"]) == 0, capsys.readouterr()
    assert "--source s3://sft/sample.parquet" in capsys.readouterr().out
