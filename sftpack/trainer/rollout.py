"""Feed packed rows to slime / miles: ``generate_rollout`` for ``--rollout-function-path``.

slime loads ``--prompt-data ROWS.parquet`` itself (``ParquetFile.iter_batches()`` then ``to_pylist()``) and keeps
only ``row[--input-key]`` as ``Sample.prompt`` (``[{"role": "user", "content": "sftpack row K"}]``; the plain
string ``"sftpack row K"`` in format-1 files) and ``row[--metadata-key]`` as
``Sample.metadata`` (``{"row": K, "build": NAME}``); every other column is dropped. So the tokens are read here,
from the same parquet, at ``metadata["row"]``: one cached reader per file that decodes only the row groups a
batch touches (64 rows each), columns ``tokens`` and ``loss_mask`` only. No tokenizer is loaded.

Contract, as slime's ``sft_rollout``: each sample gets ``tokens`` (the row, list of int), ``response_length``
(from the first supervised token to the end of the row), ``loss_mask`` (the last ``response_length`` mask
values) and ``reward = 0``; the groups from ``data_buffer.get_samples(args.rollout_batch_size)`` are returned.

    >>> import types
    >>> sample = types.SimpleNamespace(tokens=None)
    >>> fill_sample(sample, np.array([5, 6, 7, 8], np.int32), np.array([0, 0, 1, 0], np.uint8), where="row 0")
    >>> sample.tokens, sample.response_length, sample.loss_mask, sample.reward
    ([5, 6, 7, 8], 2, [1, 0], 0)
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError, one_line
from sftpack.rows.formats import open_rows_file
from sftpack.rows.model import NotSftpackRows

__all__ = ["RolloutError", "RowSource", "fill_sample", "generate_rollout", "row_source"]

# slime's --prompt-data PATH@[start:end] (either end optional): prompt_data_path and available_rows read one syntax
_PROMPT_SLICE = re.compile(r"^(?P<path>.*)@\[(?P<start>-?[0-9]{0,18}):(?P<stop>-?[0-9]{0,18})\]$")

# Decoded row groups are kept (least recently used out first) up to this many MiB per file: with
# --rollout-shuffle a 128-row batch touches ~70 of a 6,400-row file's 100 groups, so without a cache every batch
# would decode most of the file again; with it each group is decoded about once per run (the whole default file
# is 250 MiB decoded). SFTPACK_ROLLOUT_CACHE_MB=0 keeps only the groups of the current batch.
def cache_mb_setting() -> float:
    """SFTPACK_ROLLOUT_CACHE_MB (default 512), read when a file is opened."""
    return float(os.environ.get("SFTPACK_ROLLOUT_CACHE_MB", 512))
DECODE_THREADS = min(8, os.cpu_count() or 1)  # row groups decode in parallel (pyarrow releases the GIL)


class RolloutError(ValueError):
    """The samples handed to ``generate_rollout`` cannot be fed from sftpack rows. Its message is one printable
    line: text from the samples or the file (a build name, a prompt, a path) is escaped, never written raw."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


