"""Building on a Ray cluster (``sftpack build --ray ADDRESS``): the local build's own steps, with its encoding
spread over the cluster's CPUs as Ray tasks; the rows are byte-identical to the local build's.

The driver (the process that runs ``sftpack build``) does all the local build does but encode: it opens the source
and loads the tokenizer (to check them and for the record), computes the seeded permutation once, packs the
chunks the tasks return strictly in permutation order and writes the rows file and its record through the same
lock, temporaries and renames (:mod:`~sftpack.builder.cluster.stream`). Each task encodes a contiguous range of
the permutation (:mod:`~sftpack.builder.cluster.tasks`); :mod:`~sftpack.builder.cluster.connect` joins the
cluster.
"""

from __future__ import annotations

from contextlib import contextmanager

from sftpack.base.errors import UsageError
from sftpack.builder.cluster.connect import connected, named
from sftpack.builder.cluster.stream import RayEncoding

__all__ = ["RayEncoding", "ray_encoding"]


@contextmanager
def ray_encoding(config, profile, given: tuple = (None, None)):
    """A :class:`RayEncoding` for ``config`` (``config.ray``: the cluster's address), connected for the ``with``
    block. ``given``: a ready vocabulary and source handed to :func:`sftpack.build`, which Ray tasks cannot share:
    every node loads the tokenizer and opens the source the options name."""
    vocab, source = given
    if vocab is not None or source is not None:
        raise UsageError(f"{named(config.ray)}: every node loads the tokenizer and opens the source the options "
                         "name; build(vocab=..., source=...) cannot be shared with a cluster")
    with connected(config.ray) as ray:
        yield RayEncoding(ray, config, profile)
