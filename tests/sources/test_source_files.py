"""Sources that are not plain UTF-8 files: a FIFO, a character device or a socket as --source is refused in one
line without being opened (no hang); UTF-16 and UTF-32 JSONL is refused in one line naming the encoding; a line
holding only a byte-order mark (and whitespace) is not a source row."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from helpers.outputs import built

MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"
REPO = Path(__file__).resolve().parents[2]

offline_vocab = offline_vocab_fixture(MODEL)


def _lines(n: int = 30) -> list[str]:
    return [json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": f"question {i} é 世界"},
                                                     {"role": "assistant", "content": f"answer {i}"}]},
                       ensure_ascii=False) for i in range(n)]


def _build(capsys, source, out, *extra):
    return cli(capsys, "build", "--model", MODEL, "--source", source, "--rows", 2, "--row-tokens", 64, "--out", out,
               "--workers", 1, "--no-progress", *extra)


def _record(out: Path) -> dict:
    return yaml.safe_load(built(out, ".build.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["fifo.jsonl", "fifo.parquet", "fifo.json", "fifo"])
def test_fifo_source_is_refused_without_a_hang(name, tmp_path):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    writer_done = threading.Event()

    def writer():  # a writer that finishes: a second open of the FIFO would wait for another one forever
        try:
            fd = os.open(fifo, os.O_WRONLY)
            os.write(fd, ("\n".join(_lines()) + "\n").encode())
            os.close(fd)
        except OSError:
            pass
        writer_done.set()

    threading.Thread(target=writer, daemon=True).start()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(fifo), "--rows",
                           "1", "--row-tokens", "64", "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress"],
                          env=env, capture_output=True, text=True, timeout=120)
    if not writer_done.is_set():  # release the writer thread (its open blocks until a reader comes)
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    assert done.returncode == 2, done.stderr
    one_error_line(done.stderr, f"--source {fifo}", "not a regular file")


def test_fifo_among_parquet_shards_is_refused(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    shards = tmp_path / "shards"
    shards.mkdir()
    rows = [json.loads(line) for line in _lines()]
    pq.write_table(pa.Table.from_pylist(rows), shards / "part-0.parquet")
    os.mkfifo(shards / "part-1.parquet")  # never opened: no writer is needed
    rc, _, err = _build(capsys, shards, tmp_path / "out")
    assert rc == 2
    one_error_line(err, f"--source {shards / 'part-1.parquet'}", "not a regular file (a FIFO)")


def test_device_and_socket_sources_are_refused(tmp_path, capsys):
    sock_path = tmp_path / "s.jsonl"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for source in ("/dev/null", "/dev/zero", sock_path):
            rc, _, err = _build(capsys, source, tmp_path / "out")
            assert rc == 2
            one_error_line(err, f"--source {source}", "not a regular file")
    finally:
        server.close()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_utf16_and_utf32_sources_are_refused_naming_the_encoding(encoding, suffix, tmp_path, capsys):
    lines = _lines()
    text = ("\n".join(lines) + "\n") if suffix == ".jsonl" else json.dumps([json.loads(line) for line in lines])
    source = tmp_path / f"s{suffix}"
    source.write_bytes(text.encode(encoding))
    rc, stdout, err = _build(capsys, source, tmp_path / "out")
    assert rc == 2 and stdout == ""
    one_error_line(err, str(source), encoding.upper()[:6], "UTF-8")
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


@pytest.mark.parametrize("where", ["first", "middle", "last", "every other"])
def test_bom_only_lines_are_not_rows(where, tmp_path, capsys):
    lines = _lines()
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bom = "\ufeff"
    if where == "first":
        hostile = [bom, *lines]
    elif where == "middle":
        hostile = lines[:10] + [bom, bom + "  "] + lines[10:]
    elif where == "last":
        hostile = [*lines, bom + "\t"]
    else:
        hostile = [x for line in lines for x in (line, bom)]
    source = tmp_path / "bom.jsonl"
    source.write_text("\n".join(hostile) + "\n", encoding="utf-8")
    rc, _, err = _build(capsys, plain, tmp_path / "a", "--rows", "all")
    assert rc == 0, err
    rc, _, err = _build(capsys, source, tmp_path / "b", "--rows", "all")
    assert rc == 0, err
    a, b = _record(tmp_path / "a"), _record(tmp_path / "b")
    assert b["dataset"]["source_rows"] == a["dataset"]["source_rows"] == len(lines)
    assert b["counts"]["skipped"] == {} and b["rows_sha256"] == a["rows_sha256"]
