"""The build's counts (:class:`BuildStats`) and the build record (:class:`BuildRecord`, ``OUT/NAME.build.yaml``).

The stages update one :class:`BuildStats`; :func:`make_record` turns it and what the build used into a
:class:`BuildRecord`, whose ``to_yaml()`` is the file and ``from_yaml()`` reads one back (the summary,
``verify`` and ``inspect`` read records through it). The first fields are the recipe's
``workload.dataset.build`` block, in its order; the YAML's key order is the field order.

    >>> r = BuildRecord.from_yaml("name: x\\nrows: 2\\nrows_sha256: ab\\ncounts: {supervised_tokens: 5}\\n", partial=True)
    >>> r.name, r.rows, r.counts.supervised_tokens, r.counts.skipped, r["rows"]
    ('x', 2, 5, None, 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib.metadata import version
from pathlib import Path

import numpy as np
import yaml

from sftpack.base.errors import UsageError
from sftpack.base.safe_yaml import load_file, load_text
from sftpack.base.version import sftpack_version
from sftpack.builder.model_files import model_files


@dataclass
class BuildStats:
    """Exact counts, updated as the build goes: the walk over the source (``reached``, ``skipped``,
    ``control_text``), packing (``conversations``, ``rows_kept``, ``rows_dropped_unsupervised``)."""

    skipped: Counter = field(default_factory=Counter)
    control_text: int = 0
    reached: int = 0  # source rows reached in the order (kept + skipped)
    conversations: int = 0
    rows_kept: int = 0
    rows_dropped_unsupervised: int = 0
    tail_tokens: int = 0  # tokens of the partial last row once the stream ended (--rows all drops them)
    duplicate_ids: int = 0  # kept conversations whose id an earlier kept one had
    ids_seen: set = field(default_factory=set, repr=False)
    fast: int = 0  # packed conversations quicktok encoded whole; the vocabulary's own engine encoded some of the others
    fast_before: int = 0  # of those, in chunks already walked past
    unrendered_fields: Counter = field(default_factory=Counter)  # kept conversations per field the template ignores
    unknown_fields: Counter = field(default_factory=Counter)  # kept conversations per message key sftpack does not know
    through_template: int = 0  # kept conversations the tokenizer's template rendered, with fields the native renderer lacks
    unknown_roles: Counter = field(default_factory=Counter)  # conversations skipped as unknown_role, per role named

    def note(self, notes: tuple, strict_id: str | None = None) -> None:
        """Count one kept conversation's notes (``control_text``, ``unrendered_fields:F``, ``unknown_fields:K``);
        ``strict_id``: ``--strict``, which refuses a conversation with a field the rows would not hold."""
        for note in notes:
            if note in ("control_text", "through_template"):
                setattr(self, note, getattr(self, note) + 1)
                continue
            kind, name = note.split(":", 1)
            if strict_id is not None:
                what = ("a field the chat template does not write" if kind == "unrendered_fields"
                        else "a message key sftpack does not know")
                raise UsageError(f"--strict: conversation {strict_id!r}: {kind}: {name} is {what}; the rows would "
                                 "not hold it")
            getattr(self, kind)[name] += 1


class Ratio(float):
    """A ratio written with 6 decimals in the build record (docs/spec.md, "Packing", item 7)."""


class _Section:
    """A nested mapping of the record, typed; ``from_dict(partial=True)`` leaves absent keys None. Keys in
    ``OPTIONAL`` are written only when set and may be absent (records written before them)."""

    OPTIONAL: tuple = ()

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if f.name not in self.OPTIONAL or getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data, where: str, partial: bool = False):
        if not isinstance(data, dict):
            if partial:
                data = {}
            else:
                raise UsageError(f"{where}: not a mapping")
        values = {}
        for f in fields(cls):
            if f.name not in data and not partial and f.name not in cls.OPTIONAL:
                raise UsageError(f"{where}: key '{f.name}' is missing")
            value = data.get(f.name)
            section = _SECTIONS.get(f.name)
            values[f.name] = section.from_dict(value, f"{where}.{f.name}", partial) if section else value
        return cls(**values)


def _plain(value):
    return value.to_dict() if isinstance(value, _Section) else value


@dataclass
class DatasetInfo(_Section):
    name: str | None
    source: str | None
    revision: str | None
    source_rows: int | None
    shape: str | None = None  # "sharegpt": read from ShareGPT's conversations [{from, value}]
    roles: dict | None = None  # then: each `from` and the role it was read as
    sha256: str | None = None  # a local source (the sample, a file, a directory): what identifies its bytes

    OPTIONAL = ("shape", "roles", "sha256")  # absent where they say nothing: a hub build's record stays as it was


@dataclass
class Counts(_Section):
    supervised_tokens: int | None
    total_tokens: int | None
    conversations_packed: int | None
    source_rows_reached: int | None
    rows_dropped_without_targets: int | None
    conversations_with_control_text: int | None
    skipped: dict | None
    tail_tokens_dropped: int | None = None  # --rows all only: the tokens of the dropped partial last row
    duplicate_ids: int | None = None  # packed conversations whose id an earlier packed one had (absent: none)
    unrendered_fields: dict | None = None  # conversations per message field the chat template wrote nothing of
    unknown_fields: dict | None = None  # conversations per message key sftpack does not know (not rendered)
    # conversations the tokenizer's template rendered in place of the native renderer (fields it does not write)
    conversations_through_template: int | None = None
    unknown_roles: dict | None = None  # the conversations skipped as unknown_role, per role (ShareGPT's `chatgpt`)

    # a --rows N record without duplicates, unrendered or unknown fields stays as it was
    OPTIONAL = ("tail_tokens_dropped", "duplicate_ids", "unrendered_fields", "unknown_fields",
                "conversations_through_template", "unknown_roles")


@dataclass(frozen=True)
class OutputPaths:
    parquet: Path  # the rows file, whatever its format
    record: Path


@dataclass(eq=False)
class BuildRecord(_Section, Mapping):
    """``OUT/NAME.build.yaml``. A read-only mapping too (``record["counts"]["skipped"]``), as the dict it was.
    A build's own record also knows where it wrote the files: ``record.paths.parquet``, ``record.paths.record``."""

    paths = None  # OutputPaths, set by the build that wrote the files (not part of the record's YAML)

    # rows_format: absent for parquet (a parquet build's record stays as it was); tokenizer_backends: absent from
    # records written before it was kept
    OPTIONAL = ("rows_format", "tokenizer_backends", "model_files")

    name: str
    tokenizer: str
    loss_mask: str
    rows: int
    row_tokens: int
    padding_tokens: int
    seed: int
    packing: str
    supervised_token_ratio: float
    parquet_sha256: str
    parquet_bytes: int
    rows_format: str | None  # the rows file's format when it is not parquet (the file the two figures above are of)
    builder: str
    rows_sha256: str
    model: str
    dataset: DatasetInfo
    counts: Counts
    tokenizer_files: dict
    tokenizer_source: str
    pins: dict
    pinned: bool  # the recipe's exact inputs: pinned tokenizer files and dataset
    tokenizer_pinned: bool
    dataset_pinned: bool
    eos_token: str
    eos_token_id: int
    renderer: str
    versions: dict
    tokenizer_backends: dict | None = None  # engine -> packed conversations it encoded (the tokens are the same); a
    # conversation counts for the vocabulary's own engine when that engine encoded any of its text
    model_files: dict | None = None  # a profile outside the package: its file, its rule's, the tokenizer directory

    def __getitem__(self, key):
        return self.to_dict()[key]

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    def to_yaml(self) -> str:
        return yaml.dump(self.to_dict(), Dumper=_RecordDumper, sort_keys=False, allow_unicode=True, width=120)

    @classmethod
    def from_yaml(cls, text: str, *, where: str = "build record", partial: bool = False):
        """A record read back; ``partial``: absent keys are None (a hand-edited or foreign record). The YAML is
        read with :mod:`sftpack.base.safe_yaml`'s limits (a record beside a rows file may be hostile)."""
        return cls.from_dict(load_text(text, where), where, partial)


