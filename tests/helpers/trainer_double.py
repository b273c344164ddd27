"""A test double of slime's and miles' data-loading contract, for CI (which cannot reach the trainers' code).

What it reproduces, line for line in behaviour, from slime ``slime/utils/data.py`` (a897e1f and HEAD) and miles
``miles/utils/data.py`` (78527b91; both read parquet this way since miles 8a988dc3d):

- ``read_file``: ``ParquetFile.iter_batches()`` then ``batch.to_pylist()``, all columns; ``path@[start:end]``
  slices the rows read;
- ``_build_messages``: the prompt is ``data[--input-key]``; a string stays a string unless
  ``--apply-chat-template`` (or multimodal keys) asks for a conversation, then it becomes one user message;
- ``Dataset.__init__``: with a processor loaded from ``--hf-checkpoint``, ``assert isinstance(prompt, list)``
  with the trainers' own message; ``metadata = data.get(--metadata-key) or {}``;
- ``RolloutDataSource.get_samples``: the next ``n`` samples, wrapping into a reshuffled epoch, deep-copied into
  groups of ``n_samples_per_prompt``; ``len()`` is the dataset's.

The real code is run by ``../shared/tools/trainer_harness`` (outside CI).
"""

from __future__ import annotations

import copy
import random
import re
import types
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq


@dataclass
class Sample:  # the fields of slime.utils.types.Sample that a Dataset and sft_rollout touch
    group_index: int | None = None
    index: int | None = None
    prompt: Any = ""
    tokens: list = field(default_factory=list)
    response_length: int = 0
    label: Any = None
    reward: Any = None
    loss_mask: list | None = None
    metadata: dict = field(default_factory=dict)
    multimodal_inputs: Any = None


class Processor:
    """Stands for the processor slime/miles load from a vision-language ``--hf-checkpoint``."""


def read_file(path: str):
    m = re.match(r"^(?P<path>.*)@\[(?P<start>-?\d*):(?P<end>-?\d*)\]$", path)
    rows = []
    real = m.group("path") if m else path
    for batch in pq.ParquetFile(real).iter_batches():
        rows.extend(batch.to_pylist())
    if m:
        start, end = (int(x) if x else None for x in (m.group("start"), m.group("end")))
        rows = rows[start:end]
    return rows


def trainer_dataset(path: str, processor=None, prompt_key="messages", metadata_key="metadata",
                    apply_chat_template=False) -> list[Sample]:
    samples = []
    for data in read_file(path):
        prompt = data.get(prompt_key)
        if isinstance(prompt, str) and apply_chat_template:
            prompt = [{"role": "user", "content": prompt}]
        metadata = data.get(metadata_key) or {}
        if processor:
            assert isinstance(prompt, list), f"prompt must be a list when processor is not None, got {type(prompt)} instead"
            multimodal_inputs = {"images": None, "videos": None}  # no images in the prompt's text
        else:
            multimodal_inputs = None
        samples.append(Sample(prompt=prompt, metadata=metadata, multimodal_inputs=multimodal_inputs))
    return samples


class DataBuffer:
    """``RolloutDataSource.get_samples`` / ``__len__``."""

    def __init__(self, samples, shuffle=False, seed=42, n_samples_per_prompt=1):
        self.origin, self.samples, self.offset, self.epoch = samples, samples, 0, 0
        self.shuffle, self.seed, self.per_prompt = shuffle, seed, n_samples_per_prompt
        self._reshuffle()

    def __len__(self):
        return len(self.origin)

    def _reshuffle(self):
        if self.shuffle:
            random.seed(self.seed + self.epoch)
            order = list(range(len(self.origin)))
            random.shuffle(order)
            self.samples = [self.origin[i] for i in order]

    def get_samples(self, n):
        if self.offset + n <= len(self.samples):
            picked = self.samples[self.offset : self.offset + n]
            self.offset += n
        else:
            picked = self.samples[self.offset :]
            n -= len(picked)
            self.epoch += 1
            self._reshuffle()
            picked += self.samples[:n]
            self.offset = n
        return [[copy.deepcopy(s) for _ in range(self.per_prompt)] for s in picked]


def slime_args(path, batch=32, **kw):
    return types.SimpleNamespace(prompt_data=path, rollout_batch_size=batch, rollout_global_dataset=True,
                                 input_key="messages", metadata_key="metadata", rollout_max_context_len=None, **kw)
