"""Step-0 loss of packed rows under a Hugging Face causal LM (``sftpack loss``).

The loss is the trainer's ``--calculate-per-token-loss`` mean: over all rows, the sum of the cross-entropy of
every supervised target divided by their count. Target ``t`` is predicted from position ``t - 1``, so the
labels are the row shifted by one and a target counts iff ``loss_mask[t] == 1`` (position 0 never does).

Memory: the base model runs once per row (final hidden states ``[row_tokens, hidden]``), then the LM head and
the cross-entropy run only on the supervised positions, ``chunk`` at a time: full fp32 logits for an 8,192-token
row of a 262,144-token vocabulary would be 8 GiB; a 1,024-position chunk is 1 GiB. Logits are computed in the
model's dtype (as the trainer's LM head does), then upcast to fp32 for the softmax; the sums accumulate in fp64.

Models that post-process logits are handled when their config says so (``final_logit_softcapping``: Gemma 2-4;
``logit_scale``: Cohere; ``logits_scaling``: Granite; ``output_multiplier``: HyperCLOVA X); for any other model
the head is checked once against the model's own ``forward`` logits on a short prefix, and a mismatch refuses.

    >>> shifted_targets([7, 8, 9, 10], [0, 1, 0, 1])   # (index of the predicting position, target id)
    ([0, 2], [8, 10])
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.trainer.head import ChunkLoss, Head, head_of
from sftpack.trainer.loss_config import LossConfig, dtype_problem

CHECK_TOKENS = 64  # prefix length of the head self-check
# Largest tolerated |our logits - model logits| / max|model logits| in the self-check, by compute dtype: the two
# differ only by where the upcast happens; a missed scale or cap is off by percents or more.
CHECK_TOLERANCE = {"bfloat16": 2e-2, "float16": 5e-3, "float32": 1e-4, "float64": 1e-9}


def torch_or_usage_error():
    """``torch``, or a UsageError saying how to install it (it is the optional extra ``sftpack[loss]``)."""
    try:
        import torch
    except ImportError:
        raise UsageError("sftpack loss needs PyTorch: pip install 'sftpack[loss]' (or a torch build for your GPU)") from None
    return torch


def shifted_targets(tokens, loss_mask) -> tuple[list[int], list[int]]:
    """Positions that predict a supervised target, and those targets: ``(t - 1, tokens[t])`` for ``mask[t] == 1``."""
    tokens, loss_mask = np.asarray(tokens), np.asarray(loss_mask)
    t = np.flatnonzero(loss_mask[1:]) + 1
    return (t - 1).tolist(), tokens[t].tolist()


def decoder_of(model):
    """The base model whose ``last_hidden_state`` feeds the head."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if decoder is None or decoder is model:
        decoder = getattr(model, getattr(model, "base_model_prefix", "") or "model", None)
    if decoder is None or decoder is model:
        raise UsageError(f"{type(model).__name__}: cannot find its base model (get_decoder()); sftpack loss needs one")
    return decoder


def hidden_states(decoder, ids):
    """Final hidden states ``[len(ids), hidden]`` of one row (a 1-D LongTensor on the model's device)."""
    out = decoder(input_ids=ids[None], use_cache=False)
    return out.last_hidden_state[0] if hasattr(out, "last_hidden_state") else out[0][0]


def check_head(model, decoder, head: Head, ids, dtype: str) -> float:
    """Compare ``head(hidden states)`` with the model's own logits on a prefix; refuse on a mismatch.

    Returns the relative difference found."""
    torch = torch_or_usage_error()
    prefix = ids[: min(CHECK_TOKENS, len(ids))]
    with torch.inference_mode():
        reference = model(input_ids=prefix[None], use_cache=False).logits[0].double()
        ours = head(hidden_states(decoder, prefix)).double().to(reference.device)  # sharded: head on another device
    scale = float(reference.abs().max()) or 1.0
    diff = float((ours - reference).abs().max()) / scale
    if not diff <= CHECK_TOLERANCE[dtype]:
        raise UsageError(
            f"{type(model).__name__}: its logits are not the LM head of its hidden states as sftpack computes it "
            f"(relative difference {diff:.3g} on the first {len(prefix)} tokens): the model post-processes logits "
            "in a way sftpack loss does not know, so it refuses rather than report a wrong loss")
    return diff


