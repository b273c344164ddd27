"""The LM head and the cross-entropy of one chunk of positions: eager, or compiled with ``torch.compile``.

Eager is the reference: the head module itself (accelerate's hooks move the hidden states to whichever device holds
the head of a sharded model, and stream an offloaded head's weights in), then ``cross_entropy`` on the upcast,
post-processed logits - five passes over a [chunk, vocab] fp32 tensor (1 GiB per 1,024 positions at a 262,144
vocabulary). The compiled path runs the head's matmul as two aligned views of its weight (see ``ALIGN``) and hands the
bf16 logits to one Inductor-compiled function that fuses the fp32 upcast, logit scaling, soft-capping, logsumexp and
target gather into one pass. ``dynamic=True`` so that the last, shorter chunk of every row reuses the same kernels
instead of compiling per length.

Both apply the same post-processing (``post``), so the compiled path changes only rounding: it is checked against
the eager one on the first chunk it runs and dropped (with the reason reported) if the two differ by more than
``COMPILE_TOLERANCE`` or if compilation fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from sftpack.base.errors import UsageError

COMPILE_MODES = ("auto", "yes", "no")
# The compiled path computes the logits of the first V - V % ALIGN vocabulary entries and of the rest as two matmuls:
# with an odd vocabulary (Qwen3.5's 248,077) the [chunk, V] output rows are misaligned and cuBLAS falls to kernels
# at ~13% of the matmul rate (98 TFLOP/s on an H200 against 754 for 262,144); the aligned block runs at full rate,
# the remainder (13 columns) is negligible, and no weight is copied (both blocks are views of the head's weight).
ALIGN = 64
# Largest tolerated relative difference between the compiled and the eager chunk sum on the same logits, by compute
# dtype: both upcast them alike and differ only in reduction order (~1e-8 observed); a broken kernel is off by far more.
COMPILE_TOLERANCE = {"bfloat16": 1e-5, "float16": 1e-5, "float32": 1e-5, "float64": 1e-10}


def post(logits, scale: float, softcap: float):
    """The config's logit post-processing, after the upcast of 16-bit logits to fp32 (fp64 stays fp64)."""
    if logits.element_size() < 4:
        logits = logits.float()
    if scale != 1.0:
        logits = logits * scale
    if softcap:
        logits = softcap * (logits / softcap).tanh()
    return logits


def ce_sum(logits, targets, scale: float, softcap: float, tail=None):
    """Sum over the chunk of ``logsumexp(z) - z[target]`` with ``z = post(logits)``, as an fp64 scalar.

    With ``tail``, the logits come in two column blocks, ``logits`` (the first ``V'`` entries) and ``tail`` (the rest):
    the log-sum-exp combines both and each target is read from the block that holds it."""
    import torch

    z = post(logits, scale, softcap)
    lse = torch.logsumexp(z, dim=-1)
    if tail is None:
        picked = z.gather(1, targets[:, None])[:, 0]
    else:
        zt = post(tail, scale, softcap)
        lse = torch.logaddexp(lse, torch.logsumexp(zt, dim=-1))
        split = z.shape[1]
        picked = torch.where(targets < split, z.gather(1, targets.clamp(max=split - 1)[:, None])[:, 0],
                             zt.gather(1, (targets - split).clamp(min=0)[:, None])[:, 0])
    return (lse - picked).double().sum()


@dataclass
class Head:
    """The LM head as the model applies it: ``linear`` (weight and bias), then the config's logit post-processing."""

    linear: object  # torch.nn.Linear (or anything mapping [n, hidden] -> [n, vocab])
    softcap: float | None = None
    scale: float = 1.0

    def __call__(self, hidden):
        """Post-processed logits ``[n, vocab]`` (fp32 for 16-bit models)."""
        return post(self.linear(hidden), self.scale, self.softcap or 0.0)


def head_of(model) -> Head:
    """The model's output head, with its logit scaling / soft-capping read from the config."""
    linear = model.get_output_embeddings()
    if linear is None:
        raise UsageError(f"{type(model).__name__} has no output embeddings (not a causal LM head)")
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    scale = 1.0
    if getattr(config, "logit_scale", None) is not None:  # Cohere: logits * logit_scale
        scale *= float(config.logit_scale)
    if getattr(config, "logits_scaling", None) is not None:  # Granite: logits / logits_scaling
        scale /= float(config.logits_scaling)
    if getattr(config, "output_multiplier", None) is not None:  # HyperCLOVA X: logits * output_multiplier
        scale *= float(config.output_multiplier)
    softcap = getattr(config, "final_logit_softcapping", None)
    return Head(linear, float(softcap) if softcap else None, scale)


