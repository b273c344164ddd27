"""``sftpack loss --device-map auto``: place a model across the visible GPUs (and CPU) with accelerate.

The plan is made on an empty (meta-device) copy of the model built from its config, so a model too large for the
memory given is refused with the numbers before a single weight is read. The plan is accelerate's own
(``get_balanced_memory`` + ``infer_auto_device_map``, as ``from_pretrained(device_map="auto")`` computes it;
when balancing leaves a module over - it splits by averages, and a 1 GiB head can miss - the devices are filled in
order instead) and
the model is then loaded with that explicit map, so the placement printed is the placement used. Modules placed
on ``cpu`` beside GPUs are offloaded: their weights stay in CPU memory and accelerate streams them to the first GPU
for each forward, which is where they run.

    >>> parse_max_memory("0=60GiB, 1=60GiB,cpu=200GiB")
    {0: '60GiB', 1: '60GiB', 'cpu': '200GiB'}
    >>> layer_ranges([0, 1, 2, 5, 7, 8])
    '0-2, 5, 7-8'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sftpack.base.errors import UsageError

DEVICE_MAPS = ("auto",)
_LAYER = re.compile(r"^(?:.*\.)?layers\.(\d+)$")  # model.layers.17, model.language_model.layers.17


def _accelerate():
    try:
        import accelerate  # noqa: F401
    except ImportError:
        raise UsageError("--device-map needs accelerate: pip install 'sftpack[loss]' (or pip install accelerate)") from None
    import accelerate.utils

    return accelerate


def parse_max_memory(text: str) -> dict:
    """``"0=60GiB,cpu=200GiB"`` -> ``{0: "60GiB", "cpu": "200GiB"}`` (GPU indices as ints, sizes as accelerate reads them)."""
    out: dict = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise UsageError(f"--max-memory {text!r}: expected DEVICE=SIZE pairs such as 0=60GiB,cpu=200GiB")
        if key == "disk":
            raise UsageError("--max-memory disk=...: disk offload is not supported; give GPUs and cpu only")
        if key != "cpu" and not key.isdigit():
            raise UsageError(f"--max-memory {key}=...: a device is a GPU index (0, 1, ...) or cpu")
        if not re.fullmatch(r"\d+(\.\d+)?\s*([KMG]i?B)?", value, flags=re.IGNORECASE):
            raise UsageError(f"--max-memory {key}={value}: a size is bytes or a number with KB/MB/GB/KiB/MiB/GiB")
        out[int(key) if key.isdigit() else key] = value
    return out


def size_text(n: int) -> str:
    """Bytes as GiB, MiB or KiB, whichever reads best.

    >>> size_text(244 * 10**9), size_text(3 * 2**20), size_text(512)
    ('227.24 GiB', '3.00 MiB', '0.50 KiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n / 2**10:.2f} KiB"


def layer_ranges(indices) -> str:
    """Sorted layer indices as compact ranges."""
    out, indices = [], sorted(indices)
    i = 0
    while i < len(indices):
        j = i
        while j + 1 < len(indices) and indices[j + 1] == indices[j] + 1:
            j += 1
        out.append(str(indices[i]) if i == j else f"{indices[i]}-{indices[j]}")
        i = j + 1
    return ", ".join(out)


@dataclass
class Plan:
    """Where each module goes (``device_map``, accelerate's form), and the numbers behind it."""

    device_map: dict
    model_bytes: int
    devices: dict = field(default_factory=dict)  # device -> {"bytes", "layers", "other"}

    def lines(self) -> list[str]:
        """One line per device: what it holds, in layers (and other modules), and the bytes of its weights."""
        gpus = [d for d in self.devices if d != "cpu"]
        out = []
        for device, info in self.devices.items():
            where = f"cuda:{device}" if device != "cpu" else ("cpu (offloaded, runs on cuda:%s)" % gpus[0] if gpus else "cpu")
            n = len(info["layers"])
            parts = [f"{n} layer{'s' if n != 1 else ''} ({layer_ranges(info['layers'])})"] if info["layers"] else []
            parts += info["other"]
            out.append(f"{where}: {', '.join(parts) or 'nothing'}  [{size_text(info['bytes'])} of weights]")
        return out


def _device_lookup(device_map: dict):
    """``name -> device`` by the longest device-map key that is the module or one of its parents."""
    keys = sorted(device_map, key=len, reverse=True)

    def device_of(name: str):
        for k in keys:
            if k == "" or name == k or name.startswith(k + "."):
                return device_map[k]
        raise KeyError(name)

    return device_of


def _summarize(model, device_map: dict, sizes: dict) -> dict:
    """Per device, GPUs first: the bytes of its weights, the decoder layers it holds and its other weighted modules
    (embeddings, final norm, head: the siblings of the layer stack and of its parents)."""
    device_of = _device_lookup(device_map)
    devices: dict = {}

    def slot(device):
        return devices.setdefault(device, {"bytes": 0, "layers": [], "other": []})

    for name in device_map:
        slot(device_map[name])["bytes"] += sizes.get(name, 0)
    modules = dict(model.named_modules())
    names = list(modules)
    layers = [n for n in names if _LAYER.match(n)]
    ancestors = {""} | {n[:i] for n in layers for i, c in enumerate(n) if c == "."}
    for name in layers:
        slot(device_of(name))["layers"].append(int(_LAYER.match(name).group(1)))
    for name in names:
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        if name and name not in ancestors and parent in ancestors and not _LAYER.match(name) \
                and next(modules[name].parameters(), None) is not None:  # weights, not only buffers (rotary_emb)
            slot(device_of(name))["other"].append(name.rsplit(".", 1)[-1])
    gpus = sorted(d for d in devices if d != "cpu")
    return {d: devices[d] for d in gpus + (["cpu"] if "cpu" in devices else [])}


def _no_split(model) -> list[str]:
    return sorted(getattr(model, "_no_split_modules", None) or [])


def plan_for(model, dtype, max_memory: dict | None, label: str = "the model") -> Plan:
    """accelerate's placement of ``model`` (meta or real) in ``dtype`` under ``max_memory`` (None: all visible
    GPUs and the free CPU memory); a UsageError with the numbers when it does not fit without disk offload."""
    import torch

    _accelerate()
    from accelerate import infer_auto_device_map
    from accelerate.utils import compute_module_sizes, get_balanced_memory, get_max_memory

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for key in max_memory or {}:
        if key != "cpu" and key >= gpus:
            raise UsageError(f"--max-memory {key}=...: there is no GPU {key} (this machine has {gpus} visible)")
    no_split = _no_split(model)
    budget = get_balanced_memory(model, max_memory=dict(max_memory) if max_memory else None,
                                 no_split_module_classes=no_split, dtype=dtype)
    budget = {k: int(v) for k, v in budget.items() if k != "disk"}
    device_map = dict(infer_auto_device_map(model, max_memory=budget, no_split_module_classes=no_split, dtype=dtype))
    if "disk" in device_map.values():  # balancing splits by averages: a large head can miss; then fill in order
        budget = {k: int(v) for k, v in get_max_memory(dict(max_memory) if max_memory else None).items() if k != "disk"}
        device_map = dict(infer_auto_device_map(model, max_memory=budget, no_split_module_classes=no_split, dtype=dtype))
    sizes = compute_module_sizes(model, dtype=dtype)
    total = int(sizes[""])
    if "disk" in device_map.values():
        given = budget
        largest = max(sizes[n] for n, m in model.named_modules()  # what cannot be cut: a layer, or a leaf (the head)
                      if type(m).__name__ in no_split or (next(m.children(), None) is None and sizes.get(n, 0) > 0))
        per = ", ".join(f"{'cpu' if k == 'cpu' else 'GPU ' + str(k)} {size_text(v)}" for k, v in given.items())
        why = f"{label} needs {size_text(total)} of weights in {str(dtype).replace('torch.', '')}"
        room = f"{'--max-memory' if max_memory else 'this machine'} gives {size_text(sum(given.values()))} ({per})"
        extra = f" and its largest module that cannot be split is {size_text(largest)}" if total <= sum(given.values()) else ""
        raise UsageError(f"{why} but {room}{extra}: it does not fit (no disk offload); raise --max-memory or add GPUs")
    return Plan(device_map, total, _summarize(model, device_map, sizes))


def plan_of(name: str, revision: str | None, dtype: str, max_memory: dict | None, trust_remote_code: bool = False) -> Plan:
    """``plan_for`` on an empty copy of the model built from its config alone: no weight is read."""
    import torch

    _accelerate()
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(name, revision=revision, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"--model {name}: cannot load its config ({first})") from None
    with init_empty_weights():
        empty = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype), trust_remote_code=trust_remote_code)
    return plan_for(empty, getattr(torch, dtype), max_memory, label=f"--model {name}")


def run_device(model, module):
    """The device ``module`` of a (possibly dispatched) model computes on: its map entry, with offloaded (cpu)
    entries running on the first GPU of the map as accelerate executes them; else its parameters' device."""
    import torch

    device_map = getattr(model, "hf_device_map", None)
    if device_map:
        name = next(n for n, m in model.named_modules() if m is module)
        device = _device_lookup(device_map)(name)
        gpus = [d for d in device_map.values() if d not in ("cpu", "disk")]
        if device in ("cpu", "disk") and gpus:
            device = gpus[0]
        return torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    return next(module.parameters()).device


def gpus_of(model) -> list[int]:
    """CUDA indices a model's weights or computation use."""
    device_map = getattr(model, "hf_device_map", None)
    if device_map:
        return sorted({d for d in device_map.values() if isinstance(d, int)})
    device = next(model.parameters()).device
    return [device.index or 0] if device.type == "cuda" else []
