"""slime / miles rollout function for rows written by ``sftpack build`` (no tokenizer, no chat template).

    --rollout-function-path pretokenized_sft_rollout.generate_rollout \\
    --prompt-data ROWS.parquet --input-key messages --metadata-key metadata

The implementation lives in ``sftpack.trainer.rollout``; this top-level module only gives it the import path slime
expects.

    >>> generate_rollout.__module__
    'sftpack.trainer.rollout'
"""

from sftpack.trainer.rollout import generate_rollout

__all__ = ["generate_rollout"]