def _check_device(torch, device: str | None) -> None:
    if device is None:
        return
    try:
        torch.device(device)
    except RuntimeError:
        raise UsageError(f"--device {device!r} is not a torch device (cpu, cuda, cuda:1, ...)") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: CUDA is not available to this torch ({torch.__version__}); use --device cpu")


def load_model(name: str, revision: str | None, device: str | None, dtype: str, trust_remote_code: bool = False,
               device_map: dict | None = None):
    """``AutoModelForCausalLM.from_pretrained`` in ``dtype``, in eval mode: on ``device``, or placed by accelerate
    with an explicit ``device_map`` (``placement.plan_of``)."""
    torch = torch_or_usage_error()
    if dtype_problem(dtype, "--dtype"):
        raise UsageError(dtype_problem(dtype, "--dtype"))
    _check_device(torch, device)
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # sftpack prints its own one-screen summary
    placed = {"device_map": device_map} if device_map is not None else {}
    try:
        model = AutoModelForCausalLM.from_pretrained(name, revision=revision, dtype=getattr(torch, dtype),
                                                     trust_remote_code=trust_remote_code, **placed)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"--model {name}: cannot load it ({first})") from None
    return (model if device_map is not None else model.to(device)).eval()


def step0_loss(model, tokens: np.ndarray, loss_mask: np.ndarray, *, chunk: int = 1024, dtype: str = "bfloat16",
               per_row: bool = False, check: bool = True, progress=None, compile: str = "auto") -> dict:
    """Per-token mean cross-entropy of ``model`` over the supervised targets of ``tokens``/``loss_mask`` rows.

    ``model`` may be on one device or dispatched by accelerate across several (``hf_device_map``). Returns
    ``loss``, ``supervised_targets``, ``rows``, ``row_tokens``, ``seconds``, ``tokens_per_second``,
    ``peak_gpu_memory_bytes`` (the largest over the GPUs used; None off CUDA) and ``peak_gpu_memory_by_gpu``,
    ``head_check``, ``head_ce`` (``compiled`` or ``eager``) with ``head_ce_note``, and with ``per_row`` the rows'
    losses."""
    from sftpack.trainer.placement import gpus_of, run_device

    torch = torch_or_usage_error()
    tokens, loss_mask = _checked_rows(tokens, loss_mask, chunk)
    decoder, head = decoder_of(model), head_of(model)
    vocab = head.linear.weight.shape[0] if hasattr(head.linear, "weight") else None
    if vocab is not None and int(tokens.max()) >= vocab:
        raise UsageError(f"the rows hold token id {int(tokens.max())} but the model's vocabulary has {vocab} entries: "
                         "rows built for another model?")
    device = run_device(model, model.get_input_embeddings())  # where the ids go in
    gpus = gpus_of(model)
    chunk_loss = ChunkLoss(head, compile, run_device(model, head.linear), dtype)
    first = torch.as_tensor(tokens[0], device=device)
    head_check = check_head(model, decoder, head, first, dtype) if check else None
    _warm_up(chunk_loss, decoder, first)
    for g in gpus:
        torch.cuda.synchronize(g)
        torch.cuda.reset_peak_memory_stats(g)
    total, count, rows_out = 0.0, 0, []
    start = time.perf_counter()
    with torch.inference_mode():
        for r in range(len(tokens)):
            row_sum, targets = _row_loss(chunk_loss, decoder, torch.as_tensor(tokens[r], device=device), tokens[r],
                                         loss_mask[r], chunk)
            total += row_sum
            count += targets
            rows_out.append({"row": r, "loss": row_sum / targets if targets else None, "targets": targets})
            if progress:
                progress(r + 1)
    for g in gpus:
        torch.cuda.synchronize(g)
    seconds = time.perf_counter() - start
    if count == 0:
        raise UsageError("the rows have no supervised target")
    peaks = {f"cuda:{g}": int(torch.cuda.max_memory_allocated(g)) for g in gpus}
    result = {
        "loss": total / count,
        "rows": len(tokens),
        "row_tokens": int(tokens.shape[1]),
        "supervised_targets": count,
        "seconds": seconds,
        "tokens_per_second": tokens.size / seconds if seconds > 0 else None,
        "peak_gpu_memory_bytes": max(peaks.values()) if peaks else None,
        "peak_gpu_memory_by_gpu": peaks,
        "head_check": head_check,
        "head_ce": chunk_loss.ran,
        "head_ce_note": chunk_loss.note,
    }
    if per_row:
        result["per_row"] = rows_out
    return result



