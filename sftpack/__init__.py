"""sftpack: build, verify and feed the fixed-length packed SFT rows that verified training recipes are measured on.

Pipeline (one module per step): ``source`` (read) -> ``conversation`` (check) -> ``render`` -> ``mask`` ->
``vocab`` (tokenize) -> ``pack`` -> ``write``; ``pipeline`` runs them (``sftpack.build``), ``rows`` hashes and reads the result.
"""

from .config import BuildConfig
from .pipeline import build, permutation
from .diff import diff_rows
from .encode import encode_conversation, get_encoder
from .rows import hash_rows, read_provenance, read_rows, rows_sha256_of

__all__ = ["BuildConfig", "build", "diff_rows", "encode_conversation", "get_encoder", "hash_rows", "permutation",
           "read_provenance", "read_rows", "rows_sha256_of"]