_COMPILED = None  # one compiled function per process: Dynamo caches its graphs on it across rows and calls


def _compiled():
    global _COMPILED
    if _COMPILED is None:
        import torch

        if not hasattr(torch, "compile"):
            raise RuntimeError(f"torch {torch.__version__} has no torch.compile")
        _COMPILED = torch.compile(ce_sum, dynamic=True)
    return _COMPILED


class ChunkLoss:
    """``chunk_loss(hidden_chunk, targets) -> fp64 scalar``: head + cross-entropy summed over the chunk.

    ``mode``: ``yes`` compiles, ``no`` runs eagerly, ``auto`` compiles when the head runs on CUDA (on CPU the compile
    costs tens of seconds and the eager path is not the bottleneck). ``ran`` says what ran and ``note`` why."""

    def __init__(self, head: Head, mode: str, device, dtype: str):
        if mode not in COMPILE_MODES:
            raise UsageError(f"--compile {mode}: choose one of {', '.join(COMPILE_MODES)}")
        self.head, self.dtype = head, dtype
        self.compile = mode == "yes" or (mode == "auto" and getattr(device, "type", str(device)) == "cuda")
        self.ran = "compiled" if self.compile else "eager"
        self.note = "torch.compile, dynamic shapes" if self.compile else (
            "--compile no" if mode == "no" else "--compile auto compiles only on CUDA")
        self.verified = False

    def _fall_back(self, why: str) -> None:
        self.compile, self.ran, self.note = False, "eager", f"torch.compile unavailable: {why}"

    def eager(self, logits, targets):
        import torch

        z = post(logits, self.head.scale, self.head.softcap or 0.0)
        return torch.nn.functional.cross_entropy(z, targets, reduction="sum").double()

    def _logits(self, hidden):
        """The head's logits as ``(aligned block, tail or None)`` (see ALIGN), or the module's own call when its
        weight is not at hand: offloaded (meta until accelerate's hook streams it in), biased, or not a Linear."""
        import torch

        linear = self.head.linear
        weight = getattr(linear, "weight", None)
        if (not isinstance(linear, torch.nn.Linear) or linear.bias is not None or weight.device.type == "meta"
                or weight.shape[0] % ALIGN == 0 or weight.shape[0] < ALIGN):
            return linear(hidden), None
        split = weight.shape[0] - weight.shape[0] % ALIGN
        hidden = hidden.to(weight.device)  # what the module's hook does for a head placed on a GPU
        return torch.nn.functional.linear(hidden, weight[:split]), torch.nn.functional.linear(hidden, weight[split:])

    def __call__(self, hidden, targets):
        import torch

        if self.compile:
            logits, tail = self._logits(hidden)
            targets = targets.to(logits.device).clone()  # fresh, aligned: Inductor guards on input alignment
            try:
                got = _compiled()(logits, targets, float(self.head.scale), float(self.head.softcap or 0.0), tail)
            except torch.OutOfMemoryError:
                raise
            except Exception as e:  # no compiler, old torch, unsupported backend: the eager path, and say so
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                self._fall_back(f"{type(e).__name__}: {first}"[:200])
            else:
                if self.verified:
                    return got
                # Once: the compiled sum must be the eager one on the same logits (the two blocks put back together;
                # another matmul kernel would round the bf16 logits differently, which is not what this checks).
                expected = self.eager(logits if tail is None else torch.cat([logits, tail], dim=1), targets)
                diff = abs(float(got) - float(expected)) / max(abs(float(expected)), 1e-30)
                self.verified = True
                if diff <= COMPILE_TOLERANCE[self.dtype]:
                    return got
                self._fall_back(f"its result differs from the eager path by {diff:.2g} (relative)")
                return expected
        logits = self.head.linear(hidden)  # the module itself: its hooks place it (sharded / offloaded heads)
        return self.eager(logits, targets.to(logits.device))