def _warm_up(chunk_loss: ChunkLoss, decoder, first) -> None:
    """Compile the head (and check it against eager) on a short prefix of the first row, outside the timed loop."""
    import torch

    n = min(CHECK_TOKENS, len(first))
    if n >= 2:
        with torch.inference_mode():
            chunk_loss(hidden_states(decoder, first[:n])[:-1], first[1:n])


def _checked_rows(tokens: np.ndarray, loss_mask: np.ndarray, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    if chunk < 1:
        raise UsageError(f"--chunk {chunk}: must be at least 1")
    tokens = np.ascontiguousarray(tokens, dtype=np.int64)
    loss_mask = np.ascontiguousarray(loss_mask, dtype=np.uint8)
    if len(tokens) == 0:
        raise UsageError("no rows to evaluate")
    if (loss_mask[:, 0] != 0).any():
        raise UsageError(f"row {int(np.flatnonzero(loss_mask[:, 0])[0])}: loss_mask[0] is 1; position 0 is never a target")
    return tokens, loss_mask


def _row_loss(chunk_loss: ChunkLoss, decoder, ids, row_tokens: np.ndarray, row_mask: np.ndarray,
              chunk: int) -> tuple[float, int]:
    """One row's summed cross-entropy over its supervised targets, and how many there are."""
    import torch

    hidden = hidden_states(decoder, ids)  # on the device of the decoder's last module
    positions, targets = shifted_targets(row_tokens, row_mask)
    positions = torch.as_tensor(positions, device=hidden.device)
    targets = torch.as_tensor(targets, device=hidden.device)
    row_sum = 0.0
    for start in range(0, len(positions), chunk):  # [<=chunk, vocab] logits: the only ones alive
        row_sum = row_sum + chunk_loss(hidden[positions[start : start + chunk]], targets[start : start + chunk])
    return float(row_sum), len(targets)


def loss_of_rows(model: str, rows: str, **options) -> dict:
    """``sftpack loss``: load ``model``, take the first ``limit`` rows of the ``rows`` parquet, return the figures;
    ``options`` are the other fields of :class:`~sftpack.trainer.loss_config.LossConfig` (``limit``, ``device``,
    ``dtype``, ...), checked there.

    ``device_map="auto"`` places the model with accelerate under ``max_memory`` (``"0=60GiB,cpu=200GiB"`` or a
    dict); the plan is checked before any weight is read and returned as ``placement``. ``progress``: say each
    stage on stderr and draw a bar over the rows."""
    return loss_of(LossConfig(model=model, rows=rows, **options))


def loss_of(config: LossConfig) -> dict:
    """The figures of :func:`loss_of_rows` for a checked :class:`~sftpack.trainer.loss_config.LossConfig`."""
    from sftpack.rows import read_rows
    from sftpack.rows.formats import open_rows_file
    from sftpack.rows.hashing import rows_sha256_of
    from sftpack.trainer.placement import parse_max_memory, plan_of

    c = config
    tokens, mask = read_rows(c.rows, slice(0, c.limit))  # a bad file is named before torch is asked for
    torch = torch_or_usage_error()
    _check_model_path(c.model)
    _check_device(torch, c.device)
    stages = Stages(c.progress)
    stages.say(f"loading {c.model}" + (f" ({c.device_map} placement)" if c.device_map else ""))
    plan = None
    if c.device_map is not None:
        budget = parse_max_memory(c.max_memory) if isinstance(c.max_memory, str) else c.max_memory
        plan = plan_of(c.model, c.revision, c.dtype, budget, c.trust_remote_code)  # refuses a model too large
        loaded = load_model(c.model, c.revision, None, c.dtype, c.trust_remote_code, device_map=plan.device_map)
        device = "device map auto"
    else:
        device = c.device or ("cuda" if torch.cuda.is_available() else "cpu")
        loaded = load_model(c.model, c.revision, device, c.dtype, c.trust_remote_code)
    compiling = c.compile == "yes" or (c.compile == "auto" and str(device).startswith("cuda"))
    stages.say(f"{len(tokens):,} rows: checking the head on row 0 first"
               + (" (compiling it can take a minute)" if compiling else ""))
    with stages.bar(len(tokens)) as advance:
        result = step0_loss(loaded, tokens, mask, chunk=c.chunk, dtype=c.dtype, per_row=c.per_row, compile=c.compile,
                            progress=advance)
    result.update({"model": c.model, "revision": c.revision, "rows_path": str(c.rows),
                   "rows_sha256": rows_sha256_of(tokens, mask), "rows_in_file": open_rows_file(c.rows).num_rows,
                   "dtype": c.dtype, "device": device, "chunk": c.chunk})
    if plan is not None:
        result["placement"] = plan.lines()
        result["device_map"] = {k: v for k, v in plan.device_map.items()}
        result["model_weight_bytes"] = plan.model_bytes
    return result


def _check_model_path(model: str) -> None:
    """A ``--model`` written as a path (``/``, ``./``, ``~``) must be a directory: transformers would otherwise read it
    as a hub id and answer "Repo id must be in the form ...", which names nothing the user typed."""
    import os

    looks_like_path = model.startswith(("/", "./", "../", "~")) or os.sep in model.strip("/") and os.path.exists(
        model.split(os.sep)[0])
    if looks_like_path and not os.path.isdir(os.path.expanduser(model)):
        raise UsageError(f"--model {model}: no such directory (a Hugging Face model directory with config.json and "
                         "its weights, or a hub id ORG/NAME)")


class Stages:
    """What ``sftpack loss`` is doing, on stderr: a line per stage, then a bar over the rows (nothing when off)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def say(self, text: str) -> None:
        if self.enabled:
            print(f"sftpack loss: {text}", file=sys.stderr, flush=True)

    @contextmanager
    def bar(self, total: int):
        if not self.enabled:
            yield None
            return
        from tqdm import tqdm

        with tqdm(total=total, unit="row", desc="sftpack loss", file=sys.stderr, dynamic_ncols=True) as bar:
            yield lambda done: bar.update(done - bar.n)


def format_result(result: dict) -> str:
    """The human-readable summary ``sftpack loss`` prints."""
    peaks = result.get("peak_gpu_memory_by_gpu") or {}
    lines = [
        f"loss {result['loss']:.6f}  (per-token mean over {result['supervised_targets']:,} supervised targets in "
        f"{result['rows']} rows x {result['row_tokens']:,} tokens)",
        f"  model      {result['model']}" + (f" @ {result['revision']}" if result.get("revision") else "")
        + f"  ({result['dtype']} on {result['device']}, LM head in chunks of {result['chunk']})",
        f"  head + CE  {result['head_ce']} ({result['head_ce_note']})",
        f"  speed      {result['tokens_per_second']:,.0f} tokens/s  ({result['seconds']:.2f} s)",
        "  peak GPU   " + ("; ".join(f"{d} {b / 2**30:.2f} GiB" for d, b in peaks.items()) + " allocated"
                           if peaks else "- (not on CUDA)"),
    ]
    for k, line in enumerate(result.get("placement", [])):
        lines.append(("  placement  " if k == 0 else " " * 13) + line)
    whole = result.get("rows_in_file") in (None, result["rows"])
    lines.append(f"  rows       {result['rows_path']}  rows_sha256 "
                 + (f"{result['rows_sha256']} (every row of the file)" if whole else
                    f"of its first {result['rows']:,} rows (of {result['rows_in_file']:,}; not the file's) "
                    f"{result['rows_sha256']}"))
    for row in result.get("per_row", []):
        loss = f"{row['loss']:.6f}" if row["loss"] is not None else "-"
        lines.append(f"  row {row['row']:>6}  loss {loss}  ({row['targets']:,} targets)")
    return "\n".join(lines)
