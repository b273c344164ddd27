"""Hostile input: full disks, directories where outputs go, strings that are not UTF-8, Arrow view
types, hostile YAML, hostile stdin, rows files with ids no tokenizer knows or content that drives a terminal,
corrupt parquet footers, sources cut short while the build reads them. Each gives a defined outcome: a counted
skip, a build, or exit 2 with one printable line - never a traceback."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import cli_outcomes
from helpers.cli_outcomes import CONTROL, cli, offline_vocab_fixture, one_error_line
from helpers.outputs import built
from sftpack.cli import main

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"
STEM = f"{NAME}-sample-rowtokens64-rows2"  # the files of build_argv's build of the sample (64-token rows, 2 rows)
FINAL = {f"{STEM}.parquet", f"{STEM}.build.yaml"}
FINAL_64 = {f"{NAME}-sample-rows64.parquet", f"{NAME}-sample-rows64.build.yaml"}  # 64 rows of the sample's stream
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}


offline_vocab = offline_vocab_fixture(MODEL)


def conversation(i: int, words: int = 30) -> dict:
    text = " ".join(f"word{(i * 7 + k) % 97}" for k in range(words))
    return {"id": f"c{i}", "messages": [{"role": "user", "content": f"Question {i}: {text}?"},
                                        {"role": "assistant", "content": f"Answer {i}: {text}."}]}


def build_argv(source, out, *extra, rows=2, row_tokens=64, workers=1):
    return ["build", "--model", MODEL, "--source", source, "--rows", rows, "--row-tokens", row_tokens, "--out", out,
            "--workers", workers, "--no-progress", *extra]


def names(out: Path) -> set[str]:
    return set(os.listdir(out)) if out.exists() else set()


def assert_nothing_written(out: Path) -> None:
    left = names(out)
    assert not [n for n in left if n.startswith(NAME) and n.endswith((".parquet", ".build.yaml", ".tmp"))], left


def record_of(out: Path) -> dict:
    return cli_outcomes.record_of(out)


# ----------------------------------------------------------------------------------------------------------
# Item 2: a full disk; item 3: a directory where an output file goes


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KB tmpfs (a build of 64 sample rows needs ~750 KB); skipped where mounting is not allowed."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode(errors='replace').strip()})")
    yield where
    subprocess.run(["umount", str(where)], check=True)


def test_full_disk_is_one_line_naming_the_directory_and_keeps_old_outputs(small_tmpfs, capsys):
    out = small_tmpfs / "out"
    out.mkdir()
    old = {name: f"old {name}\n".encode() for name in FINAL_64}
    for name, data in old.items():
        (out / name).write_bytes(data)
    rc, stdout, err = cli(capsys, *build_argv("sample", out, "--overwrite", rows=64, row_tokens=8192))
    assert rc == 2
    line = one_error_line(err, "no space left on the device", f"--out {out}", "bytes free", "nothing written")
    free = int(re.search(r"([\d,]+) bytes free", line).group(1).replace(",", ""))
    assert free == os.statvfs(out).f_bavail * os.statvfs(out).f_frsize > 0  # the temporaries' space is back
    assert stdout == ""
    assert {name: (out / name).read_bytes() for name in FINAL_64} == old  # --overwrite replaces only at the end
    assert not [n for n in names(out) if n.endswith(".tmp")]


@pytest.mark.parametrize("which", sorted(FINAL))
def test_directory_where_an_output_goes(which, tmp_path, capsys):
    out = tmp_path / "out"
    (out / which).mkdir(parents=True)
    (out / which / "keep").write_text("x")
    rc, stdout, err = cli(capsys, *build_argv("sample", out, "--overwrite"))
    assert rc == 2
    one_error_line(err, f"--out {out}", which, "is not a file")
    assert (out / which / "keep").read_text() == "x"
    assert not [n for n in names(out) if n.endswith(".tmp")]


# ----------------------------------------------------------------------------------------------------------
# Item 4: strings that are not UTF-8; item 5: view and large types


def _strings(values: list[bytes], kind=pa.string()) -> pa.Array:
    """A string array holding exactly these bytes, UTF-8 or not (as writers that do not validate make them)."""
    offsets = np.concatenate(([0], np.cumsum([len(v) for v in values]))).astype(np.int32)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])


def _conversations_table(rows: list[dict], bad_content: dict[int, bytes] = {}, bad_id: dict[int, bytes] = {}) -> pa.Table:
    contents, roles, offsets = [], [], [0]
    for k, row in enumerate(rows):
        for j, m in enumerate(row["messages"]):
            roles.append(m["role"].encode())
            contents.append(bad_content[k] if j == 1 and k in bad_content else m["content"].encode())
        offsets.append(len(roles))
    struct = pa.StructArray.from_arrays([_strings(roles), _strings(contents)], ["role", "content"])
    messages = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)
    ids = _strings([bad_id.get(k, row["id"].encode()) for k, row in enumerate(rows)])
    return pa.table({"id": ids, "messages": messages})


@pytest.mark.parametrize("where", ["content", "id"])
def test_strings_not_utf8_are_a_counted_skip_or_strict_error(where, tmp_path, capsys):
    rows = [conversation(i) for i in range(200)]
    bad = {k: b"caf\xe9 \xff\xfe" for k in range(0, 200, 10)}  # Latin-1 and stray bytes in every 10th row
    table = _conversations_table(rows, **({"bad_content": bad} if where == "content" else {"bad_id": bad}))
    source = tmp_path / "src.parquet"
    pq.write_table(table, source)
    rc, stdout, err = cli(capsys, *build_argv(source, tmp_path / "out", rows=2, row_tokens=2048))
    assert rc == 0, err
    reached = record_of(tmp_path / "out")["counts"]["source_rows_reached"]
    walk = np.random.default_rng(42).permutation(200)  # SPEC rule 1: the order the build reads the rows in
    expected = sum(1 for k in walk[:reached] if k % 10 == 0)
    assert expected >= 1
    assert record_of(tmp_path / "out")["counts"]["skipped"] == {"invalid_unicode": expected}
    first_bad = next(int(k) for k in walk if k % 10 == 0)
    rc, stdout, err = cli(capsys, *build_argv(source, tmp_path / "strict", "--strict", rows=2, row_tokens=2048))
    assert rc == 2
    one_error_line(err, "--strict", f"'sftpack:source-row-{first_bad}'", "invalid_unicode", "not valid UTF-8")
    assert_nothing_written(tmp_path / "strict")


def test_not_utf8_row_is_reached_and_counted(tmp_path, capsys):
    rows = [conversation(i) for i in range(20)]
    source = tmp_path / "src.parquet"
    pq.write_table(_conversations_table(rows, bad_content={3: b"\xc3\x28"}), source)  # an invalid 2-byte sequence
    rc, _, err = cli(capsys, *build_argv(source, tmp_path / "out", rows=1, row_tokens=1 << 20))  # needs all rows
    assert rc == 2  # 19 conversations do not fill a 1M-token row: the source is exhausted - and says why
    one_error_line(err, "source exhausted after 0 rows", "1 of the 20 conversations reached were skipped",
                   "invalid_unicode 1")


def _view_table(rows: list[dict], views: bool) -> pa.Table:
    string = pa.string_view() if views else pa.string()
    struct = pa.struct([("role", string), ("content", string)])
    messages = pa.array([r["messages"] for r in rows], pa.list_view(struct) if views else pa.list_(struct))
    return pa.table({"id": pa.array([r["id"] for r in rows], string), "messages": messages})


def _write_arrow(table: pa.Table, path: Path) -> Path:
    with pa.OSFile(str(path), "wb") as f:
        with pa.ipc.new_file(f, table.schema) as writer:
            writer.write_table(table, max_chunksize=16)
    return path


@pytest.mark.skipif(not hasattr(pa, "string_view"), reason="this pyarrow has no view types")
def test_view_and_large_types_build_the_same_rows(tmp_path, capsys):
    rows = [conversation(i, words=20 + i % 13) for i in range(60)]
    plain = _write_arrow(_view_table(rows, views=False), tmp_path / "plain.arrow")
    views = _write_arrow(_view_table(rows, views=True), tmp_path / "views.arrow")
    large = tmp_path / "large.parquet"
    big = pa.struct([("role", pa.large_string()), ("content", pa.large_string())])
    pq.write_table(pa.table({"id": pa.array([r["id"] for r in rows], pa.large_string()),
                             "messages": pa.array([r["messages"] for r in rows], pa.large_list(big))}), large)
    hashes = {}
    for source in (plain, views, large):
        out = tmp_path / f"out-{source.name}"
        rc, _, err = cli(capsys, *build_argv(source, out, rows=4, row_tokens=512))
        assert rc == 0, err
        hashes[source.name] = record_of(out)["rows_sha256"]
    assert hashes["views.arrow"] == hashes["plain.arrow"] == hashes["large.parquet"], hashes


# ----------------------------------------------------------------------------------------------------------
# Item 6: YAML given to verify (and the build record inspect reads beside a parquet)


def _laughs(levels: int = 9) -> str:
    text = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for i in range(1, levels):
        text += f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n"
    return text + f"rows_sha256: *l{levels - 1}\n"


HOSTILE_YAML = {
    "billion-laughs": (_laughs(), "aliases expand to more than"),
    "deep-flow": ("rows_sha256: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested deeper than 64 levels"),
    "deep-block": ("rows_sha256:\n" + "".join(" " * i + "- \n" for i in range(1, 200)), "nested deeper than 64 levels"),
    "huge-integer": ("rows_sha256: " + "a" * 64 + "\nrows: " + "9" * 5000 + "\n", "an integer of 5,000 digits"),
    "oversized": ("rows_sha256: " + "a" * 64 + "\nnote: '" + "x" * (5 << 20) + "'\n", "more than a recipe or build record"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_hostile_yaml_is_refused_in_one_line(case, tmp_path, capsys):
    text, needle = HOSTILE_YAML[case]
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text)
    rc, stdout, err = cli(capsys, "verify", recipe, "--rows", tmp_path / "absent.parquet")
    assert rc == 2
    line = one_error_line(err, str(recipe), "refused", needle)
    assert len(line) < 300  # the error never spells out the document
    assert stdout == ""


def test_hostile_build_record_beside_a_parquet_is_ignored_by_inspect(tmp_path, capsys):
    rc, _, err = cli(capsys, *build_argv("sample", tmp_path / "out", rows=2, row_tokens=256))
    assert rc == 0, err
    (built(tmp_path / "out", ".build.yaml")).write_text(_laughs())
    rc, stdout, err = cli(capsys, "inspect", built(tmp_path / "out", ".parquet"))
    assert rc == 0, err
    assert "2 x 256 tokens" in stdout and "Traceback" not in err


# ----------------------------------------------------------------------------------------------------------
# Item 7: encode's stdin


def _encode(monkeypatch, capsys, data: bytes) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    return cli(capsys, "encode", "--model", MODEL)


def test_encode_refuses_deep_json_in_one_line(monkeypatch, capsys):
    rc, stdout, err = _encode(monkeypatch, capsys, b"[" * 100_000 + b"]" * 100_000)
    assert rc == 2 and stdout == ""
    one_error_line(err, "stdin is not usable JSON (nested too deeply)")


def test_encode_refuses_other_encodings_in_one_line(monkeypatch, capsys):
    rc, stdout, err = _encode(monkeypatch, capsys, '[{"role": "user", "content": "café"}]'.encode("latin-1"))
    assert rc == 2 and stdout == ""
    one_error_line(err, "stdin is not UTF-8")


def test_encode_accepts_a_byte_order_mark_as_build_does(monkeypatch, capsys):
    conv = json.dumps(conversation(1)["messages"]).encode()
    rc, plain, err = _encode(monkeypatch, capsys, conv)
    assert rc == 0, err
    rc, with_bom, err = _encode(monkeypatch, capsys, b"\xef\xbb\xbf" + conv)
    assert rc == 0, err
    assert json.loads(with_bom) == json.loads(plain) and json.loads(plain)["tokens"]


# ----------------------------------------------------------------------------------------------------------
# Items 8, 9, 11: rows files that inspect must show safely, or refuse like hash and verify


@pytest.fixture(scope="module")
def hostile_rows(tmp_path_factory, offline_vocab):
    """A real build whose content and ids hold terminal escapes and fake markers."""
    tmp = tmp_path_factory.mktemp("hostile-rows")
    evil = " ".join(["\x1b[2J\x1b[H", "\x1b]0;owned\x07", "\x1b]8;;http://x.example\x1b\\link\x1b]8;;\x1b\\",
                     "ok\r\x1b[K", "⟦not supervised⟧", "⟨EOS fake⟩", "\u202egnp.exe", "\x9b31m"])
    rows = [{"id": f"id{i}\x1b]0;owned\x07", "messages": [{"role": "user", "content": f"user {evil} text {i}"},
                                                          {"role": "assistant", "content": f"reply {evil} {i}"}]}
            for i in range(12)]
    source = tmp / "evil.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp / "out"
    argv = [str(a) for a in build_argv(source, out, rows=2, row_tokens=256)]
    assert main(argv) == 0
    return built(out, ".parquet")


def test_inspect_escapes_control_characters_and_markers(hostile_rows, capsys):
    from sftpack.rows import read_provenance, read_row

    rc, stdout, err = cli(capsys, "inspect", hostile_rows, "--row", 0, "--color", "never")
    assert rc == 0, err
    assert not CONTROL.search(stdout) and "\u202e" not in stdout, repr(stdout[:500])
    body = stdout.split("\n", 2)[2]  # after the header and the legend (which show the markers themselves)
    _, mask = read_row(hostile_rows, 0)
    runs = int(np.count_nonzero(np.diff(np.concatenate(([0], mask.astype(np.int8)))) == 1))
    assert runs >= 2 and body.count("⟦") == body.count("⟧") == runs  # markers only where the mask has runs
    eos = len(read_provenance(hostile_rows, 0).conversation_ids) - 1  # between the conversations of the row
    assert eos >= 1 and body.count("⟨EOS") == len(re.findall(r"^⟨EOS .*⟩$", body, flags=re.M)) == eos
    assert "\\u27e6not supervised\\u27e7" in body and "\\u27e8EOS fake\\u27e9" in body
    assert "ok\\r\\x1b[K" in body and "\\u202egnp.exe" in body and "\\x9b31m" in body  # shown, escaped
    for cid in read_provenance(hostile_rows, 0).conversation_ids:  # ids too: "id3<ESC>]0;owned<BEL>"
        assert f"── conversation {cid[:-10]}\\x1b]0;owned\\x07 (tokens " in body


def _rows_file_with(tmp_path: Path, source: Path, tokens_at: dict[int, int]) -> Path:
    table = pq.read_table(source)
    tokens = np.frombuffer(table.column("tokens")[0].as_py(), "<i4").copy()
    for position, value in tokens_at.items():
        tokens[position] = value
    column = table.column("tokens").to_pylist()
    column[0] = tokens.tobytes()
    path = tmp_path / f"{NAME}.parquet"
    table = table.set_column(0, "tokens", pa.array(column, pa.binary())).replace_schema_metadata(table.schema.metadata)
    pq.write_table(table, path)
    return path


def test_inspect_shows_ids_the_tokenizer_does_not_know(hostile_rows, tmp_path, capsys):
    path = _rows_file_with(tmp_path, hostile_rows, {3: -1, 4: 2**31 - 1, 5: 300_000})
    rc, stdout, err = cli(capsys, "inspect", path, "--row", 0, "--model", MODEL, "--color", "never")
    assert rc == 0, err
    for token in (-1, 2**31 - 1, 300_000):
        assert f"⟨id {token}: not in the tokenizer⟩" in stdout
    rc, stdout, err = cli(capsys, "inspect", path, "--row", 0, "--model", MODEL, "--json")
    assert rc == 0, err
    view = json.loads(stdout)
    assert [s["unknown_id"] for s in view["segments"] if "unknown_id" in s] == [-1, 2**31 - 1, 300_000]
    rc, stdout, err = cli(capsys, "hash", path)
    assert rc == 0, err  # the file is well-formed: hash and verify read it


def test_diff_escapes_control_characters_and_markers(hostile_rows, tmp_path, capsys):
    from sftpack.checks.terminal import ANSI

    other = _rows_file_with(tmp_path, hostile_rows, {140: 300_000})  # after row 0's EOS: a boundary in the window
    rc, stdout, err = cli(capsys, "diff", hostile_rows, other, "--model", MODEL, "--color", "never")
    assert rc == 1, err
    assert not CONTROL.search(stdout) and "\u202e" not in stdout, repr(stdout[:500])
    report, _, decoded = stdout.partition("\n\n")  # the decoded windows follow the first blank line
    assert not re.search("[⟦⟧⟨⟩]", report), report  # ids and token texts in the report: escaped, no markers
    assert "conversations A   id0\\x1b]0;owned\\x07 (row 0 tokens 0..131) │ ▶id7\\x1b]0;owned\\x07 (row 0" in report
    assert "\\u27e6not supervised\\u27e7" in decoded and "\\u27e8EOS fake\\u27e9" in decoded
    assert "ok\\r\\x1b[K" in decoded and "\\u202egnp.exe" in decoded and "\\x9b31m" in decoded  # shown, escaped
    windows = re.split(r"^  [AB], row 0 tokens .*$", decoded, flags=re.M)[1:]  # after each legend (it shows markers)
    assert len(windows) == 2
    for body in windows:  # A's and B's: markers only where the renderer puts them
        assert body.count("⟦") == body.count("⟧") >= 1
        assert body.count("⟨EOS") == len(re.findall(r"^⟨EOS .*⟩$", body, flags=re.M)) == 1
        assert "\n── conversation id7\\x1b]0;owned\\x07 ──\n" in body
    assert decoded.count("⟨id 300000: not in the tokenizer⟩") == 1  # B's unknown id, as inspect shows it
    rc, coloured, err = cli(capsys, "diff", hostile_rows, other, "--model", MODEL, "--color", "always")
    assert rc == 1, err
    for code in ANSI.values():  # the only escapes left are the renderer's own colours
        coloured = coloured.replace(code, "")
    assert not CONTROL.search(coloured) and "\u202e" not in coloured, repr(coloured[:500])


def _damaged(tmp_path: Path, source: Path, how: str) -> Path:
    table = pq.read_table(source)
    column = {"null-tokens": "tokens", "short-row": "tokens", "mask-2": "loss_mask"}[how]
    values = table.column(column).to_pylist()
    if how == "null-tokens":
        values[0] = None
    elif how == "short-row":
        values[0] = values[0][:-4]
    else:
        values[0] = values[0][:10] + b"\x02" + values[0][11:]
    path = tmp_path / f"{how}.parquet"
    i = table.column_names.index(column)
    pq.write_table(table.set_column(i, column, pa.array(values, pa.binary())).replace_schema_metadata(table.schema.metadata), path)
    return path


@pytest.mark.parametrize("how", ["null-tokens", "short-row", "mask-2"])
def test_every_reader_refuses_what_hash_refuses(how, hostile_rows, tmp_path, capsys):
    path = _damaged(tmp_path, hostile_rows, how)
    rc, _, err = cli(capsys, "hash", path)
    assert rc == 2
    refusal = one_error_line(err).removeprefix("sftpack: error: ")
    for argv in (["inspect", path], ["inspect", path, "--json"], ["inspect", path, "--row", 0, "--model", MODEL]):
        rc, stdout, err = cli(capsys, *argv)
        assert rc == 2, (argv, stdout)
        assert one_error_line(err).removeprefix("sftpack: error: ") == refusal, argv


def test_corrupt_footer_is_one_printable_line_everywhere(hostile_rows, tmp_path, capsys):
    data = bytearray(hostile_rows.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[len(data) - 8 - footer + 5] ^= 0xFF  # a flipped byte in the thrift footer
    path = tmp_path / "flipped.parquet"
    path.write_bytes(bytes(data))
    record = built(hostile_rows.parent, ".build.yaml")
    for argv in (["hash", path], ["inspect", path], ["verify", record, "--rows", path]):
        rc, _, err = cli(capsys, *argv)
        assert rc == 2, argv
        one_error_line(err, str(path))


# ----------------------------------------------------------------------------------------------------------
# Item 12: a source cut short while the build reads it


@pytest.fixture(scope="module")
def long_rows() -> list[dict]:
    return [conversation(i, words=60 + (i * 37) % 300) for i in range(2400)]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("kind", ["jsonl", "arrow"])
def test_source_cut_short_while_reading(kind, workers, long_rows, tmp_path):
    source = tmp_path / f"src.{kind}"
    if kind == "jsonl":
        source.write_text("".join(json.dumps(r) + "\n" for r in long_rows))
    else:
        _write_arrow(pa.Table.from_pylist(long_rows), source)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(source), "--rows", "300",
            "--row-tokens", "4096", "--workers", str(workers), "--out", str(out)]
    proc = subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        err = b""
        # The progress bar's first line: the source is open (its size noted) and the rows are being made. The cut
        # comes at once: waiting for a row written lets a fast build finish first (300 rows take ~0.1 s here).
        while not re.search(rb" \d+/300 ", err):
            chunk = proc.stderr.read1(65536)
            assert chunk, f"the build ended before its progress bar: {err.decode(errors='replace')}"
            err += chunk
        # The parent is frozen while the file is cut, so the build cannot complete in between. Only the parent: a
        # stop sent to the process group while the parent forks a worker can reach the new worker after the
        # continue does (seen: a worker stopped for good in its first instruction, and the build waiting on it).
        os.kill(proc.pid, signal.SIGSTOP)
        os.truncate(source, source.stat().st_size // 3)
        os.kill(proc.pid, signal.SIGCONT)
        stdout, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, (err + rest).decode(errors="replace")[-2000:]
    text = re.sub(r".*\r", "", (err + rest).decode())  # progress-bar redraws
    one_error_line(text, f"source file {source} changed while being read", "bytes when opened")
    assert_nothing_written(out)


def test_source_changed_after_its_last_read_is_refused(offline_vocab, tmp_path):
    # every row the build needs is read before the change: only the check at the end of the build can see it
    from sftpack.builder.config import BuildConfig
    from sftpack.builder.pipeline import build
    from sftpack.sources.base import SourceChanged, SourceInfo
    from sftpack.sources.memory import ListSource

    class ChangesWhenRead(ListSource):
        reads = 0

        def take(self, indices):
            self.reads += 1
            return super().take(indices)

        def changed(self):
            return "source file rows.jsonl changed while being read (10 bytes when opened, 5 now)" if self.reads else None

    source = ChangesWhenRead([conversation(i) for i in range(400)], SourceInfo("rows.jsonl", "file"))
    out = tmp_path / "out"
    with pytest.raises(SourceChanged, match=r"rows\.jsonl changed while being read \(10 bytes when opened, 5 now\)"):
        build(BuildConfig(model=MODEL, source="rows.jsonl", rows=8, row_tokens=512, out=str(out), workers=1,
                          progress=False), vocab=offline_vocab, source=source)
    assert source.reads > 0
    assert_nothing_written(out)
