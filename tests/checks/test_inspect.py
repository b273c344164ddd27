"""Provenance per row, ``sftpack inspect`` (row view and summary), and reading the rows with datasets/pandas."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from helpers.rows_fixtures import MODEL, NAME, ROW_TOKENS, ROWS, build_small, conversations, offline
from sftpack import read_rows
from sftpack.checks.inspect import format_row, resolve_vocab, row_view, summarize
from sftpack.cli import main
from sftpack.rows import read_all_provenance, read_provenance, read_row

EOS = "<|im_end|>"


@pytest.fixture(scope="module", autouse=True)
def no_hub():
    with offline():
        yield


@pytest.fixture(scope="module")
def built(tmp_path_factory, no_hub):
    return build_small(tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="module")
def rows_path(built):
    return built[1]


@pytest.fixture(scope="module")
def encoded():
    """Each conversation's (tokens, mask) as the build encodes it."""
    from sftpack.families.encode import make_encoder
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(MODEL)
    encoder = make_encoder(profile, load_vocab(profile))
    return {c["id"]: encoder(c["messages"]) for c in conversations()}, encoder.vocab


@pytest.fixture(scope="module")
def views(rows_path):
    vocab = resolve_vocab(rows_path)
    return [row_view(rows_path, k, vocab) for k in range(ROWS)]


def by_id():
    return {c["id"]: c["messages"] for c in conversations()}


# --------------------------------------------------------------------------------------------------------
# Provenance


def test_provenance_pieces_are_the_conversations_tokens(rows_path, encoded):
    """Every piece is its conversation's tokens [offset, offset+length) at row positions [start, start+length);
    every position no piece covers is the packer's EOS; pieces are in order with one EOS between them."""
    table, vocab = encoded
    tokens, masks = read_rows(rows_path)
    for k, prov in enumerate(read_all_provenance(rows_path)):
        covered = np.zeros(ROW_TOKENS, bool)
        previous_end = None
        for cid, start, length, offset in zip(prov.conversation_ids, prov.starts, prov.lengths, prov.offsets):
            ids, mask = table[cid]
            assert tokens[k, start : start + length].tolist() == ids[offset : offset + length].tolist()
            expected_mask = mask[offset : offset + length].copy()
            if start == 0:
                expected_mask[0] = 0  # position 0 is never a target
            assert masks[k, start : start + length].tolist() == expected_mask.tolist()
            assert offset == 0 or start == 0, "only a row's first piece can continue a conversation"
            if previous_end is not None:
                assert start == previous_end + 1, "exactly one EOS between consecutive conversations"
            previous_end = start + length
            covered[start : start + length] = True
        assert previous_end == ROW_TOKENS
        assert (tokens[k, ~covered] == vocab.eos_id).all()
        assert (masks[k, ~covered] == 0).all()


def test_conversation_cut_across_rows_appears_in_both_with_its_offset(rows_path, encoded):
    table, _ = encoded
    provenance = read_all_provenance(rows_path)
    cuts = 0
    for prov, nxt in zip(provenance, provenance[1:]):
        last = len(prov.conversation_ids) - 1
        first_next = nxt.conversation_ids[0]
        if nxt.offsets[0] > 0:  # the next row continues a conversation: this row holds its previous part
            assert prov.conversation_ids[last] == first_next
            assert nxt.offsets[0] == prov.offsets[last] + prov.lengths[last]
            assert prov.starts[last] + prov.lengths[last] == ROW_TOKENS
            cuts += 1
    assert cuts >= 2
    # c07 (long) is cut across rows and every one of its tokens is somewhere, once, in order
    parts = [(p.offsets[i], p.lengths[i]) for p in provenance for i, c in enumerate(p.conversation_ids) if c == "c07"]
    assert len(parts) >= 2
    assert [o for o, _ in parts] == list(np.cumsum([0] + [n for _, n in parts[:-1]]))


def test_boundaries_are_conversation_starts(rows_path):
    for prov in read_all_provenance(rows_path):
        assert prov.boundaries[0] == 0 and prov.boundaries[-1] == ROW_TOKENS
        assert set(prov.starts) <= set(prov.boundaries)
        assert all(b > a for a, b in zip(prov.boundaries, prov.boundaries[1:]))
    assert read_provenance(rows_path, 2) == read_all_provenance(rows_path)[2]


def test_read_row_equals_read_rows(rows_path):
    tokens, masks = read_rows(rows_path)
    for k in range(ROWS):
        t, m = read_row(rows_path, k)
        assert np.array_equal(t, tokens[k]) and np.array_equal(m, masks[k])


