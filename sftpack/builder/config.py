"""What a build is asked to do: :class:`BuildConfig`, one declaration per option.

Each field carries its command-line flag, help text and check; ``sftpack build``'s options are generated from
them (:func:`add_arguments`) and ``sftpack verify --rebuild`` reuses the ones it needs, so an option is declared
once (TRL's ``SFTConfig`` + ``HfArgumentParser`` is the model). The checks run in ``__post_init__`` and raise
:class:`~sftpack.base.errors.UsageError` with the one line the command line prints.

    >>> BuildConfig(model="Qwen3.5-122B-A10B", rows=0)
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: rows must be at least 1 (got 0)
    >>> BuildConfig(model="Qwen3.5-122B-A10B", rows=2.5)
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: rows must be a whole number or 'all' (got 2.5)
    >>> BuildConfig(model="Qwen3.5-122B-A10B", row_tokens=2.5)
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: row_tokens must be an integer (got 2.5)

Errors name the Python argument (``rows``, ``overwrite=True``) to a Python caller and the flag (``--rows``,
``--overwrite``) on the command line (:mod:`sftpack.base.arguments`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields

from sftpack.base.arguments import add_options, argument, check_options, named, option, options_from
from sftpack.base.errors import UsageError
from sftpack.base.plain_names import plain_name_problem

MAX_ROW_TOKENS = 1 << 24  # provenance offsets are int32; a 16M-token row is already far past any trainer
MAX_WORKERS = 256
# Used when neither the option nor the profile's `defaults:` gives a value (the recipe workload's figures).
DEFAULTS = {"rows": 6400, "row_tokens": 8192, "seed": 42}


def _range(low: int, high: int | None = None, too_low: str = "must be at least {low}"):
    """A check: ``low <= value <= high``; ``too_low`` words the first failure (``{low}`` is filled in)."""

    def check(v, flag):
        if v < low:
            return f"{flag} {too_low.format(low=low)} (got {v})"
        if high is not None and v > high:
            return f"{flag} must be at most {high:,} (got {v:,})"
        return None

    return check


ALL = "all"  # --rows all: every full row until the source ends


def rows_value(text: str):
    """``--rows`` on the command line: a whole number, or ``all``."""
    if text == ALL:
        return ALL
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: a whole number or `all`") from None


def _rows_check(v, flag):
    if v == ALL:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        return f"{flag} must be a whole number or {ALL!r} (got {v!r})"
    return _range(1)(v, flag)


def _known_model(v, flag):
    """A model profile that loads (its one-line error, the known models whole, otherwise): checked when the config
    is made, not when the build starts."""
    from sftpack.families.profiles import load_profile

    load_profile(v)
    return None


def _known_format(v, flag):
    from sftpack.rows.formats import ROW_FORMATS

    return None if v in ROW_FORMATS else f"{flag} {v!r}: unknown rows format (known: {', '.join(sorted(ROW_FORMATS))})"


def _known_backend(v, flag):
    from sftpack.tokenizers.backend import BACKENDS

    return None if v in BACKENDS else f"{flag} {v!r}: unknown tokenizer backend (known: {', '.join(BACKENDS)})"


def _ray_address(v, flag):
    return f"{flag} '': a Ray address is needed (HOST:PORT, ray://HOST:PORT or auto)" if not v.strip() else None


def _directory(v, flag):
    return f"{flag} '': an output directory is needed (use . for the current one)" if not v else None


@dataclass
class BuildConfig:
    model: str = option(help="model profile (see `sftpack models`) or a profile file PATH.yaml", check=_known_model)
    source: str = option("hub", help="hub (pinned Tulu 3 mixture), sample (bundled synthetic sample), a "
                         ".parquet/.jsonl/.json/.arrow file, a directory of parquet shards, a datasets save_to_disk "
                         "directory, or a hub dataset id ORG/NAME[@REVISION] (default: hub)")
    sharegpt: bool = option(False, kind=bool, help="the source is ShareGPT-shaped (conversations: [{from, value}]): "
                            "read as messages with from human->user, gpt->assistant, system->system (the build "
                            "record lists the mapping)")
    tokenizer: str | None = option(None, help="local tokenizer directory or tokenizer.json (default: the hub at the "
                                   "profile's pinned revision; offline, the profile's offline vocabulary where it has "
                                   "one: `sftpack models` says which)")
    rows: int | str | None = option(None, kind=rows_value, check=_rows_check, help="rows to keep, or `all`: every full "
                                   "row until the source ends, the partial last row dropped (default: the profile's, 6400)")
    row_tokens: int | None = option(None, kind=int, help="tokens per row (default: the profile's, 8192)",
                                    check=_range(2, MAX_ROW_TOKENS, "must be at least {low}: position 0 is never a target"))
    seed: int | None = option(None, kind=int, help="permutation seed (default: the profile's, 42)",
                              check=_range(0, too_low="must be a non-negative integer"))
    out: str = option(".", help="output directory (default: .)", check=_directory)
    name: str | None = option(None, help="output name (default: the profile's build name)", check=plain_name_problem)
    workers: int | None = option(None, kind=int, check=_range(0, MAX_WORKERS, "must be 0 (all cores) or more"),
                                 help="encoding processes (default 0: all cores); output is identical for any value")
    ray: str | None = option(None, check=_ray_address, metavar="ADDRESS",
                             help="encode on a Ray cluster: its address (HOST:PORT of the head, ray://HOST:PORT, or "
                             "auto: the cluster this process belongs to); every node must see the source and the "
                             "tokenizer; output is identical to the local build (needs sftpack[ray])")
    overwrite: bool = option(False, kind=bool, help="replace existing outputs")
    strict: bool = option(False, kind=bool, help="stop at the first malformed conversation (exit 2) instead of skipping it")
    allow_unpinned: bool = option(False, kind=bool,
                                  help="build even if hub files or the dataset revision do not match the pins")
    dataset_revision: str | None = option(None, help="dataset revision for --source hub (default: the pinned Tulu 3 "
                                          "one) or for a hub dataset id (default: main)")
    progress: bool = option(True, kind=bool, flag="--no-progress", help="no progress bar")
    format: str = option("parquet", metavar="FORMAT", check=_known_format, help="rows file format: parquet "
                         "(sftpack's, what slime/miles read), trl (TRL's SFTTrainer) or megatron-bridge (its packed "
                         "parquet), or a format a plugin registered (default: parquet)")
    tokenizer_backend: str = option("auto", check=_known_backend,
                                    help="auto: quicktok (package quicktok-v1) for the texts it provably encodes as "
                                    "tiktoken does, tiktoken for the rest; tiktoken: tiktoken only. The rows are the "
                                    "same either way (default: auto)")

    def __post_init__(self):
        check_options(self)
        if self.dataset_revision is not None and self.source != "hub" and not hub_dataset(self.source):
            raise UsageError(f"{argument('dataset_revision')} applies to {argument('source')} hub or a hub dataset id "
                             f"only (the source is {self.source})")

    def resolved(self, profile_defaults: dict) -> dict:
        """``rows``, ``row_tokens`` and ``seed``: this config's, else the profile's, else :data:`DEFAULTS`;
        a profile's value is checked like an option's."""
        out = {}
        for f in fields(self):
            if f.name in DEFAULTS:
                value = getattr(self, f.name)
                out[f.name] = value if value is not None else profile_defaults.get(f.name, DEFAULTS[f.name])
                problem = f.metadata["check"](out[f.name], named(f))
                if problem:
                    raise UsageError(problem)
        return out


def hub_dataset(source: str) -> bool:
    """Whether ``source`` reads as a hub dataset id (``ORG/NAME[@REVISION]``) rather than a local path."""
    from sftpack.sources.huggingface import hub_id

    return not os.path.exists(source) and hub_id(source) is not None


def add_arguments(parser, names=None, **how) -> None:
    """Add the :class:`BuildConfig` options ``names`` (default: all) to an argparse parser
    (:func:`sftpack.base.arguments.add_options`)."""
    add_options(parser, BuildConfig, names, **how)


def from_arguments(args) -> BuildConfig:
    """The :class:`BuildConfig` of parsed ``sftpack build`` arguments."""
    return options_from(BuildConfig, args)