_SECTIONS = {"dataset": DatasetInfo, "counts": Counts}


class _RecordDumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_RecordDumper.add_representer(str, _str_presenter)
_RecordDumper.add_representer(np.int64, lambda d, v: d.represent_int(int(v)))
_RecordDumper.add_representer(Ratio, lambda d, v: d.represent_scalar("tag:yaml.org,2002:float", f"{v:.6f}"))


def record_suffix(rows_suffix: str) -> str:
    """The build record's suffix beside a rows file with ``rows_suffix``: each format its own record, so that
    converting rows never replaces the record of the file it reads.

    >>> record_suffix(".parquet"), record_suffix(".trl.parquet"), record_suffix(".idx.parquet")
    ('.build.yaml', '.trl.build.yaml', '.idx.build.yaml')
    """
    return rows_suffix.removesuffix(".parquet") + ".build.yaml"


def record_path_beside(parquet) -> Path:
    """``NAME.build.yaml`` beside ``NAME.parquet`` (``NAME.trl.build.yaml`` beside ``NAME.trl.parquet``: a rows
    file of another format has its own)."""
    from sftpack.rows.formats import format_of_path, stem_of

    return Path(parquet).with_name(stem_of(parquet) + record_suffix(format_of_path(parquet).suffix))


def read_record_beside(parquet) -> BuildRecord | None:
    """The build record beside a rows file, read partially (absent keys None), or None when there is no
    readable one (``inspect`` only wants a hint from it)."""
    path = record_path_beside(parquet)
    try:
        return BuildRecord.from_dict(load_file(path), str(path), partial=True)
    except UsageError:  # absent, unreadable, too large, hostile or not a record
        return None


