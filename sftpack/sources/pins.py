"""The dataset ``--source hub`` reads, pinned: the Tulu 3 SFT mixture at one commit of its hub repository. A build
from another revision is refused unless ``--allow-unpinned``, and its record says it is not the pinned dataset."""

from __future__ import annotations

TULU_REPO = "allenai/tulu-3-sft-mixture"
TULU_REVISION = "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"
