"""``sftpack loss``: the step-0 loss of rows under a Hugging Face causal LM (needs torch); its options are
:class:`~sftpack.trainer.loss_config.LossConfig`'s."""

from __future__ import annotations

import json

from sftpack.base.arguments import add_options, options_from


def add(sub):
    from sftpack.trainer.loss_config import LossConfig

    p = sub.add_parser("loss", help="step-0 loss of rows under a Hugging Face causal LM (needs torch)", description=(
        "Per-token mean cross-entropy over the supervised targets of the first --limit rows (target t predicted "
        "from position t-1), the LM head and softmax run in chunks of --chunk positions. Prints the loss, tokens/s, "
        "peak memory per GPU and, with --device-map, where each layer went. torch is the optional extra sftpack[loss]."))
    add_options(p, LossConfig)  # one declaration per option: sftpack.trainer.loss_config.LossConfig
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def run(args) -> int:
    from sftpack.trainer.loss import format_result, loss_of
    from sftpack.trainer.loss_config import LossConfig

    result = loss_of(options_from(LossConfig, args))
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0