def make_record(*, profile, vocab, encoder, source, name: str, rows: int, row_tokens: int, seed: int, tokenizer=None,
                rows_sha256: str, supervised: int, stats: BuildStats, parquet: tuple[str, int],
                every_row: bool = False, rows_format: str = "parquet") -> BuildRecord:
    """The record of a finished build: what it was asked (``name``, ``rows``, ...), what it used (``profile``,
    ``vocab``, ``encoder``, ``source``), what it wrote (``rows_sha256``, ``supervised`` tokens, ``parquet`` =
    (sha256, bytes)) and ``stats``. ``every_row``: ``--rows all`` (``rows`` is then the rows the source gave)."""
    from sftpack.sources.pins import TULU_REPO, TULU_REVISION

    info = vocab.info
    tokenizer_pinned = bool(info.pins) and all(state == "match" for state in info.pins.values()) and info.source == "hub"
    hub = source.info.location == "hub"
    dataset_pinned = hub and source.info.revision == TULU_REVISION
    total = rows * row_tokens
    files = "; ".join(f"{f} sha256 {h}" for f, h in info.files.items())
    packing = ("source conversations in a seeded global permutation, concatenated with an EOS token "
               f"({vocab.eos_token}) between them and cut into consecutive {row_tokens:,}-token rows; "
               "rows without supervised targets are skipped"
               + ("; every full row until the source ended (--rows all), the partial last row dropped" if every_row else ""))
    _warn_fields(stats, profile.model)
    return BuildRecord(
        name=name, tokenizer=f"{info.description} ({files})", loss_mask=profile.loss_mask, rows=rows,
        row_tokens=row_tokens, padding_tokens=0, seed=seed, packing=packing,
        supervised_token_ratio=Ratio(round(supervised / total, 6)), parquet_sha256=parquet[0], parquet_bytes=parquet[1],
        rows_format=None if rows_format == "parquet" else rows_format,
        builder=f"sftpack {sftpack_version()} (sftpack build --model {profile.model})", rows_sha256=rows_sha256,
        model=profile.model,
        dataset=DatasetInfo(name="Tulu 3 SFT mixture" if hub else source.info.dataset,
                            source=TULU_REPO if hub else source.info.location, revision=source.info.revision,
                            source_rows=len(source), shape=source.info.shape, roles=source.info.roles,
                            sha256=getattr(source.info, "sha256", None)),
        counts=Counts(supervised_tokens=int(supervised), total_tokens=total, conversations_packed=stats.conversations,
                      source_rows_reached=stats.reached, rows_dropped_without_targets=stats.rows_dropped_unsupervised,
                      conversations_with_control_text=stats.control_text, skipped=dict(sorted(stats.skipped.items())),
                      tail_tokens_dropped=stats.tail_tokens if every_row else None,
                      duplicate_ids=stats.duplicate_ids or None,
                      unrendered_fields=dict(sorted(stats.unrendered_fields.items())) or None,
                      unknown_fields=dict(sorted(stats.unknown_fields.items())) or None,
                      conversations_through_template=stats.through_template or None,
                      unknown_roles=dict(sorted(stats.unknown_roles.items())) or None),
        tokenizer_files=dict(info.files), tokenizer_source=info.source, pins=dict(info.pins),
        pinned=tokenizer_pinned and dataset_pinned, tokenizer_pinned=tokenizer_pinned, dataset_pinned=dataset_pinned,
        eos_token=vocab.eos_token, eos_token_id=int(vocab.eos_id), renderer=encoder.renderer_description,
        versions={"sftpack": sftpack_version(), "pyarrow": version("pyarrow"), "tiktoken": version("tiktoken"),
                  "tokenizers": version("tokenizers")},
        tokenizer_backends=_backends(vocab, stats),
        model_files=model_files(profile, tokenizer),
    )


def _warn_fields(stats: BuildStats, model: str) -> None:
    """One warning for the fields the rows do not hold (the record counts them per field)."""
    from sftpack.tokenizers.loading import warn_once

    for kind, counts, why in (("unrendered_fields", stats.unrendered_fields, f"{model}'s chat template writes nothing of"),
                              ("unknown_fields", stats.unknown_fields, "sftpack does not know, and did not render")):
        if counts:
            listed = ", ".join(f"{name} ({n:,} conversations)" for name, n in sorted(counts.items()))
            warn_once(f"{kind}: the rows hold conversations with message fields {why}: {listed}; the build record "
                      f"counts them (--strict refuses them)")


def _backends(vocab, stats: BuildStats) -> dict:
    own, fast = vocab.engine_names()
    counts = Counter({fast: stats.fast})
    counts[own] += stats.conversations - stats.fast
    return {engine: n for engine, n in sorted(counts.items()) if n}
