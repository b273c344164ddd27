"""``sftpack diff`` and ``verify --against``: pairs of builds that differ by exactly one cause each.

Each pair is built from the same small source (``rows_fixtures``: 40 conversations, 6 rows x 512 tokens, the
offline Qwen3.5 vocabulary) with one thing changed: the seed; one conversation made unusable (skipped); the
loss-mask rule or the EOS token (both through profile files, ``--model PATH.yaml``); and, with the small Kimi
tokenizer of ``small_vocabs``, a tokenizer whose two merges swapped ranks. The expected row and position come
from the inputs, not from diff: the permutation (numpy's ``default_rng``), each conversation's encoding, and the
packing arithmetic of docs/spec.md (conversations in order, one EOS between consecutive ones, consecutive 512-token
rows); or, where that is only a restatement of the build, from a plain numpy comparison of the two files' rows.
Writer row groups are made small (2 and 3 rows) so that the comparison streams across several, differently
aligned row groups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers.qwen_reference import QWEN_IDS
from helpers.rows_fixtures import MODEL, NAME, ROW_TOKENS, ROWS, conversations, offline
from sftpack import BuildConfig, build, diff_rows, read_rows
from sftpack.cli import main

SEED = 42


@pytest.fixture(scope="module", autouse=True)
def no_hub():
    """Offline, and the Qwen3.5 vocabulary loaded once per EOS token for the module's builds and diffs (it takes
    seconds to load; the builds would otherwise load it a dozen times)."""
    from functools import lru_cache

    import sftpack.tokenizers.offline as offline_module

    mp = pytest.MonkeyPatch()
    mp.setattr(offline_module, "load_offline_qwen", lru_cache(maxsize=None)(offline_module.load_offline_qwen))
    with offline():
        yield
    mp.undo()


def _write_source(path: Path, convs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    return path


def _build(directory: Path, convs=None, group=2, model=MODEL, name=NAME, **config) -> Path:
    """Build 6 x 512 rows from ``convs`` (default: the fixture's) with ``group`` rows per parquet row group."""
    import sftpack.rows.parquet_writer

    directory.mkdir(parents=True, exist_ok=True)
    source = _write_source(directory / "convs.jsonl", convs if convs is not None else conversations())
    mp = pytest.MonkeyPatch()
    mp.setattr(sftpack.rows.parquet_writer, "ROWS_PER_GROUP", group)
    try:
        build(BuildConfig(model=model, source=str(source), rows=ROWS, row_tokens=ROW_TOKENS, out=str(directory / "out"),
                          workers=1, progress=False, name=name, **config))
    finally:
        mp.undo()
    return directory / "out" / f"{name}.parquet"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("diff-a"), group=2)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """The same build with the next seed."""
    return _build(tmp_path_factory.mktemp("diff-seed"), group=3, seed=SEED + 1)


def skipped_id() -> str:
    return order()[2]  # the third conversation of the order


@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    """The same build from a source whose third conversation (in the order) has no assistant message: skipped."""
    convs = [dict(c, messages=[m for m in c["messages"] if m["role"] != "assistant"]) if c["id"] == skipped_id() else c
             for c in conversations()]
    return _build(tmp_path_factory.mktemp("diff-skip"), convs, group=3)


@pytest.fixture(scope="module")
def encoder():
    from sftpack.families.encode import make_encoder
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(MODEL)
    return make_encoder(profile, load_vocab(profile))


def order(seed: int = SEED) -> list[str]:
    return [f"c{i:02d}" for i in np.random.default_rng(seed).permutation(len(conversations()))]


def brute_first_difference(a: Path, b: Path) -> tuple[int, int]:
    ta, ma = read_rows(a)
    tb, mb = read_rows(b)
    rows, cols = np.nonzero((ta != tb) | (ma != mb))
    return int(rows[0]), int(cols[0])


def lengths(encoder) -> dict[str, int]:
    return {c["id"]: len(encoder(c["messages"])[0]) for c in conversations()}


def stream_start(ids: list[str], length: dict[str, int], k: int) -> int:
    """Where the k-th conversation of ``ids`` starts in the packed stream (one EOS between conversations)."""
    return sum(length[c] + 1 for c in ids[:k])


# --------------------------------------------------------------------------------------------------------
# One cause each


