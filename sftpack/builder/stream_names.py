"""Output names that tell the truth about the parameters they were built with.

A profile's ``build_name`` (``qwen35-tulu3-fixed8192-v1``) names the published row stream: the profile's
template, loss mask and tokenizer, its seed and its row length. A build with another ``--seed`` or
``--row-tokens`` makes another stream, so its name says so (``qwen35-tulu3-fixed8192-v1-seed7-rowtokens4096``);
that name is written into the rows file, its build record and the file names. ``--rows`` only says how many rows
of the stream a build keeps (the first N rows of any build are the rows of ``--rows N``), so the rows file and
the record keep the stream's name and the *file* names add the count (``…-v1-rows64.parquet``).

    >>> published = {"rows": 6400, "row_tokens": 8192, "seed": 42}
    >>> stream_name("qwen35-tulu3-fixed8192-v1", published, row_tokens=8192, seed=7)
    'qwen35-tulu3-fixed8192-v1-seed7'
    >>> file_stem("qwen35-tulu3-fixed8192-v1", published, rows=64)
    'qwen35-tulu3-fixed8192-v1-rows64'
    >>> parse_stream_name("qwen35-tulu3-fixed8192-v1-seed7-rowtokens4096")
    ('qwen35-tulu3-fixed8192-v1', {'seed': 7, 'row_tokens': 4096})
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sftpack.base.arguments import argument
from sftpack.base.errors import UsageError

# The parameters that change the stream, in the order their suffixes are written.
STREAM_SUFFIXES = (("seed", "seed"), ("row_tokens", "rowtokens"))
_SUFFIX = re.compile(r"-(seed|rowtokens)(\d+)$")


def stream_name(build_name: str, published: dict, *, row_tokens: int, seed: int) -> str:
    """The name written into the rows and the record: ``build_name`` plus a suffix per stream parameter that
    differs from the published one."""
    values = {"seed": seed, "row_tokens": row_tokens}
    return build_name + "".join(f"-{suffix}{values[key]}" for key, suffix in STREAM_SUFFIXES
                                if values[key] != published.get(key, values[key]))


def file_stem(name: str, published: dict, *, rows) -> str:
    """The output files' stem: the stream's name, plus the row count when it is not the published one."""
    if rows == published.get("rows", rows):
        return name
    return f"{name}-rows{rows}" if isinstance(rows, int) else f"{name}-rows-{rows}"


def parse_stream_name(name: str) -> tuple[str, dict]:
    """``(build_name, {parameter: value})``: the published name a stream name was derived from and the
    parameters its suffixes state."""
    stated: dict = {}
    keys = {suffix: key for key, suffix in STREAM_SUFFIXES}
    while True:
        match = _SUFFIX.search(name)
        if match is None or keys[match[1]] in stated:
            return name, dict(reversed(list(stated.items())))
        stated[keys[match[1]]] = int(match[2])
        name = name[: match.start()]


def differences(published: dict, **values) -> list[str]:
    """``["--seed 7 (published: 42)", ...]`` for the values that differ from the published ones."""
    return [f"{argument(key)} {value} (published: {published[key]})" for key, value in values.items()
            if key in published and value != published[key]]


@dataclass(frozen=True)
class OutputName:
    name: str  # written into the rows file and the build record
    stem: str  # of the output files: STEM.parquet, STEM.build.yaml


def output_name(build_name: str, published: dict, *, explicit: str | None, rows, row_tokens: int,
                seed: int) -> OutputName:
    """The names of a build: ``explicit`` (``--name``) as given, except the published name for another
    stream, which is refused; else the stream's name and a file stem stating the row count."""
    stream = stream_name(build_name, published, row_tokens=row_tokens, seed=seed)
    if explicit is None:
        return OutputName(stream, file_stem(stream, published, rows=rows))
    changed = differences(published, seed=seed, row_tokens=row_tokens)
    if explicit == build_name and changed:
        raise UsageError(f"{argument('name')} {explicit} is the published build name, but {', '.join(changed)}: "
                         f"these are other rows; choose another {argument('name')} (without one they are named "
                         f"{stream})")
    return OutputName(explicit, explicit)