def test_provenance_columns_are_not_read_with_tokens(rows_path):
    """Reading tokens projects two columns: the provenance columns are separate and never decoded."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(rows_path)
    table = pf.read(columns=["tokens", "loss_mask"])
    assert table.column_names == ["tokens", "loss_mask"]
    assert {"conversation_ids", "conversation_starts", "conversation_lengths", "conversation_offsets"} <= set(pf.schema_arrow.names)


# --------------------------------------------------------------------------------------------------------
# Row view


def test_row_view_spans_are_the_mask_runs(views):
    for view in views:
        mask = np.array(view["loss_mask"])
        rebuilt = np.zeros_like(mask)
        for a, b in view["spans"]:
            assert b > a
            rebuilt[a:b] = 1
        assert np.array_equal(rebuilt, mask)
        assert view["supervised_tokens"] == int(mask.sum())


def test_supervised_text_is_the_assistant_turns(views):
    """For each whole conversation in a row, the text of its supervised segments is its assistant messages,
    each with its <|im_end|>\\n (and, for the last turn, the empty think block's tail the template writes)."""
    messages = by_id()
    whole = 0
    for view in views:
        for piece in view["pieces"]:
            segments = [s for s in view["segments"] if s["kind"] == "conversation" and piece["start"] <= s["start"] < piece["end"]]
            assert "".join(s["text"] for s in segments)  # decoded
            supervised = "".join(s["text"] for s in segments if s["supervised"])
            unsupervised = "".join(s["text"] for s in segments if not s["supervised"])
            assert "QUESTION" not in supervised and "SYSTEM" not in supervised and "<|im_start|>" not in supervised
            assert "ANSWER" not in unsupervised
            if piece["continued"] or piece["continues_in_next_row"] or piece["end"] == view["row_tokens"]:
                continue
            whole += 1
            expected = "".join(m["content"] + "<|im_end|>\n" for m in messages[piece["conversation"]] if m["role"] == "assistant")
            assert supervised.replace("\n\n</think>\n\n", "") == expected
            assert segments[0]["text"].startswith("<|im_start|>")
    assert whole >= 10


def test_eos_positions_and_segments(views):
    for view in views:
        eos_segments = [s for s in view["segments"] if s["kind"] == "eos"]
        assert [s["start"] for s in eos_segments] == view["eos_positions"]
        assert all(s["text"] == EOS and s["end"] == s["start"] + 1 for s in eos_segments)
        assert view["segments"][0]["start"] == 0 and view["segments"][-1]["end"] == view["row_tokens"]
        assert all(a["end"] == b["start"] for a, b in zip(view["segments"], view["segments"][1:]))


def boundary_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("── conversation ")]


def test_text_row_marks_boundaries_spans_and_eos(views):
    for view in views:
        text = format_row(view, color=False)
        lines = boundary_lines(text)
        assert len(lines) == len(view["pieces"])
        for line, piece in zip(lines, view["pieces"]):
            assert line.startswith(f"── conversation {piece['conversation']} (tokens {piece['start']}..{piece['end']}")
            assert (f"continues from offset {piece['offset']}" in line) == piece["continued"]
            assert (f"continues in row {view['row'] + 1}" in line) == piece["continues_in_next_row"]
        assert text.count(f"⟨EOS {EOS}⟩") == len(view["eos_positions"])
        assert "\x1b[" not in text
        # every supervised span is wrapped in ⟦…⟧ and holds answers only
        for inside in re.findall(r"⟦(.*?)⟧", text, flags=re.S):
            assert "QUESTION" not in inside
        assert text.count("⟦") == text.count("⟧") >= 1


def test_text_row_after_each_boundary_comes_its_conversation(views):
    view = next(v for v in views if any(p["continued"] for p in v["pieces"]) and len(v["pieces"]) > 2)
    text = format_row(view, color=False)
    blocks = re.split(r"^── conversation .*──$", text, flags=re.M)[1:]
    for block, piece in zip(blocks, view["pieces"]):
        if not piece["continued"]:
            assert block.lstrip("\n").startswith("<|im_start|>")
        named = set(re.findall(r"(?:QUESTION|ANSWER|SYSTEM) (c\d\d)", block))
        assert named == {piece["conversation"]} or (piece["continued"] and named <= {piece["conversation"]})


def test_colour_only_when_asked(views):
    coloured = format_row(views[0], color=True)
    assert "\x1b[1;32m" in coloured and "⟦" not in coloured


