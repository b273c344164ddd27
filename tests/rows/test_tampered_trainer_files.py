"""Trainer files that cannot lie: every tampered file in ``tests/data/tampered/`` (written by
``tests/helpers/tampered_trainer_files.py``) is refused by ``hash``, ``inspect``, ``diff``, ``convert``, ``loss`` and
the rollout with the same one line naming the file, the row and the column, exit 2 - never a traceback, never the
rows_sha256 of rows a trainer would read differently (boundaries that only sum to the row, a null boundary list, ids
read modulo 2**32, strings or floats coerced)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pyarrow.parquet as pq
import pytest

from helpers.cli_outcomes import cli, one_error_line
from helpers.tampered_trainer_files import DIRECTORY, SUFFIX, cases, write_all

# What each tampered file is refused with (after "PATH: "), stated by hand; "{b}" is the format's boundary column,
# "{m}" its mask column, "{layout}" its name.
TYPES = "not the {layout} layout's type"
EXPECTED = {
    "one-document": {"trl": "row 1: `{b}` [16] is not the row's documents [4, 6, 6] (where its provenance's "
                            "conversations start)",
                     "megatron-bridge": "row 1: `{b}` [0] is not the row's documents [0, 4, 10] (where its "
                                        "provenance's conversations start)"},
    "reversed": {"trl": "row 1: `{b}` [6, 6, 4] is not the row's documents [4, 6, 6] (where its provenance's "
                        "conversations start)",
                 "megatron-bridge": "row 1: {b} [10, 4, 0] are not document starts in 16 tokens"},
    "shifted": {"trl": "row 1: `{b}` [5, 5, 6] is not the row's documents [4, 6, 6] (where its provenance's "
                       "conversations start)",
                "megatron-bridge": "row 1: `{b}` [0, 5, 10] is not the row's documents [0, 4, 10] (where its "
                                   "provenance's conversations start)"},
    "zero-length": {"trl": "row 1: {b} [4, 0, 6, 6] do not split the row's 16 tokens"},
    "past-the-row": {"megatron-bridge": "row 1: {b} [0, 4, 20] are not document starts in 16 tokens"},
    "null-boundaries": "row 1: `{b}` is null or holds a null",
    "null-boundary-value": "row 1: `{b}` is null or holds a null",
    "null-id": "row 1: `input_ids` is null or holds a null",
    "boundaries-int64": "column `{b}` is list<int64>, not list<int32>: " + TYPES,
    "ids-int64-plus-2-32": "column `input_ids` is list<int64>, not list<int32>: " + TYPES,
    "ids-strings": "column `input_ids` is list<string>, not list<int32>: " + TYPES,
    "ids-floats": "column `input_ids` is list<double>, not list<int32>: " + TYPES,
    "mask-floats": "column `{m}` is list<float>, not list<int8>: " + TYPES,
}
LAYOUT = {"trl": "TRL", "megatron-bridge": "Megatron-Bridge"}
COLUMNS = {"trl": ("seq_lengths", "assistant_masks"), "megatron-bridge": ("seq_start_id", "loss_mask")}
ALL = [(fmt, case) for fmt in SUFFIX for case in cases(fmt)]


def _expected(fmt: str, case: str) -> str:
    stated = EXPECTED[case]
    stated = stated[fmt] if isinstance(stated, dict) else stated
    boundary, mask = COLUMNS[fmt]
    return stated.format(b=boundary, m=mask, layout=LAYOUT[fmt])


def _refused(capsys, *argv) -> str:
    rc, out, err = cli(capsys, *argv)
    assert rc == 2, (argv, out, err)
    return one_error_line(err).removeprefix("sftpack: error: ")


def test_every_case_has_its_stated_outcome():
    assert sorted(ALL) == sorted((fmt, case) for case, stated in EXPECTED.items() for fmt in SUFFIX
                                 if not isinstance(stated, dict) or fmt in stated)


def test_the_committed_files_are_what_the_script_writes(tmp_path):
    written = write_all(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in DIRECTORY.iterdir())
    for path in written:
        committed = pq.read_table(DIRECTORY / path.name)
        regenerated = pq.read_table(path)
        assert committed.equals(regenerated) and committed.schema.metadata == regenerated.schema.metadata, path.name


@pytest.mark.parametrize("fmt, case", ALL)
def test_a_tampered_file_is_refused_in_one_line_by_every_reader(fmt, case, tmp_path, capsys):
    bad = tmp_path / f"{case}{SUFFIX[fmt]}"
    shutil.copyfile(DIRECTORY / bad.name, bad)
    good = DIRECTORY / f"good{SUFFIX[fmt]}"
    expected = f"{bad}: {_expected(fmt, case)}"
    lines = {
        "hash": _refused(capsys, "hash", bad),
        "hash --json": _refused(capsys, "hash", bad, "--json"),
        "inspect": _refused(capsys, "inspect", bad),
        "inspect --row 1": _refused(capsys, "inspect", bad, "--row", 1),
        "diff": _refused(capsys, "diff", good, bad, "--no-decode"),
        "convert": _refused(capsys, "convert", bad, "--to", "parquet", tmp_path / "converted"),
    }
    if importlib.util.find_spec("torch") is not None:  # without torch, loss says it needs torch first
        lines["loss"] = _refused(capsys, "loss", "--model", tmp_path / "no-model", "--rows", bad, "--device", "cpu")
    assert {k: v for k, v in lines.items() if not v.endswith(expected)} == {}, expected
    assert not (tmp_path / "converted").exists() or not any((tmp_path / "converted").iterdir())
    from sftpack.trainer.rollout import RolloutError, RowSource

    with pytest.raises(RolloutError) as caught:
        RowSource(bad).rows([0, 1])
    assert str(caught.value).endswith(expected), str(caught.value)


@pytest.mark.parametrize("fmt", SUFFIX)
def test_the_good_file_reads_and_hash_says_the_boundaries_were_checked(fmt, capsys):
    rc, out, err = cli(capsys, "hash", DIRECTORY / f"good{SUFFIX[fmt]}")
    assert rc == 0, err
    # hand-made rows (tests/helpers/tampered_trainer_files.py): the same two rows in both formats
    rc, other, _ = cli(capsys, "hash", DIRECTORY / f"good{SUFFIX['trl' if fmt != 'trl' else 'megatron-bridge']}")
    assert out.split()[0] == other.split()[0]
    assert out.splitlines()[1] == (f"  {COLUMNS[fmt][0]} checked in every row: the {LAYOUT[fmt]} document boundaries "
                                   "equal the provenance's conversation starts")
    rc, out, err = cli(capsys, "hash", DIRECTORY / f"good{SUFFIX[fmt]}", "--json")
    assert rc == 0 and f"{COLUMNS[fmt][0]} checked in every row" in json.loads(out)["boundaries"]


@pytest.mark.parametrize("column", ["tokens", "loss_mask"])
def test_a_null_parquet_row_names_the_file_row_and_column(column, tmp_path, capsys):
    import pyarrow as pa

    from helpers.tampered_trainer_files import write_good

    table = pq.read_table(write_good(tmp_path / "good.parquet", "parquet"))
    values = table.column(column).to_pylist()
    values[1] = None
    bad = tmp_path / "null.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.binary()))
                   .replace_schema_metadata(table.schema.metadata), bad)
    assert _refused(capsys, "hash", bad).endswith(f"{bad}: row 1: `{column}` is null")
