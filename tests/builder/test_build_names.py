"""A build whose parameters are not the published ones never carries the published name as its own.

The published stream of Qwen3.5-122B-A10B is `qwen35-tulu3-fixed8192-v1` (the pinned Tulu 3 mixture, seed 42,
8,192-token rows, 6,400 rows). Another source (the bundled sample, a local file, another hub dataset), seed or row
length is another stream: its name says so, inside the rows file, in the record and in the file names. Another row count keeps the stream's name inside (the first N rows of a build are the rows of
`--rows N`) and the file names state the count, so the pinned sample build's parquet bytes stay as they were.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import yaml

import sftpack
from helpers.cli_outcomes import cli, one_error_line, offline_vocab_fixture

MODEL, PUBLISHED = "Qwen3.5-122B-A10B", "qwen35-tulu3-fixed8192-v1"
offline = offline_vocab_fixture(MODEL)


def build_files(capsys, tmp_path, *flags):
    rc, out, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--out", tmp_path, "--workers", "1",
                       "--no-progress", *flags)
    assert rc == 0, err
    return sorted(p.name for p in tmp_path.iterdir()), out


def name_inside(parquet) -> str:
    metadata = pq.read_schema(parquet).metadata
    names = set(pq.read_table(parquet, columns=["metadata"]).column("metadata").combine_chunks().field("build").to_pylist())
    assert names == {metadata[b"sftpack.build"].decode()}
    return names.pop()


@pytest.mark.parametrize("flags, name", [
    ((), f"{PUBLISHED}-sample"),
    (("--seed", "7"), f"{PUBLISHED}-sample-seed7"),
    (("--row-tokens", "4096"), f"{PUBLISHED}-sample-rowtokens4096"),
    (("--seed", "7", "--row-tokens", "4096"), f"{PUBLISHED}-sample-seed7-rowtokens4096"),
])
def test_another_stream_is_named_for_its_difference_inside_and_out(capsys, tmp_path, flags, name):
    files, _ = build_files(capsys, tmp_path, "--rows", "2", *flags)
    assert files == [f"{name}-rows2.build.yaml", f"{name}-rows2.parquet"]
    assert name_inside(tmp_path / f"{name}-rows2.parquet") == name
    record = yaml.safe_load((tmp_path / f"{name}-rows2.build.yaml").read_text(encoding="utf-8"))
    assert record["name"] == name != PUBLISHED


def test_another_row_count_keeps_the_stream_name_inside_and_states_the_count_in_the_file_names(capsys, tmp_path):
    files, _ = build_files(capsys, tmp_path, "--rows", "3")
    sample = f"{PUBLISHED}-sample"
    assert files == [f"{sample}-rows3.build.yaml", f"{sample}-rows3.parquet"]
    assert name_inside(tmp_path / f"{sample}-rows3.parquet") == sample
    # the first 3 rows of a 5-row build are these rows
    five, _ = build_files(capsys, tmp_path / "five", "--rows", "5")
    three = sftpack.read_rows(tmp_path / f"{sample}-rows3.parquet")
    assert (sftpack.read_rows(tmp_path / "five" / f"{sample}-rows5.parquet")[0][:3] == three[0]).all()


def test_a_local_file_is_named_as_one_and_recorded_by_its_sha256(capsys, tmp_path):
    import hashlib
    import json

    from helpers.rows_fixtures import conversations

    source = tmp_path / "mine.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in conversations()), encoding="utf-8")
    rc, out, err = cli(capsys, "build", "--model", MODEL, "--source", source, "--rows", "1", "--row-tokens", "256",
                       "--out", tmp_path / "out", "--workers", "1", "--no-progress")
    assert rc == 0, err
    name = f"{PUBLISHED}-local-rowtokens256"
    assert name_inside(tmp_path / "out" / f"{name}-rows1.parquet") == name
    record = yaml.safe_load((tmp_path / "out" / f"{name}-rows1.build.yaml").read_text(encoding="utf-8"))
    assert record["dataset"]["source"] == "file" and record["dataset"]["name"] == "mine.jsonl"
    assert record["dataset"]["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()


@pytest.mark.parametrize("source", ["sample", "mine.jsonl"])
def test_the_published_name_given_explicitly_for_another_source_is_refused(capsys, tmp_path, source):
    if source != "sample":
        (tmp_path / source).write_text('{"messages": [{"role": "user", "content": "a"}]}\n', encoding="utf-8")
        source = tmp_path / source
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", source, "--rows", "2", "--name", PUBLISHED,
                     "--out", tmp_path / "out", "--no-progress")
    assert rc == 2
    one_error_line(err, f"--name {PUBLISHED} is the published build name, but --source from ", "these are other rows")
    assert not (tmp_path / "out").exists()


def test_the_published_name_given_explicitly_for_another_stream_is_refused(capsys, tmp_path):
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "2", "--seed", "7",
                     "--name", PUBLISHED, "--out", tmp_path, "--no-progress")
    assert rc == 2
    one_error_line(err, "--name", PUBLISHED, "--seed 7", "42")
    assert not list(tmp_path.iterdir())


def test_an_explicit_name_is_used_as_given(capsys, tmp_path):
    files, _ = build_files(capsys, tmp_path, "--rows", "2", "--seed", "7", "--name", "mine")
    assert files == ["mine.build.yaml", "mine.parquet"]
    assert name_inside(tmp_path / "mine.parquet") == "mine"