class RowSource:
    """Random access to the rows of one sftpack parquet; decodes only the row groups asked for.

    ``RowSource(path).rows([3, 70])`` -> ``(tokens int32 [2, row_tokens], loss_mask uint8 [2, row_tokens])``.
    """

    def __init__(self, path: str | Path, cache_mb: float | None = None):
        self.path = str(path)
        try:
            self._file = open_rows_file(path)
        except UsageError as e:  # NotSftpackRows included: say which file slime was given
            message = str(e) if str(e).startswith(str(path)) else f"{path}: {e}"
            raise RolloutError(f"--prompt-data {message}") from None
        self.row_tokens = self._file.row_tokens
        self.build = self._file.build_name
        self._starts = self._file.group_bounds  # first row of each group, then the end
        self.num_rows = self._file.num_rows
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = (cache_mb_setting() if cache_mb is None else cache_mb) * 2**20
        self._pool: ThreadPoolExecutor | None = None
        self.groups_decoded = 0  # for tests and benchmarks

    def rows(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``indices`` (in that order) as ``(tokens, loss_mask)`` arrays."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        bad = idx[(idx < 0) | (idx >= self.num_rows)]
        if len(bad):
            raise RolloutError(f"--prompt-data {self.path}: row {int(bad[0])} does not exist (the file has {self.num_rows} rows)")
        groups = np.searchsorted(self._starts, idx, side="right") - 1
        needed = [int(g) for g in np.unique(groups)]
        batch = {g: self._cache[g] for g in needed if g in self._cache}
        missing = [g for g in needed if g not in batch]
        batch.update(zip(missing, self._decode_all(missing)))
        self.groups_decoded += len(missing)
        tokens = np.empty((len(idx), self.row_tokens), dtype=np.int32)
        mask = np.empty((len(idx), self.row_tokens), dtype=np.uint8)
        for i, (g, r) in enumerate(zip(groups, idx)):
            t, m = batch[int(g)]
            tokens[i] = t[r - self._starts[g]]
            mask[i] = m[r - self._starts[g]]
        self._remember(batch)
        return tokens, mask

    def _remember(self, batch: dict) -> None:
        for g, arrays in batch.items():
            if g not in self._cache:
                self._cache[g] = arrays
                self._cache_bytes += arrays[0].nbytes + arrays[1].nbytes
            self._cache.move_to_end(g)
        while self._cache and self._cache_bytes > self._cache_limit:
            t, m = self._cache.popitem(last=False)[1]
            self._cache_bytes -= t.nbytes + m.nbytes

    def _decode_all(self, groups: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        if len(groups) <= 1 or DECODE_THREADS == 1:
            return [self._decode(g) for g in groups]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="sftpack-rows")
        return list(self._pool.map(self._decode, groups))

    def _decode(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        try:  # views of the group's own arrow buffers: nothing else is kept alive
            tokens, mask = self._file.checked_group(group)
        except NotSftpackRows as e:
            raise RolloutError(f"--prompt-data {self.path}: row group {group}: {e}") from e
        bad = np.flatnonzero((tokens < 0).any(axis=1))  # no embedding has a negative index: fail here, not on the GPU
        if len(bad):
            row = int(self._starts[group]) + int(bad[0])
            raise RolloutError(f"--prompt-data {self.path}: row {row} holds a negative token id "
                               f"({int(tokens[bad[0]][tokens[bad[0]] < 0][0])})")
        return tokens, mask


_SOURCES: dict[tuple, RowSource] = {}


def row_source(path: str | Path) -> RowSource:
    """The cached ``RowSource`` of ``path``; reopened when the file changes (size or mtime)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:  # ValueError: a path holding a NUL
        raise RolloutError(f"--prompt-data {path}: {getattr(e, 'strerror', None) or e}") from None
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    source = _SOURCES.get(key)
    if source is None:
        for old in [k for k in _SOURCES if k[0] == key[0]]:
            del _SOURCES[old]
        source = _SOURCES[key] = RowSource(path)
    return source


def prompt_data_path(value: str) -> str:
    """slime's ``--prompt-data`` without its optional ``@[start:end]`` row slice (row ids are absolute anyway).

    >>> prompt_data_path("rows.parquet@[0:128]"), prompt_data_path("rows.parquet")
    ('rows.parquet', 'rows.parquet')
    """
    m = _PROMPT_SLICE.match(value)
    return m.group("path") if m else value


def fill_sample(sample, tokens: np.ndarray, mask: np.ndarray, where: str) -> None:
    """Set ``tokens``, ``response_length``, ``loss_mask`` and ``reward`` of one sample from its row."""
    if mask[0] != 0:
        # The trainer predicts token t from t-1: position 0 has no prediction, so it can never be a target.
        raise RolloutError(f"{where}: loss_mask[0] is 1; position 0 is never a target (not rows written by sftpack build)")
    supervised = np.flatnonzero(mask)
    if len(supervised) == 0:
        raise RolloutError(f"{where}: the row has no supervised token (sftpack build never writes such rows)")
    if mask[supervised].max() != 1:
        raise RolloutError(f"{where}: loss_mask holds values other than 0 and 1")
    first = int(supervised[0])
    sample.tokens = tokens.tolist()
    sample.response_length = len(tokens) - first
    sample.loss_mask = mask[first:].tolist()
    sample.reward = 0


def _row_of(sample, path: str, source: RowSource) -> int:
    metadata = getattr(sample, "metadata", None)
    prompt = getattr(sample, "prompt", None)
    row = metadata.get("row") if isinstance(metadata, dict) else None
    if not isinstance(row, (int, np.integer)) or isinstance(row, bool):
        raise RolloutError(
            f"--prompt-data {path}: sample (prompt {str(prompt)[:40]!r}) has no integer metadata['row'] "
            f"(metadata {str(metadata)[:80]}): not an sftpack row, or slime was not given --metadata-key metadata")
    row = int(row)
    if not 0 <= row < source.num_rows:
        shown = str(row) if row.bit_length() < 100 else f"of {row.bit_length():,} bits"  # str() refuses 4,300+ digits
        raise RolloutError(f"--prompt-data {path}: row {shown} does not exist (the sample's metadata['row']; the "
                           f"file has {source.num_rows} rows)")
    build = metadata.get("build")
    if source.build and build is not None and build != source.build:
        raise RolloutError(f"--prompt-data {path}: row {row} says build {build!r} but the file holds {source.build!r}")
    named = _named_row(prompt)
    if named is not None and named != str(row):
        shown = named if len(named) <= 30 else f"{named[:12]}... ({len(named):,} digits)"
        raise RolloutError(f"--prompt-data {path}: row {row}: prompt {str(prompt)[:60]!r} names another row ({shown})")
    return row


def _named_row(prompt) -> str | None:
    """The row an sftpack prompt names, as decimal digits without leading zeros (a prompt may name a row of any
    number of digits: it is compared as text, never converted): ``"sftpack row K"`` (format 1) or
    ``[{"content": "sftpack row K", ...}]``.

    >>> _named_row("sftpack row 3"), _named_row([{"role": "user", "content": "sftpack row 04"}]), _named_row("hi")
    ('3', '4', None)
    """
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], dict):
        prompt = prompt[0].get("content")
    m = re.fullmatch(r"sftpack row ([0-9]+)", prompt) if isinstance(prompt, str) else None
    return (m.group(1).lstrip("0") or "0") if m else None


def available_rows(prompt_data: str, source: RowSource, data_buffer) -> int:
    """How many rows the trainer's data source holds: its own length when it has one (slime's and miles'
    ``RolloutDataSourceWithBuffer``), else the file's rows within ``--prompt-data``'s ``@[start:end]`` slice."""
    try:
        n = len(data_buffer)
    except (TypeError, AttributeError):
        n = None
    if isinstance(n, int) and n > 0:
        return n
    m = _PROMPT_SLICE.match(prompt_data)
    if not m:
        return source.num_rows
    start, stop = (int(x) if x else None for x in m.group("start", "stop"))
    return len(range(source.num_rows)[start:stop])


def _check_args(args, prompt_data: str, path: str, source: RowSource, data_buffer) -> None:
    """Misuse the trainers would only report later, or not at all, refused on the first call with one line."""
    batch = getattr(args, "rollout_batch_size", None)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise RolloutError(f"pretokenized_sft_rollout needs --rollout-batch-size >= 1 (got {batch!r})")
    rows = available_rows(prompt_data, source, data_buffer)
    if rows < batch:
        # slime would wrap into a second epoch that still lacks rows and fail in dp_schedule.py; miles with
        # "Not enough samples".
        raise RolloutError(f"--prompt-data {prompt_data}: holds {rows} rows but --rollout-batch-size is {batch}: "
                           f"build at least {batch} rows (sftpack build --rows) or lower --rollout-batch-size")
    max_len = getattr(args, "rollout_max_context_len", None)
    if max_len is not None and max_len < source.row_tokens:
        # slime's sft_rollout would silently truncate; a fixed-length row cut short is no longer the recipe's row.
        raise RolloutError(f"--prompt-data {path}: rows are {source.row_tokens} tokens but --rollout-max-context-len "
                           f"is {max_len}; unset it or build rows of that length")


def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
    """slime/miles rollout function: the next ``args.rollout_batch_size`` rows, tokens and loss masks set."""
    if evaluation:
        raise RolloutError("pretokenized_sft_rollout has no evaluation rollout: SFT rows have nothing to generate "
                           "(leave out --eval-interval, or give --eval-function-path another function)")
    if getattr(args, "rollout_global_dataset", True) is False:
        raise RolloutError("pretokenized_sft_rollout needs --rollout-global-dataset (the rows come from --prompt-data)")
    if not getattr(args, "prompt_data", None):
        raise RolloutError("pretokenized_sft_rollout needs --prompt-data ROWS.parquet (the parquet sftpack build wrote)")
    if not hasattr(data_buffer, "get_samples"):
        raise RolloutError(f"pretokenized_sft_rollout needs a data buffer with get_samples(); got {type(data_buffer).__name__}")
    prompt_data = args.prompt_data
    if isinstance(prompt_data, os.PathLike):
        prompt_data = os.fspath(prompt_data)
    if not isinstance(prompt_data, str):
        raise RolloutError(f"--prompt-data must be one path (a string), not a {type(prompt_data).__name__} "
                           f"({str(prompt_data)[:80]})")
    path = prompt_data_path(prompt_data)
    source = row_source(path)
    _check_args(args, prompt_data, path, source, data_buffer)

    groups = data_buffer.get_samples(args.rollout_batch_size)
    samples = [sample for group in groups for sample in group]
    rows = [_row_of(sample, path, source) for sample in samples]
    tokens, mask = source.rows(rows)
    for sample, row, t, m in zip(samples, rows, tokens, mask):
        fill_sample(sample, t, m, where=f"--prompt-data {path} row {row}")
    return groups