def test_cli_inspect_row(rows_path, capsys):
    assert main(["inspect", str(rows_path), "--row", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"row 2 of {ROWS} · ")
    assert boundary_lines(out) and "⟦" in out  # captured stdout is no TTY: markers, not colour
    assert main(["inspect", str(rows_path), "--row", "2", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert len(view["tokens"]) == len(view["loss_mask"]) == ROW_TOKENS
    assert [{k: p[k] for k in ("conversation", "start", "length", "offset")} for p in view["pieces"]] == \
        read_provenance(rows_path, 2).pieces()
    assert view["boundaries"] == read_provenance(rows_path, 2).boundaries
    assert "".join(s["text"] for s in view["segments"])


def test_cli_inspect_row_out_of_range(rows_path, capsys):
    assert main(["inspect", str(rows_path), "--row", str(ROWS)]) == 2
    assert "out of range" in capsys.readouterr().err


def test_cli_inspect_without_a_model_needs_one(rows_path, tmp_path, capsys):
    import pyarrow.parquet as pq

    lone = tmp_path / "lone.parquet"  # no build record beside it, and a build name no profile has
    table = pq.read_table(rows_path)
    meta = dict(table.schema.metadata)
    meta[b"sftpack.build"] = b"someone-elses-rows"
    pq.write_table(table.replace_schema_metadata(meta), lone)
    assert main(["inspect", str(lone), "--row", "0"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["inspect", str(lone), "--row", "0", "--model", MODEL]) == 0
    assert boundary_lines(capsys.readouterr().out)


# --------------------------------------------------------------------------------------------------------
# Summary


def test_summary(rows_path, capsys):
    info = summarize(rows_path)
    tokens, masks = read_rows(rows_path)
    provenance = read_all_provenance(rows_path)
    ids = {c for p in provenance for c in p.conversation_ids}
    assert info["rows"] == ROWS and info["row_tokens"] == ROW_TOKENS and info["total_tokens"] == ROWS * ROW_TOKENS
    assert info["supervised_tokens"] == int(masks.sum())
    assert info["supervised_token_ratio"] == pytest.approx(masks.sum() / masks.size)
    assert info["conversations"] == len(ids)
    assert info["pieces"] == sum(len(p.conversation_ids) for p in provenance)
    assert info["conversations_split_across_rows"] == len({c for p in provenance for c, o in zip(p.conversation_ids, p.offsets) if o > 0})
    assert sum(h["rows"] for h in info["histogram"]) == ROWS
    per_row = masks.sum(axis=1)
    assert info["supervised_per_row"]["min"] == per_row.min() and info["supervised_per_row"]["max"] == per_row.max()
    assert info["model"] == MODEL

    assert main(["inspect", str(rows_path)]) == 0
    out = capsys.readouterr().out
    assert f"{ROWS} x {ROW_TOKENS} tokens" in out and "supervised tokens per row" in out
    assert f"{len(ids)} distinct" in out and "cut across rows" in out
    assert out.count("█") >= 1
    assert main(["inspect", str(rows_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conversations"] == len(ids)


# --------------------------------------------------------------------------------------------------------
# Other readers


def test_datasets_and_pandas_read_the_rows(rows_path, tmp_path):
    import datasets
    import pandas as pd

    tokens, masks = read_rows(rows_path)
    columns = {"tokens", "loss_mask", "messages", "metadata", "supervised_tokens",
               "conversation_ids", "conversation_starts", "conversation_lengths", "conversation_offsets"}

    df = pd.read_parquet(rows_path)
    assert set(df.columns) == columns and len(df) == ROWS
    assert np.array_equal(np.frombuffer(df.tokens[0], "<i4"), tokens[0])
    assert np.array_equal(np.frombuffer(df.loss_mask[0], np.uint8), masks[0])
    assert df.metadata[1] == {"row": 1, "build": NAME}
    assert list(df.conversation_ids[0]) == read_provenance(rows_path, 0).conversation_ids

    ds = datasets.load_dataset("parquet", data_files=str(rows_path), split="train", cache_dir=str(tmp_path / "cache"))
    assert set(ds.column_names) == columns and len(ds) == ROWS
    assert np.array_equal(np.frombuffer(ds[0]["tokens"], "<i4"), tokens[0])
    assert ds[3]["conversation_offsets"] == read_provenance(rows_path, 3).offsets
    assert ds[2]["messages"] == [{"role": "user", "content": "sftpack row 2"}]
