"""Output names that tell the truth about the parameters they were built with.

A profile's ``build_name`` (``qwen35-tulu3-fixed8192-v1``) names the published row stream: the profile's
template, loss mask and tokenizer, the published dataset at its pinned revision, its seed and its row length. A
build from another source (the bundled sample, a local file, another hub dataset or revision) or with another
``--seed`` or ``--row-tokens`` makes another stream, so its name says so
(``qwen35-tulu3-fixed8192-v1-sample-seed7-rowtokens4096``); that name is written into the rows file, its build
record and the file names. The record identifies the source exactly (hub id and commit, or the file's sha256). ``--rows`` only says how many rows
of the stream a build keeps (the first N rows of any build are the rows of ``--rows N``), so the rows file and
the record keep the stream's name and the *file* names add the count (``…-v1-rows64.parquet``).

    >>> published = {"rows": 6400, "row_tokens": 8192, "seed": 42}
    >>> stream_name("qwen35-tulu3-fixed8192-v1", published, row_tokens=8192, seed=7)
    'qwen35-tulu3-fixed8192-v1-seed7'
    >>> stream_name("qwen35-tulu3-fixed8192-v1", published, row_tokens=8192, seed=42, source="sample")
    'qwen35-tulu3-fixed8192-v1-sample'
    >>> file_stem("qwen35-tulu3-fixed8192-v1-sample", published, rows=64)
    'qwen35-tulu3-fixed8192-v1-sample-rows64'
    >>> parse_stream_name("qwen35-tulu3-fixed8192-v1-local-seed7-rowtokens4096")
    ('qwen35-tulu3-fixed8192-v1', {'source': 'local', 'seed': 7, 'row_tokens': 4096})
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sftpack.base.arguments import argument
from sftpack.base.errors import UsageError

# The parameters that change the stream, in the order their suffixes are written.
STREAM_SUFFIXES = (("seed", "seed"), ("row_tokens", "rowtokens"))
_SUFFIX = re.compile(r"-(seed|rowtokens)(\d+)$")

# Where rows that are not the published dataset's came from, as their name says it (after the build name).
SOURCE_TAGS = {
    "sample": "sample",  # the bundled synthetic sample
    "local": "a local file or directory",
    "hubdata": "another hub dataset",
    "unpinned": "the Tulu 3 mixture at another revision",
    "memory": "rows handed to the build in Python",
}
_SOURCE = re.compile(r"-(" + "|".join(SOURCE_TAGS) + r")$")
_LOCATION_TAGS = {"sample": "sample", "file": "local", "save_to_disk": "local", "memory": "memory"}


def source_tag(location: str | None, repo: str | None = None, revision: str | None = None) -> str | None:
    """The tag a build's name carries for its source (a :class:`~sftpack.sources.SourceInfo` ``location``, the
    hub repo and revision), or None for the published dataset at its pinned revision.

    >>> source_tag("hub", "allenai/tulu-3-sft-mixture", "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"), source_tag("file")
    (None, 'local')
    """
    from sftpack.sources.pins import TULU_REPO, TULU_REVISION

    if location in ("hub", "hub-dataset"):
        if repo in (None, TULU_REPO):
            return None if revision == TULU_REVISION else "unpinned"
        return "hubdata"
    return _LOCATION_TAGS.get(location or "", "local")


def stream_name(build_name: str, published: dict, *, row_tokens: int, seed: int, source: str | None = None) -> str:
    """The name written into the rows and the record: ``build_name``, the source's tag when it is not the
    published dataset, and a suffix per stream parameter that differs from the published one."""
    values = {"seed": seed, "row_tokens": row_tokens}
    return build_name + (f"-{source}" if source else "") + "".join(
        f"-{suffix}{values[key]}" for key, suffix in STREAM_SUFFIXES if values[key] != published.get(key, values[key]))


def file_stem(name: str, published: dict, *, rows) -> str:
    """The output files' stem: the stream's name, plus the row count when it is not the published one."""
    if rows == published.get("rows", rows):
        return name
    return f"{name}-rows{rows}" if isinstance(rows, int) else f"{name}-rows-{rows}"


def parse_stream_name(name: str) -> tuple[str, dict]:
    """``(build_name, {parameter: value})``: the published name a stream name was derived from and the
    parameters its suffixes state (``source``: the source's tag)."""
    stated: dict = {}
    keys = {suffix: key for key, suffix in STREAM_SUFFIXES}
    while True:
        match = _SUFFIX.search(name)
        if match is None or keys[match[1]] in stated:
            break
        stated[keys[match[1]]] = int(match[2])
        name = name[: match.start()]
    match = _SOURCE.search(name)
    if match is not None:
        stated["source"] = match[1]
        name = name[: match.start()]
    return name, dict(reversed(list(stated.items())))


def differences(published: dict, **values) -> list[str]:
    """``["--seed 7 (published: 42)", ...]`` for the values that differ from the published ones."""
    return [f"{argument(key)} {value} (published: {published[key]})" for key, value in values.items()
            if key in published and value != published[key]]


@dataclass(frozen=True)
class OutputName:
    name: str  # written into the rows file and the build record
    stem: str  # of the output files: STEM.parquet, STEM.build.yaml


def output_name(build_name: str, published: dict, *, explicit: str | None, rows, row_tokens: int,
                seed: int, source: str | None = None) -> OutputName:
    """The names of a build: ``explicit`` (``--name``) as given, except the published name for another
    stream, which is refused; else the stream's name and a file stem stating the row count. ``source``: the
    source's tag (:func:`source_tag`), None for the published dataset."""
    stream = stream_name(build_name, published, row_tokens=row_tokens, seed=seed, source=source)
    if explicit is None:
        return OutputName(stream, file_stem(stream, published, rows=rows))
    changed = differences(published, seed=seed, row_tokens=row_tokens)
    if source:
        changed.insert(0, f"{argument('source')} from {SOURCE_TAGS[source]} (published: the Tulu 3 mixture at its "
                          "pinned revision)")
    if explicit == build_name and changed:
        raise UsageError(f"{argument('name')} {explicit} is the published build name, but {', '.join(changed)}: "
                         f"these are other rows; choose another {argument('name')} (without one they are named "
                         f"{stream})")
    return OutputName(explicit, explicit)


def build_source_tag(spec: str, source=None, revision: str | None = None) -> str | None:
    """What a build's name says of its source, known before the source is opened: a ready ``source`` says where
    it is from, else ``--source`` (``spec``) and ``--dataset-revision`` do."""
    from sftpack.builder.config import hub_dataset
    from sftpack.sources.pins import TULU_REPO, TULU_REVISION
    from sftpack.sources.huggingface import hub_id

    if source is not None:
        info = source.info
        return source_tag(info.location, TULU_REPO if info.location == "hub" else info.dataset, info.revision)
    if spec == "hub":
        return source_tag("hub", TULU_REPO, revision or TULU_REVISION)
    if spec == "sample":
        return source_tag("sample")
    if hub_dataset(spec):
        repo, stated = hub_id(spec)
        return source_tag("hub-dataset", repo, stated or revision)
    return source_tag("file")
