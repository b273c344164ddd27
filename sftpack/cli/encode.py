"""``sftpack encode``: the tokens and loss mask of one conversation read on stdin."""

from __future__ import annotations

import json
import sys

from sftpack.base.errors import UsageError


def add(sub):
    p = sub.add_parser("encode", help="tokens and loss mask of one conversation (stdin JSON)", description=(
        "Read one conversation on stdin (a JSON list of messages, or an object with `messages` and optionally "
        "`tools`) and print "
        '{"tokens": [...], "loss_mask": [...]} (no packing, no EOS).'))
    p.add_argument("--model", required=True, help="model profile (see `sftpack models`)")
    p.add_argument("--tokenizer", help="local tokenizer directory or tokenizer.json")
    p.add_argument("--text", action="store_true", help="also print the rendered text")
    return p


def run(args) -> int:
    from sftpack.families.conversation import Skip
    from sftpack.families.encode import get_encoder

    try:  # bytes, so that a UTF-8 BOM is accepted (as in a JSONL source) and other encodings are refused clearly
        stream = getattr(sys.stdin, "buffer", None)  # (a text stream without one: tests, notebooks)
        data = json.loads(stream.read().decode("utf-8-sig") if stream else sys.stdin.read().removeprefix("\ufeff"))
    except UnicodeDecodeError as e:
        raise UsageError(f"stdin is not UTF-8 (byte {e.start})") from None
    except RecursionError:  # as in a JSONL source line (invalid_json there)
        raise UsageError("stdin is not usable JSON (nested too deeply)") from None
    except ValueError as e:
        raise UsageError(f"stdin is not JSON ({e})") from e
    messages = data  # a list of messages, or an object with `messages` and, optionally, `tools`
    if isinstance(data, dict):
        messages = {"messages": data.get("messages"), "tools": data.get("tools")}
    encoder = get_encoder(args.model, args.tokenizer)
    try:
        ids, mask = encoder(messages)
    except Skip as e:
        raise UsageError(f"the conversation would be skipped: {e}") from e
    out = {"tokens": ids.tolist(), "loss_mask": mask.tolist()}
    if args.text:
        out["text"] = encoder.render_text(messages)
    print(json.dumps(out, ensure_ascii=False))
    return 0
