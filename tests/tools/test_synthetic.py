"""The synthetic Tulu-schema generator and the bundled sample made from it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from synthetic import (
    SCHEMA,
    SOURCES,
    synthetic_batches,
    synthetic_conversations,
    write_synthetic_arrow,
    write_synthetic_parquet,
)

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sftpack" / "data" / "tulu3_sample.parquet"
MAKE_SAMPLE = REPO / "scripts" / "make_sample.py"
SCRIPTS = {
    "CJK": lambda c: "\u4e00" <= c <= "\u9fff",
    "kana": lambda c: "\u3040" <= c <= "\u30ff",
    "hangul": lambda c: "\uac00" <= c <= "\ud7af",
    "arabic": lambda c: "\u0600" <= c <= "\u06ff",
    "devanagari": lambda c: "\u0900" <= c <= "\u097f",
    "cyrillic": lambda c: "\u0400" <= c <= "\u04ff",
    "emoji": lambda c: c >= "\U0001f300",
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sample_rows() -> list[dict]:
    return pq.read_table(SAMPLE).to_pylist()


def test_same_seed_same_rows_other_seed_other_rows():
    a = list(synthetic_conversations(60, seed=5))
    assert a == list(synthetic_conversations(60, seed=5))
    b = list(synthetic_conversations(60, seed=6))
    assert all(x != y for x, y in zip(a, b))


def test_row_i_does_not_depend_on_n():
    small = list(synthetic_conversations(40, seed=1))
    large = list(synthetic_conversations(400, seed=1))
    assert large[:40] == small
    assert list(synthetic_conversations(0)) == []
    with pytest.raises(ValueError):
        list(synthetic_conversations(-1))


def test_rows_are_well_formed():
    names = {s[0] for s in SOURCES}
    rows = list(synthetic_conversations(1500, seed=2))
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) == {"id", "messages", "source"}
        assert isinstance(r["id"], str) and r["id"] and r["source"] in names
        roles = [m["role"] for m in r["messages"]]
        body = roles[1:] if roles[0] == "system" else roles
        assert body and body == ["user", "assistant"] * (len(body) // 2), roles
        for m in r["messages"]:
            assert set(m) == {"role", "content"} and isinstance(m["content"], str)


def test_parquet_schema_row_groups_and_bytes(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_synthetic_parquet(a, 300, seed=4, row_group_size=128)
    write_synthetic_parquet(b, 300, seed=4, row_group_size=128)
    assert sha256(a) == sha256(b)
    f = pq.ParquetFile(a)
    assert f.metadata.num_rows == 300 and [f.metadata.row_group(k).num_rows for k in range(3)] == [128, 128, 44]
    schema = f.schema_arrow
    assert schema.names == ["id", "messages", "source"]
    assert schema.field("id").type == pa.string() and schema.field("source").type == pa.string()
    item = schema.field("messages").type
    assert pa.types.is_list(item) and [(x.name, x.type) for x in item.value_type] == [
        ("content", pa.string()), ("role", pa.string())]
    assert schema.equals(SCHEMA)
    assert f.read().to_pylist() == list(synthetic_conversations(300, seed=4))
    assert not list(tmp_path.glob("*.tmp"))


def test_arrow_file_memory_maps_and_matches(tmp_path):
    path = tmp_path / "s.arrow"
    write_synthetic_arrow(path, 200, seed=4, batch_size=64)
    with pa.memory_map(str(path)) as source:
        reader = pa.ipc.open_file(source)
        assert reader.num_record_batches == 4 and reader.schema.equals(SCHEMA)
        table = reader.read_all()
    assert table.to_pylist() == list(synthetic_conversations(200, seed=4))
    assert pa.Table.from_batches(list(synthetic_batches(200, seed=4, batch_size=64))).equals(table)


def test_bundled_sample_has_tulu_like_variety(sample_rows):
    rows = sample_rows
    n = len(rows)
    assert n == 3000
    assert SAMPLE.stat().st_size < 6_000_000
    system = sum(r["messages"][0]["role"] == "system" for r in rows) / n
    multi = sum(sum(m["role"] == "user" for m in r["messages"]) >= 2 for r in rows) / n
    assert 0.10 <= system <= 0.20 and 0.15 <= multi <= 0.26
    assert max(sum(m["role"] == "user" for m in r["messages"]) for r in rows) == 6
    assert len({r["source"] for r in rows}) >= 15
    text = [m["content"] for r in rows for m in r["messages"]]
    non_ascii = sum(any(not m["content"].isascii() for m in r["messages"]) for r in rows) / n
    assert non_ascii > 0.1
    alltext = "".join(text)
    for script, test in SCRIPTS.items():
        assert any(test(c) for c in alltext), script
    assert any("```python\n" in t and "\n    " in t for t in text)  # fenced, indented code
    assert any("\\frac{" in t for t in text) and any("$" in t for t in text)
    lengths = sorted(sum(len(m["content"]) for m in r["messages"]) for r in rows)
    assert 5 <= sum(x >= 40_000 for x in lengths) <= 30  # ~0.5% past 8,192 tokens
    assert 1500 <= lengths[n // 2] <= 4000
    # the oddities real data has, ~0.3%
    assert any(m["role"] == "assistant" and not m["content"].strip() for r in rows for m in r["messages"])
    assert any("<|im_start|>" in t or "<think>" in t for t in text)
    assert any(t[:1] == "\n" or t[-1:] == "\n" for t in text)


def test_bundled_sample_is_a_fresh_regeneration(tmp_path, sample_rows):
    out = tmp_path / "sample.parquet"
    done = subprocess.run([sys.executable, str(MAKE_SAMPLE), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).to_pylist() == sample_rows
    created = {pq.ParquetFile(p).metadata.created_by for p in (out, SAMPLE)}
    if len(created) > 1:
        pytest.skip(f"contents equal; bytes not compared across writers {sorted(created)}")
    assert sha256(out) == sha256(SAMPLE), "bundled sample is stale: run scripts/make_sample.py"


def test_generator_docstring_examples_run():
    # tools/ is outside the package, so test_doctests does not reach it
    import doctest
    import importlib
    import pkgutil

    import synthetic

    parts = [importlib.import_module(f"synthetic.{m.name}") for m in pkgutil.iter_modules(synthetic.__path__)]
    assert len(parts) >= 5
    for module in [synthetic, *parts]:
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0, module.__name__
