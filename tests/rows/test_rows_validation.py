"""One validation of a rows file, shared by every reader: duplicated column names, loss-mask values other than 0
and 1 (in any row), and provenance that does not fit its row (a start past the row's end, negative starts, lengths
or offsets, lists of different lengths) are refused by ``hash``, ``inspect`` (summary and ``--row K`` for any K),
``diff``, ``verify``, ``loss`` and the rollout with the same one line, exit 2 - never a traceback, never an exit 0."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from helpers.outputs import built

MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"
ROW_TOKENS = 128

offline_vocab = offline_vocab_fixture(MODEL)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """70 rows of 128 tokens in two row groups (64 + 6), and the build record beside them."""
    from sftpack.cli import main

    out = tmp_path_factory.mktemp("good")
    rc = main(["build", "--model", MODEL, "--source", "sample", "--rows", "70", "--row-tokens", str(ROW_TOKENS),
              "--out", str(out), "--workers", "1", "--no-progress"])
    assert rc == 0
    return built(out, ".parquet")


def _rewrite(good, path, edit):
    table = pq.read_table(good)
    table = edit(table).replace_schema_metadata(table.schema.metadata)
    pq.write_table(table, path, row_group_size=64)
    record = built(good.parent, ".build.yaml")
    path.with_name(f"{path.stem}.build.yaml").write_bytes(record.read_bytes())
    return path


def _set_mask(row: int, position: int, value: int):
    def edit(table):
        masks = table.column("loss_mask").to_pylist()
        m = bytearray(masks[row])
        m[position] = value
        masks[row] = bytes(m)
        return table.set_column(table.schema.get_field_index("loss_mask"), "loss_mask", pa.array(masks, pa.binary()))
    return edit


def _duplicate(column: str):
    return lambda table: table.append_column(column, table.column(column))


def _provenance(column: str, row: int, change):
    def edit(table):
        values = table.column(column).to_pylist()
        values[row] = change(list(values[row]))
        index = table.schema.get_field_index(column)
        return table.set_column(index, column, pa.array(values, table.schema.field(column).type))
    return edit


MASK_CASES = {
    "mask-2-second-group": _set_mask(66, 5, 2),
    "mask-255-first-group": _set_mask(3, 0, 255),
}
DUPLICATE_CASES = {f"duplicate-{c}": _duplicate(c) for c in ("tokens", "loss_mask", "metadata", "conversation_starts")}
PROVENANCE_CASES = {
    "start-past-row": _provenance("conversation_starts", 66, lambda v: [ROW_TOKENS + 5] + v[1:]),
    "start-negative": _provenance("conversation_starts", 2, lambda v: [-1] + v[1:]),
    "length-negative": _provenance("conversation_lengths", 2, lambda v: [-4] + v[1:]),
    "piece-past-row": _provenance("conversation_lengths", 66, lambda v: v[:-1] + [ROW_TOKENS + 1]),
    "offset-negative": _provenance("conversation_offsets", 2, lambda v: [-2] + v[1:]),
    "lists-differ": _provenance("conversation_ids", 2, lambda v: v + ["extra"]),
}
ALL = {**MASK_CASES, **DUPLICATE_CASES, **PROVENANCE_CASES}


def _error(capsys, *argv) -> str:
    rc, stdout, err = cli(capsys, *argv)
    assert rc == 2, (argv, stdout, err)
    return one_error_line(err).removeprefix("sftpack: error: ")


@pytest.mark.parametrize("case", sorted({**MASK_CASES, **DUPLICATE_CASES}))
def test_rows_readers_refuse_with_one_shared_line(case, good, tmp_path, capsys):
    bad = _rewrite(good, tmp_path / f"{NAME}.parquet", ALL[case])
    lines = {
        "hash": _error(capsys, "hash", bad),
        "inspect": _error(capsys, "inspect", bad),
        "inspect --row 0": _error(capsys, "inspect", bad, "--row", 0),
        "inspect --row 69": _error(capsys, "inspect", bad, "--row", 69),
        "verify": _error(capsys, "verify", built(good.parent, ".build.yaml"), "--rows", bad),
        "diff": _error(capsys, "diff", good, bad, "--no-decode"),
        "diff reversed": _error(capsys, "diff", bad, good, "--no-decode"),
        "loss": _error(capsys, "loss", "--model", str(tmp_path / "no-model"), "--rows", bad, "--device", "cpu"),
    }
    assert all(str(bad) in line for line in lines.values()), lines
    assert len({line[line.index(str(bad)):] for line in lines.values()}) == 1, lines
    from sftpack.trainer.rollout import RolloutError, RowSource

    with pytest.raises(RolloutError) as caught:
        RowSource(bad).rows(list(range(70)))
    assert lines["hash"][lines["hash"].index(str(bad)):] in str(caught.value)


@pytest.mark.parametrize("case", sorted(PROVENANCE_CASES))
def test_inconsistent_provenance_is_refused_by_its_readers(case, good, tmp_path, capsys):
    bad = _rewrite(good, tmp_path / f"{NAME}.parquet", ALL[case])
    lines = [_error(capsys, "inspect", bad), _error(capsys, "inspect", bad, "--json")]
    for line in lines:
        assert str(bad) in line and "provenance" in line, line
    from sftpack.rows import read_all_provenance
    from sftpack.base.errors import UsageError

    with pytest.raises(UsageError):
        read_all_provenance(bad)
    rc, _, err = cli(capsys, "hash", bad)  # tokens and masks are intact: hash reads them
    assert rc == 0, err


def test_a_good_file_reads_everywhere(good, capsys):
    for argv in (["hash", good], ["inspect", good], ["inspect", good, "--row", 66],
                 ["verify", built(good.parent, ".build.yaml"), "--rows", good]):
        rc, _, err = cli(capsys, *argv)
        assert rc == 0, (argv, err)