def test_identical_copy_is_exit_0(base, tmp_path, capsys):
    copy = tmp_path / "copy.parquet"
    shutil.copy(base, copy)
    result = diff_rows(base, copy)
    assert result["identical"] and result["exit"] == 0 and result["cause"] is None
    assert result["counts"] == {"compared": ROWS, "identical": ROWS, "tokens_differ": 0, "mask_only": 0}
    assert main(["diff", str(base), str(copy)]) == 0
    assert "IDENTICAL" in capsys.readouterr().out


def test_different_seed(base, seeded, capsys):
    other = seeded
    result = diff_rows(base, other)
    first, cause = result["first"], result["cause"]
    assert result["exit"] == 1 and cause["cause"] == "seed"
    assert (first["row"], first["position"]) == brute_first_difference(base, other)
    assert first["row"] == 0
    # the conversations at the place are the first of each permutation
    at = {s: [p["conversation"] for p in first["conversations"][s] if p["at_difference"]] for s in "AB"}
    assert at == {"A": [order(SEED)[0]], "B": [order(SEED + 1)[0]]}
    assert any("seeds differ: A 42, B 43" in e for e in cause["evidence"])
    assert main(["diff", str(base), str(other), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["cause"]["cause"] == "seed"


def test_one_skipped_conversation(base, skipped, encoder):
    ids = order()
    other, skipped = skipped, skipped_id()
    length = lengths(encoder)
    start = stream_start(ids, length, 2)  # where the skipped conversation starts in A's stream
    a_tokens = encoder(conversations()[int(skipped[1:])]["messages"])[0]
    b_tokens = encoder(conversations()[int(ids[3][1:])]["messages"])[0]
    same = int(np.flatnonzero(a_tokens[: len(b_tokens)] != b_tokens[: len(a_tokens)])[0])  # shared opening tokens
    result = diff_rows(base, other)
    first, cause = result["first"], result["cause"]
    assert (first["row"], first["position"]) == divmod(start + same, ROW_TOKENS)
    assert cause["cause"] == "skipped_rows" and cause["missing"] == {"B": [skipped]}
    assert any(f"A holds {length[skipped] + 1:,} tokens more" in e for e in cause["evidence"])
    assert any("skips differ" in e and "no_assistant_message" in e for e in cause["evidence"])


def _profile(directory: Path, name: str, replace: dict[str, str], rule: str | None = None) -> str:
    """A profile file (``--model PATH.yaml``): the packaged Qwen3.5-122B-A10B profile with lines replaced, and
    beside it ``masks/RULE.yaml`` when ``rule`` is given (the packaged qwen3_5 rule, renamed, the
    "<think>\\n" after the header supervised too)."""
    from sftpack.families.profiles import resource_dir

    text = (resource_dir("configs") / f"{MODEL}.yaml").read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    (directory / "configs").mkdir(parents=True, exist_ok=True)
    (directory / "configs" / f"{name}.yaml").write_text(text, encoding="utf-8")
    if rule is not None:
        rule_text = (resource_dir("masks") / "qwen3_5.yaml").read_text(encoding="utf-8")
        for old, new in (("name: qwen3_5", f"name: {rule}"), ('skip_after_header: "<think>\\n"', 'skip_after_header: ""'),
                         ('supervised_chars: "\\n</think>', 'supervised_chars: "<think>\\n\\n</think>')):
            assert old in rule_text, old
            rule_text = rule_text.replace(old, new)
        (directory / "masks").mkdir(parents=True, exist_ok=True)
        (directory / "masks" / f"{rule}.yaml").write_text(rule_text, encoding="utf-8")
    return str(directory / "configs" / f"{name}.yaml")


def test_loss_mask_rule_change(base, tmp_path):
    model = _profile(tmp_path / "profile", "qwen-think", {"loss_mask: qwen3_5": "loss_mask: qwen3_5_think"},
                     rule="qwen3_5_think")
    other = _build(tmp_path / "b", group=3, model=model)
    tokens, mask = read_rows(base)
    think = int(np.flatnonzero(tokens[0] == QWEN_IDS["<think>"])[0])  # the first <think> after an assistant header
    assert mask[0, think] == 0
    result = diff_rows(base, other)
    first, cause = result["first"], result["cause"]
    assert (first["row"], first["position"]) == (0, think)
    assert first["what"] == "loss_mask" and first["loss_mask"] == {"A": 0, "B": 1} and first["row_tokens_identical"]
    assert cause["cause"] == "loss_mask"
    assert any("rules A qwen3_5, B qwen3_5_think" in e for e in cause["evidence"])
    assert result["counts"]["tokens_differ"] == 0 and result["counts"]["mask_only"] == ROWS


def test_changed_eos(base, tmp_path, encoder):
    model = _profile(tmp_path / "profile", "qwen-eos", {'eos_token: "<|im_end|>"': 'eos_token: "<|endoftext|>"'})
    other = _build(tmp_path / "b", group=3, model=model)
    first_length = lengths(encoder)[order()[0]]  # the first EOS follows the first conversation
    result = diff_rows(base, other)
    first, cause = result["first"], result["cause"]
    assert (first["row"], first["position"]) == (0, first_length)
    assert first["tokens"] == {"A": QWEN_IDS["<|im_end|>"], "B": QWEN_IDS["<|endoftext|>"]}
    assert cause["cause"] == "eos"
    assert first["conversations"]["A_at_eos"] and first["conversations"]["B_at_eos"]


@pytest.fixture(scope="module")
def kimi(tmp_path_factory):
    """A Kimi build with the small test tokenizer: (its tokenizer directory, its rows)."""
    from helpers.small_vocabs import kimi_test_files

    directory = tmp_path_factory.mktemp("diff-kimi")
    kimi_test_files(directory / "tok")
    return directory / "tok", _build(directory, model="Kimi-K2.6", name="kimi", tokenizer=str(directory / "tok"))


def test_tokenizer_change(kimi, tmp_path):
    """B's tiktoken.model swaps the ranks of two merges."""
    tok_a, rows_a = kimi
    tok_b = tmp_path / "tok"
    shutil.copytree(tok_a, tok_b)
    lines = (tok_b / "tiktoken.model").read_text().splitlines()
    ranks = {int(line.split()[1]): i for i, line in enumerate(lines)}
    er, in_ = ranks[259], ranks[263]  # b"er" and b"in": both frequent in the fixture's words
    lines[er], lines[in_] = lines[er].replace(" 259", " 263"), lines[in_].replace(" 263", " 259")
    (tok_b / "tiktoken.model").write_text("\n".join(lines) + "\n")
    rows_b = _build(tmp_path, model="Kimi-K2.6", name="kimi", tokenizer=str(tok_b))
    result = diff_rows(rows_a, rows_b, tokenizer=[tok_a, tok_b])
    first, cause = result["first"], result["cause"]
    assert (first["row"], first["position"]) == brute_first_difference(rows_a, rows_b)
    assert cause["cause"] == "tokenizer"
    assert any("tiktoken.model" in e for e in cause["evidence"])
    assert any("the same on both sides" in e for e in cause["evidence"])
    at = {s: [p["conversation"] for p in first["conversations"][s] if p["at_difference"]] for s in "AB"}
    assert at["A"] == at["B"] == [order()[0]]


def test_template_change(kimi, tmp_path):
    """B's chat template names the user "human" in its header (a template revision; the tokenizer is the same)."""
    from helpers.small_vocabs import kimi_test_ranks

    tok_a, rows_a = kimi
    config = json.loads((tok_a / "tokenizer_config.json").read_text(encoding="utf-8"))
    if "chat_template" not in config:
        pytest.skip("../shared is absent: the test tokenizer carries no chat template to change")
    header = "<|im_user|>{{role_name}}<|im_middle|>"
    assert header in config["chat_template"]
    config["chat_template"] = config["chat_template"].replace(header, "<|im_user|>human<|im_middle|>")
    tok_b = tmp_path / "tok"
    shutil.copytree(tok_a, tok_b)
    (tok_b / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    rows_b = _build(tmp_path, model="Kimi-K2.6", name="kimi", tokenizer=str(tok_b))
    im_user = len(kimi_test_ranks()) + 3  # <|im_user|> is 163587 = 163584 + 3 in the real vocabulary
    tokens, _ = read_rows(rows_a)
    after_header = int(np.flatnonzero(tokens[0] == im_user)[0]) + 1  # "user" of the first user turn starts here
    result = diff_rows(rows_a, rows_b, tokenizer=[tok_a, tok_b])
    assert (result["first"]["row"], result["first"]["position"]) == (0, after_header)
    assert result["cause"]["cause"] == "template"
    assert any("'human" in e for e in result["cause"]["evidence"])


# --------------------------------------------------------------------------------------------------------
# Without provenance, shifts, row counts, unusable input


def _without_provenance(path: Path, out: Path) -> Path:
    table = pq.read_table(path)
    pq.write_table(table.select(["tokens", "loss_mask"]).replace_schema_metadata(table.schema.metadata), out,
                   row_group_size=2)
    return out


def test_skip_without_provenance_is_a_shift(base, skipped, tmp_path, encoder):
    other = _without_provenance(skipped, tmp_path / "bare.parquet")
    result = diff_rows(base, other, decode=False)
    cause = result["cause"]
    assert result["b"]["provenance"] is False and result["first"]["conversations"]["B"] is None
    assert cause["cause"] == "shift" and cause["shift"] == {"extra": "A", "tokens": lengths(encoder)[skipped_id()] + 1}
    assert any("B has no provenance" in e for e in cause["cannot_tell"])


def test_one_eos_more_written_directly(tmp_path):
    """Rows written with the project's writer: B's stream holds one EOS more between two conversations."""
    from sftpack.builder.pack import pack
    from sftpack.rows.parquet_writer import RowWriter

    rng = np.random.default_rng(0)
    convs = [(f"x{i}", rng.integers(10, 500, n).astype(np.int32), (rng.random(n) < 0.5).astype(np.uint8))
             for i, n in enumerate([300, 200, 700, 150, 900, 400, 650])]
    eos = 7
    extra = [(c, np.concatenate(([eos], t)) if c == "x3" else t, np.concatenate(([0], m)) if c == "x3" else m)
             for c, t, m in convs]
    paths = {}
    for side, stream in (("A", convs), ("B", extra)):
        paths[side] = tmp_path / f"{side}.parquet"
        writer = RowWriter(paths[side], 256, "synthetic")
        for row in pack(stream, 256, eos):
            writer.write(row)
        writer.close()
    bare = _without_provenance(paths["B"], tmp_path / "B-bare.parquet")
    at = 300 + 1 + 200 + 1 + 700 + 1  # x3 starts here in A; B has its extra EOS there
    result = diff_rows(paths["A"], bare)
    assert divmod(at, 256) == (result["first"]["row"], result["first"]["position"])
    assert result["cause"]["cause"] == "eos" and "B has one EOS more" in result["cause"]["summary"]
    with_provenance = diff_rows(paths["A"], paths["B"])  # x3 is one token longer on B: packing sees other tokens
    assert with_provenance["first"]["position"] == result["first"]["position"]


def test_row_count(base, tmp_path):
    table = pq.read_table(base)
    short = tmp_path / "short.parquet"
    pq.write_table(table.slice(0, 4).replace_schema_metadata(table.schema.metadata), short)
    result = diff_rows(base, short)
    assert result["exit"] == 1 and result["cause"]["cause"] == "row_count"
    assert result["counts"]["compared"] == 4 and result["counts"]["identical"] == 4


def test_unusable_input_is_exit_2(base, tmp_path, capsys):
    assert main(["diff", str(base), str(tmp_path / "missing.parquet")]) == 2
    not_rows = tmp_path / "x.parquet"
    pq.write_table(pq.read_table(base).select(["messages"]), not_rows)
    assert main(["diff", str(base), str(not_rows)]) == 2
    table = pq.read_table(base)
    other_width = tmp_path / "w.parquet"
    meta = dict(table.schema.metadata)
    meta[b"sftpack.row_tokens"] = b"256"
    pq.write_table(table.select(["tokens", "loss_mask"]).replace_schema_metadata(meta), other_width)
    assert main(["diff", str(base), str(other_width)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "different lengths" in err


def test_reads_at_most_a_block_at_a_time(base, tmp_path, monkeypatch):
    import sftpack.checks.diff as diff

    copy = tmp_path / "copy.parquet"
    shutil.copy(base, copy)
    from sftpack.rows.parquet import ParquetRows

    sizes = []
    real = ParquetRows.read
    monkeypatch.setattr(diff, "BLOCK", 2)
    monkeypatch.setattr(ParquetRows, "read", lambda self, rows: sizes.append(rows.stop - rows.start) or real(self, rows))
    assert diff_rows(base, copy)["identical"]
    assert sizes == [2] * 6  # 3 blocks per file, never the whole file


def test_provenance_is_decoded_once_per_row_group(base, seeded, monkeypatch):
    from sftpack.checks.inspect import row_view
    from sftpack.rows.parquet import ParquetRows

    calls = []
    real = ParquetRows.read_provenance_group
    monkeypatch.setattr(ParquetRows, "read_provenance_group", lambda self, g: calls.append((self.path, g)) or real(self, g))
    assert diff_rows(base, seeded, decode=False)["first"]["row"] == 0
    # the provenance of rows 0..5 around the difference: 3 row groups of 2 rows in A, 2 of 3 in B, each read once
    assert sorted(calls) == sorted([(base, 0), (base, 1), (base, 2), (seeded, 0), (seeded, 1)])
    calls.clear()
    assert row_view(base, 0)["pieces"]  # row 0 and the next row (does a piece go on?) share row group 0
    assert calls == [(base, 0)]


@pytest.mark.parametrize("stored", [True, False])
def test_summary_decodes_each_mask_once(base, tmp_path, monkeypatch, stored):
    """inspect's summary (beside diff, the other reader of whole files): hash's pass gives the per-row supervised
    counts of a file without the ``supervised_tokens`` column; a file with it keeps the stored column."""
    from sftpack.checks.inspect import summarize
    from sftpack.rows.parquet import ParquetRows

    path = tmp_path / f"{NAME}.parquet"
    table = pq.read_table(base)
    pq.write_table(table if stored else table.drop_columns(["supervised_tokens"]), path, row_group_size=2)
    assert ("supervised_tokens" in pq.read_schema(path).names) is stored
    groups = []
    real = ParquetRows.read_group
    monkeypatch.setattr(ParquetRows, "read_group", lambda self, g: groups.append(g) or real(self, g))
    info = summarize(path)
    assert groups == [0, 1, 2]  # one pass: 6 rows in row groups of 2
    per_row = read_rows(base)[1].sum(axis=1)
    assert info["supervised_tokens"] == per_row.sum() and info["supervised_per_row"]["max"] == per_row.max()
    assert info["histogram"] == summarize(base)["histogram"]


# --------------------------------------------------------------------------------------------------------
# The report, and verify --against


def test_text_report_decodes_both_sides(base, seeded, capsys):
    other = seeded
    assert main(["diff", str(base), str(other), "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert "first difference  row 0, position" in out and "cause             seed" in out
    assert f"── conversation {order(SEED)[0]} ──" in out and f"── conversation {order(SEED + 1)[0]} ──" in out
    assert "⟦" in out and "▶" in out and out.rstrip().splitlines()[-1].startswith("DIFFERENT: seed")


def test_verify_against(base, seeded, tmp_path, capsys):
    other = seeded
    record = base.with_name(f"{NAME}.build.yaml")
    assert main(["verify", str(record), "--rows", str(other), "--against", str(base), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "mismatch" and report["diff"]["cause"]["cause"] == "seed"
    assert report["diff"]["a"]["path"] == str(other)
    assert main(["verify", str(record), "--rows", str(base), "--against", str(other)]) == 0
    assert "not compared, rows_sha256 matches" in capsys.readouterr().out
    assert main(["verify", str(record), "--rows", str(other), "--against", str(tmp_path / "nope.parquet")]) == 2


def test_a_known_rows_sha256_is_not_recomputed(base, seeded, monkeypatch):
    """What verify has hashed already (its side A) is given to diff_rows, which then hashes only B."""
    import hashlib

    import sftpack.checks.diff as diff
    from sftpack import hash_rows

    plain, known = diff_rows(base, seeded, decode=False), hash_rows(base)["rows_sha256"]
    made = []
    real = hashlib.sha256
    monkeypatch.setattr(diff.hashlib, "sha256", lambda: made.append(1) or real())
    assert diff_rows(base, seeded, decode=False, rows_sha256={"A": known}) == plain
    assert len(made) == 1  # B's hash only
    wrong = diff_rows(base, seeded, decode=False, rows_sha256={"A": "0" * 64})  # taken as given, not checked
    assert wrong["a"]["rows_sha256"] == "0" * 64 and "describes other rows" in wrong["a"]["build_record"]


def test_across_format_versions(base, seeded, tmp_path, capsys):
    """A format-1 file (string ``messages``) against format 2: the rows are compared, not the encoding."""
    from helpers.rows_fixtures import rewrite_as

    old = tmp_path / "old.parquet"
    rewrite_as(base, old, "1", string_messages=True)
    assert diff_rows(base, old, decode=False)["identical"]
    old_seeded = tmp_path / "old-seeded.parquet"
    rewrite_as(seeded, old_seeded, "1", string_messages=True)
    assert diff_rows(old_seeded, base, decode=False)["cause"]["cause"] == "order"  # no build record beside it
    newer = tmp_path / "newer.parquet"
    rewrite_as(base, newer, "99", string_messages=False)
    assert main(["diff", str(base), str(newer)]) == 2
    assert "rows format 99" in capsys.readouterr().err
