"""The performance model: training throughput of a workload on any catalog GPU.

For each reference model ``m`` and precision class (fp32 = TF32 where the card has it; fp16 =
mixed precision), fitted on measured single-GPU throughputs (``data/reference_throughput.csv``)
by ``calibrate.py``::

    time per sample = s[m, generation] · ( 1/(e[arch] · C) + r[m]/BW + o[m] + q[m]/batch
                                           + u[m]/(batch · BW) )

with ``C`` the card's peak for the precision, ``BW`` its memory bandwidth, ``e`` one efficiency
per GPU architecture, ``o`` a per-sample cost no GPU speeds up, ``q`` a per-step cost shared
by the batch and ``u`` per-step memory traffic (weights and optimizer state, once a step) shared
by the batch (a calibration written before ``u`` existed reads as ``u = 0``). The fitted values
live in ``data/calibration.json`` (written, with the validated error bands, by
``benchmarks/estimator_accuracy.py``); the app only reads them — no numpy, no fit at start-up. The newest benchmark generation's level is used for predictions.

Another workload is anchored on the reference model of its kind (transformer → BERT-large, CNN →
ResNet-50 ...): its throughput on a GPU is the anchor's at the same batch times the ratio of their
training FLOPs per sample, so each GPU's fitted efficiency on similar work carries over.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.errors import DataError
from gpuselect.estimate.calibrate import arch_key, compute_tflops, precision_class
from gpuselect.workloads.model import Workload

DATA = Path(__file__).resolve().parent / "data" / "reference_throughput.csv"
CALIBRATION = Path(__file__).resolve().parent / "data" / "calibration.json"
GENERATION_ORDER = ("v2", "v1", "v0")  # newest software first
TENSOR_ARCHS_TF32 = {"Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 2", "CDNA 3", "CDNA 4"}

#: Which measured reference model stands in for a workload of each kind.
ANCHORS: dict[str, str] = {
    "transformer": "bert_large_squad",
    "cnn": "resnet50",
    "mlp": "resnet50",
    "custom": "resnet50",
    "rnn": "gnmt",
    "detection": "maskrcnn",
    "recsys": "ncf",
    "speech": "tacotron2",
}


def data_precision(precision: str) -> str:
    return precision_class(precision)


def compute_peak(e: GpuEntry, precision: str) -> float | None:
    """The peak used for a training precision; None if the card cannot run it at all."""
    if precision == "tf32":
        return e.tf32_tflops if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else None
    if precision == "bf16":
        return e.bf16_tflops
    if precision in ("fp32", "fp16"):
        return compute_tflops(e, precision)
    raise ValueError(precision)


def reference_precision(e: GpuEntry, data_prec: str) -> str:
    """The training precision a reference row ran at on this card ("fp32" rows used TF32)."""
    if data_prec == "fp16":
        return "fp16"
    return "tf32" if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else "fp32"


@dataclass
class RefRow:
    generation: str
    model: str
    precision: str
    gpu_id: str
    throughput: float
    unit: str
    batch_size: int


def load_reference_rows(catalog: Catalog, path: Path = DATA) -> list[RefRow]:
    rows: list[RefRow] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            match = catalog.match(r["gpu"])
            if match is None:
                continue
            rows.append(
                RefRow(
                    r["bench_version"],
                    r["model"],
                    r["precision"],
                    match.entry.id,
                    float(r["throughput_per_gpu_median"]),
                    r["unit"],
                    int(float(r["batch_size_per_gpu"] or 0)),
                )
            )
    return rows


@dataclass
class PerfModel:
    models: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=dict
    )  # model -> pc -> {r, o, q, u, log_k{gen}}
    arch_eff: dict[str, dict[str, float]] = field(default_factory=dict)  # pc -> arch -> e
    typical_batch: dict[str, int] = field(default_factory=dict)  # model -> median measured batch

    @classmethod
    def from_json(cls, path: Path = CALIBRATION) -> PerfModel:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return cls(doc["models"], doc["arch_eff"], {k: int(v) for k, v in doc.get("typical_batch", {}).items()})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(
                f"the estimator's calibration {path.name} is missing or corrupt ({exc}); "
                "rerun benchmarks/estimator_accuracy.py"
            ) from exc

    def to_json(self) -> dict[str, Any]:
        return {"models": self.models, "arch_eff": self.arch_eff, "typical_batch": self.typical_batch}

    def predict_reference(
        self, model: str, precision: str, e: GpuEntry, generation: str | None = None, batch: int | None = None
    ) -> float | None:
        """Throughput of a reference model on a GPU in its benchmark's unit (reference_throughput.csv:
        images, sequences, tokens, mel frames or audio samples per second; newest generation unless
        one is named). ``predict`` turns it into samples/s."""
        pc = precision_class(precision)
        m = self.models.get(model, {}).get(pc)
        peak = compute_peak(e, precision)
        if m is None or not peak:
            return None
        log_k = m["log_k"]
        gen = generation if generation else next((g for g in GENERATION_ORDER if g in log_k), None)
        if gen not in log_k:
            return None
        eff = self.arch_eff.get(pc, {}).get(arch_key(e), 1.0)
        n = max(1, batch or self.typical_batch.get(model, 32))
        bw = e.memory_bandwidth_gbs / 1000.0
        # u (per-step memory traffic) is absent from calibrations written before it existed: 0.
        inner = 1.0 / (eff * peak) + m["r"] / bw + m["o"] + m["q"] / n + m.get("u", 0.0) / (n * bw)
        return float(math.exp(log_k[gen]) / inner)

    def predict(self, w: Workload, precision: str, e: GpuEntry, batch: int | None = None) -> float | None:
        """Training samples/s of workload ``w`` on one GPU at a per-GPU batch, or None."""
        if compute_peak(e, precision) is None:
            return None
        if w.id in self.models:
            units = self.predict_reference(w.id, precision, e, batch=batch)
            return None if units is None else units / w.throughput_units_per_sample
        anchor = ANCHORS.get(w.kind, "resnet50")
        from gpuselect.workloads.presets import PRESETS

        ref = PRESETS[anchor]
        base = self.predict_reference(anchor, precision, e, batch=batch)
        if base is None:
            return None
        # The anchor's samples/s (its benchmark may count tokens or mel frames), scaled by FLOPs.
        return base / ref.throughput_units_per_sample * ref.training_flops_per_sample / w.training_flops_per_sample


_DEFAULT: PerfModel | None = None


def default_model(catalog: Catalog | None = None) -> PerfModel:  # noqa: ARG001 - kept for callers (see docstring)
    """The shipped calibration (the catalog argument is kept for callers; specs come per GPU)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PerfModel.from_json()
    return _DEFAULT


def fit_model(catalog: Catalog, exclude_gpu: str | None = None, iterations: int = 4) -> PerfModel:
    """Fit from the reference rows (needs numpy; scripts and tests only)."""
    import statistics

    from gpuselect.estimate import calibrate as C  # noqa: N812 - short module alias, used as a namespace as in the formulas

    def spec_for(label: str) -> GpuEntry | None:
        m = catalog.match(label)
        return None if m is None else m.entry

    obs, _missing = C.build_observations(C.read_reference_rows(DATA), spec_for)
    if exclude_gpu is not None:
        ids = {o.gpu: getattr(spec_for(C.NAME_FIXES.get(o.gpu, o.gpu)), "id", None) for o in obs}
        obs = [o for o in obs if ids[o.gpu] != exclude_gpu]
    f = C.fit(obs, iterations=iterations)
    pm = PerfModel()
    for (model, pc), r in f.r.items():
        gens = {v: k for (mm, p, v), k in f.log_k.items() if mm == model and p == pc}
        pm.models.setdefault(model, {})[pc] = {
            "r": r,
            "o": f.o[(model, pc)],
            "q": f.q[(model, pc)],
            "u": f.u[(model, pc)],
            "log_k": gens,
        }
    for (arch, pc), e in f.e.items():
        pm.arch_eff.setdefault(pc, {})[arch] = e
    for model in {o.model for o in obs}:
        pm.typical_batch[model] = int(statistics.median(o.batch for o in obs if o.model == model))
    return pm


# ==============================================================================================
# The step-time model (issue 12): one training step from its operator trace.
# ==============================================================================================

#: Bytes the optimizer reads and writes per trainable parameter and step (fp32 state; mixed
#: precision keeps fp32 master weights): SGD p r/w + g r; momentum + buf r/w; Adam(W) + m, v r/w;
#: 8-bit Adam's states are 1 byte each.
OPTIMIZER_BYTES = {"none": 0.0, "sgd": 12.0, "sgd-momentum": 20.0, "adam": 28.0, "adamw": 28.0, "adam8bit": 16.0}
#: torch's foreach optimizers: fused multi-tensor kernels per step (a handful per op, per 100s of tensors).
OPTIMIZER_LAUNCHES = {"none": 0, "sgd": 2, "sgd-momentum": 3, "adam": 12, "adamw": 13, "adam8bit": 4}


@dataclass(frozen=True)
class StepTime:
    seconds: float
    breakdown: dict[str, float]  # seconds per step: compute, memory, kernel_floor, optimizer, host, copy, communication
    bound: str  # compute | memory | overhead | communication
    device_s: float
    host_s: float
    launches: int
    backward_s: float = 0.0  # the device's backward pass: what gradient traffic can hide behind


def simple_cnn_trace() -> Any:
    """The benchmark's simple CNN (conv 1->32, pool, conv 32->64, pool, linear 3136->128->10),
    one eager step with cross-entropy, per sample."""
    from gpuselect.estimate.trace import Op, OpKind, Phase, StepTrace

    E, G, C, F, B = OpKind.ELEMENTWISE, OpKind.GEMM, OpKind.CONV, Phase.FORWARD, Phase.BACKWARD  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
    a1, p1, a2, p2 = 32 * 28 * 28, 32 * 14 * 14, 64 * 14 * 14, 64 * 7 * 7
    ops = [
        Op(C, F, "conv1", 2 * 784 * 32 * 9, 784 + a1, 320, 784, 32, 9),
        Op(E, F, "relu1", 0, 2 * a1),
        Op(E, F, "pool1", 0, a1 + p1),
        Op(C, F, "conv2", 2 * 196 * 64 * 288, p1 + a2, 18496, 196, 64, 288),
        Op(E, F, "relu2", 0, 2 * a2),
        Op(E, F, "pool2", 0, a2 + p2),
        Op(G, F, "fc1", 2 * 3136 * 128, 3136 + 128, 401536, 1, 128, 3136),
        Op(E, F, "relu3", 0, 256),
        Op(G, F, "fc2", 2 * 128 * 10, 138, 1290, 1, 10, 128),
        Op(E, F, "loss", 0, 30, count=2, fp32_only=True),
        Op(E, B, "loss.backward", 0, 30, count=2, fp32_only=True),
        Op(G, B, "fc2.dX", 2 * 128 * 10, 138, 1280, 1, 128, 10),
        Op(G, B, "fc2.dW", 2 * 128 * 10, 138, 1280, 1, 10, 128),
        Op(E, B, "fc2.db", 0, 20),
        Op(E, B, "relu3.backward", 0, 384),
        Op(G, B, "fc1.dX", 2 * 3136 * 128, 3264, 401408, 1, 3136, 128),
        Op(G, B, "fc1.dW", 2 * 3136 * 128, 3264, 401408, 1, 128, 3136),
        Op(E, B, "fc1.db", 0, 256),
        Op(E, B, "pool2.backward", 0, p2 + a2),
        Op(E, B, "relu2.backward", 0, 3 * a2),
        Op(C, B, "conv2.dX", 2 * 196 * 64 * 288, a2 + p1, 18432, 784 // 4, 32, 576),
        Op(C, B, "conv2.dW", 2 * 196 * 64 * 288, a2 + p1, 18432, 196, 64, 288),
        Op(E, B, "conv2.db", 0, a2),
        Op(E, B, "pool1.backward", 0, p1 + a1),
        Op(E, B, "relu1.backward", 0, 3 * a1),
        Op(C, B, "conv1.dW", 2 * 784 * 32 * 9, a1 + 784, 288, 784, 32, 9),
        Op(E, B, "conv1.db", 0, a1),
    ]
    params = 320 + 18496 + 401536 + 1290
    return StepTrace(
        tuple(ops), params, params, 784 * 4 + 8, a1 * 3 + a2 * 3 + p2, 0.0, source="hand-written eager trace"
    )


#: Hand-written eager traces for presets the trace builders only approximate (validated against
#: our H100 record: docs/accuracy.md).
HAND_TRACES = {"simple-cnn": simple_cnn_trace}


def workload_trace(w: Workload, *, checkpointing: bool | str) -> Any:
    """The workload's operator trace (the trace builders' ``trace_for``); a coarse synthetic one
    (``fallback_trace``) where that module is not available. ``checkpointing``: a flag, or none /
    selective / full."""
    try:
        from gpuselect.workloads.traces import trace_for
    except ImportError:
        t = fallback_trace(w, checkpointing=bool(checkpointing) and checkpointing != "none")
    else:
        t = trace_for(w, checkpointing=checkpointing)
    if t.source.startswith("APPROXIMATION") and w.id in HAND_TRACES and not checkpointing and w.mode == "full":
        return HAND_TRACES[w.id]()
    return t


def fallback_trace(w: Workload, *, checkpointing: bool) -> Any:
    """A GEMM-per-layer trace from the workload's totals: each layer one forward GEMM of its
    share of the FLOPs, its two backward GEMMs (one for frozen weights) and three memory-bound
    kernels moving its share of the activation traffic."""
    from gpuselect.estimate.trace import Op, OpKind, Phase, StepTrace

    layers = max(1, w.layers)
    seq = w.seq_len or 1
    f = w.forward_flops_per_sample / layers
    width = max(64, int(math.sqrt(max(1.0, w.params / layers / 12))) // 64 * 64) if w.kind == "transformer" else 512
    ew = w.memory_traffic_bytes_per_sample / 2.0 / layers / 3  # elements (16-bit) per kernel
    wts = w.params / layers
    ops = [
        Op(OpKind.GEMM, Phase.FORWARD, "layer.gemm", f, 0.0, wts, seq, width, width, layers),
        Op(OpKind.ELEMENTWISE, Phase.FORWARD, "layer.ew", 0.0, ew, 0.0, count=3 * layers),
        Op(OpKind.GEMM, Phase.BACKWARD, "layer.gemm.dX", f, 0.0, wts, seq, width, width, layers),
        Op(OpKind.ELEMENTWISE, Phase.BACKWARD, "layer.ew.backward", 0.0, 1.5 * ew, 0.0, count=3 * layers),
    ]
    if w.mode == "full":
        ops.append(Op(OpKind.GEMM, Phase.BACKWARD, "layer.gemm.dW", f, 0.0, wts, seq, width, width, layers))
    if checkpointing:
        ops += [
            Op(
                o.kind,
                Phase.RECOMPUTE,
                o.name,
                o.flops_per_sample,
                o.elems_per_sample,
                o.elems_fixed,
                o.m_per_sample,
                o.n,
                o.k,
                o.count,
            )
            for o in ops
            if o.phase is Phase.FORWARD
        ]
    inputs = 4.0 * math.prod(w.input_shape) if w.input_shape else 0.0
    return StepTrace(
        ops=tuple(ops),
        params=w.params,
        trainable_params=w.trainable_params,
        input_bytes_per_sample=inputs,
        saved_elems_per_sample=w.activation_bytes_per_sample / 2,
        saved_elems_per_sample_ckpt=w.activation_bytes_per_sample / 2 / layers,
        checkpointing=checkpointing,
        source="APPROXIMATION: synthetic trace from the workload's totals (perf.fallback_trace)",
    )


_DEVICE_TIMES: dict[tuple[int, int], tuple[Any, tuple[float, float, float, float, float]]] = {}
_COUNTS: dict[tuple[int, str], tuple[Any, int]] = {}

#: Mixed precisions whose steps run under torch.autocast with fp32 weights (fp8 recipes cast
#: their own way: ``roofline.fp8_cast_kernels``).
AUTOCAST = ("fp16", "bf16")


def _count(trace: Any, what: str, compute: Callable[[Any], int]) -> int:
    """A per-step count of ``trace``'s ops, computed once per trace (keyed by identity: the same
    step at other GPU counts and cards reuses it)."""
    key = (id(trace), what)
    hit = _COUNTS.get(key)
    if hit is None or hit[0] is not trace:  # ids of dead objects can be reused
        if len(_COUNTS) > 2048:
            _COUNTS.clear()
        hit = _COUNTS[key] = (trace, compute(trace))
    return hit[1]


def _autocast_weight_uses(trace: Any) -> int:
    """Forward and recompute GEMM/convolution instances the framework dispatches that read a
    weight (each casts it under autocast; a library's own kernels inside one call, such as cuDNN's
    RNN steps, use the weights that call cast once)."""
    from gpuselect.estimate.trace import OpKind, Phase

    return _count(
        trace,
        "autocast",
        lambda t: sum(
            o.count
            for o in t.ops
            if o.kind in (OpKind.GEMM, OpKind.CONV)
            and o.elems_fixed > 0
            and o.host_dispatch
            and o.phase is not Phase.BACKWARD
        ),
    )


def _launches(trace: Any) -> int:
    # the host dispatches these; kernels a library launches inside one call cost it nothing
    return _count(
        trace,
        "dispatches",
        lambda t: t.dispatches_per_step() if hasattr(t, "dispatches_per_step") else t.launches_per_step(),
    )


def step_time(
    trace: Any,
    d: Any,
    batch: int,
    precision: str,
    *,
    optimizer: str = "adamw",
    full_params: bool = True,
    comm: Any = None,
    optimizer_shards: int = 1,
    sharded_weights: bool = False,
) -> StepTime:
    """Seconds of one training step of ``trace`` at per-device ``batch`` on device model ``d``
    (``roofline.DeviceModel``). ``comm``: a callable (compute seconds, backward seconds) ->
    ``parallel.CommTime`` for multi-GPU steps. ``optimizer_shards``: the GPUs the optimizer state
    is sharded over (ZeRO-1/2/3, FSDP): each updates only its shard. ``sharded_weights``: FSDP
    (ZeRO-3), whose mixed precision gathers 16-bit weights, or DeepSpeed's ZeRO-1/2/Offload, whose
    module is held in 16 bits: no autocast casts; each rank casts its gradient shard."""
    from gpuselect.estimate.roofline import compile_ops, device_time

    bd = {
        "compute": 0.0,
        "memory": 0.0,
        "kernel_floor": 0.0,
        "optimizer": 0.0,
        "host": 0.0,
        "copy": 0.0,
        "communication": 0.0,
    }
    compiled = compile_ops(d, trace.ops, precision)
    hit = _DEVICE_TIMES.get((id(compiled), batch))
    if hit is None or hit[0] is not compiled:  # the same step at other GPU counts: computed once
        if len(_DEVICE_TIMES) > 8192:
            _DEVICE_TIMES.clear()
        hit = _DEVICE_TIMES[(id(compiled), batch)] = (compiled, device_time(d, compiled, batch))
    device, bd["compute"], bd["memory"], bd["kernel_floor"], backward = hit[1]
    # Optimizer: its state traffic at the memory roofline; mixed precision adds the per-step casts
    # of the fp32 master weights to 16 bits (read 4, write 2 bytes each).
    trainable = float(trace.trainable_params)
    opt_bytes = trainable * OPTIMIZER_BYTES[optimizer]
    if precision in ("fp16", "bf16", "fp8") and full_params:
        opt_bytes += trainable * 6.0
    if precision == "bf16-true":
        opt_bytes /= 2.0  # states and weights kept in bf16
    opt_bytes /= max(1, optimizer_shards)
    opt_launches = OPTIMIZER_LAUNCHES[optimizer]
    t_opt = opt_bytes / (d.bandwidth_gbs * 1e9 * d.mem_eff) + opt_launches * d.kernel_floor_s if trainable else 0.0
    bd["optimizer"] = t_opt
    device += t_opt
    launches = _launches(trace) + opt_launches
    if precision in AUTOCAST and full_params and d.kind == "gpu":
        # torch.autocast casts each trainable fp32 weight to 16 bits where a matmul or convolution
        # uses it (forward and recompute), and autograd casts its 16-bit gradient back: two more
        # ops per weighted GEMM instance, each a launch and a dispatch. The forward casts' traffic
        # is the master-weight cast above; the gradients' (read 2, write 4 bytes) is added here.
        # Under FSDP the gathered weights are already 16-bit (autocast's casts are no-ops), under
        # DeepSpeed the module itself is, and each rank casts only its shard of the gradients.
        casts = 0 if sharded_weights else 2 * _autocast_weight_uses(trace)
        cast_bytes = trainable * 6.0 / (max(1, optimizer_shards) if sharded_weights else 1)
        t_cast = casts * d.kernel_floor_s + cast_bytes / (d.bandwidth_gbs * 1e9 * d.mem_eff)
        bd["kernel_floor"] += casts * d.kernel_floor_s
        bd["memory"] += t_cast - casts * d.kernel_floor_s
        device += t_cast
        launches += casts
    host = launches * d.dispatch_s + d.step_fixed_s
    if d.kind == "cpu":
        # The CPU runs each op on the thread that dispatched it: no overlap.
        rng = _cpu_rng_seconds(trace, batch)
        if rng:
            bd["rng"] = rng
            device += rng
        step = device + host
        bd["host"] = host
    else:
        # After each sync the device waits for the host to dispatch the next kernel.
        lag = getattr(trace, "syncs_per_step", 0) * d.dispatch_s
        step = max(device, host) + lag
        bd["host"] = max(0.0, host - device) + lag
        copy = trace.input_bytes_per_sample * batch / ((d.h2d_gbs or 1.0) * 1e9) + 2 * d.h2d_latency_s
        bd["copy"] = copy
        step += copy
    if comm is not None:
        c = comm(device, backward)
        bd["communication"] = c.exposed_s
        step += c.exposed_s
    share = {
        "compute": bd["compute"],
        "memory": bd["memory"] + bd["optimizer"],
        "overhead": bd["kernel_floor"] + bd["host"] + bd["copy"],
        "communication": bd["communication"],
    }
    bound = max(share, key=lambda k: share[k])
    if d.kind != "cpu" and host > device:
        # The device waits for the host: the step is the host's, whatever the device's own split
        # (labelled by that split, two cards with the same host-bound rate read compute and memory).
        bound = "communication" if bd["communication"] > host + bd["copy"] else "overhead"
    return StepTime(step, dict(bd.items()), bound, device, host, launches, backward)


#: Seconds per element of dropout's random mask on a CPU: torch's CPU bernoulli_ with a float p
#: draws on one thread whatever the thread count (5.7-5.9 ns per element at 1 and 2 threads, 2 M and
#: 8 M elements, on the 2-core Xeon VM: benchmarks/cpu_rng.py -> docs/validation/cpu-xeon-2026-11-25/
#: rng.txt), so on a many-core CPU a dropout model's mask outlasts the rest of its elementwise work.
CPU_RNG_S_PER_ELEM = 5.8e-9


def _cpu_rng_seconds(trace: Any, batch: int) -> float:
    """Dropout's mask draws in one CPU step: the traced bernoulli_ ops' mask elements (half each
    in-place op's counted elements: the tensor in and the same tensor out), forward and recompute."""
    total = 0.0
    for op in trace.ops:
        if op.phase.value == "backward" or "bernoulli" not in op.name:
            continue
        total += (op.elems_per_sample * batch + op.elems_fixed) / 2 * op.count
    return total * CPU_RNG_S_PER_ELEM


def bench_transformer_trace(cpu: bool = False) -> Any:
    """gpuselect bench's "transformer" model: one nn.TransformerEncoderLayer(256, 4 heads, FFN 1024,
    dropout) on 64 random 256-wide vectors per sample, mean-pooled into Linear(256, 10).

    On a CPU (``cpu``): the shipped meta-device trace of that very module. The meta device takes
    the CPU's paths (dropout as bernoulli_, div_ and mul; the head splits' copies: twice the
    analytic builder's elementwise traffic), so it is the CPU's step. On a GPU, whose dropout is
    one fused kernel each way, the analytic builder's (no embedding lookup: the input is a float
    tensor); fitting the GPU host on the meta trace moved our H100 preset rows away (Session 12)."""
    from dataclasses import replace

    if cpu:
        try:
            from gpuselect.workloads.traces import shipped_trace

            t = shipped_trace("bench-transformer")
        except ImportError:
            t = None
        if t is not None:
            return t

    from gpuselect.workloads.traces import transformer_trace
    from gpuselect.workloads.transformer import TransformerShape

    shape = TransformerShape(
        layers=1, hidden=256, heads=4, vocab=10, seq_len=64, ffn=1024, lm_head=False, dropout=True, head_outputs=10
    )
    return replace(transformer_trace(shape, mode="full"), input_bytes_per_sample=64 * 256 * 4 + 8)


def bench_simple_cnn_trace(cpu: bool = False) -> Any:  # noqa: ARG001 - one trace for CPU and GPU (as BENCH_TRACES call it)
    """gpuselect bench's simple CNN: the shipped meta-device trace, else the hand-written one."""
    try:
        from gpuselect.workloads.traces import shipped_trace

        t = shipped_trace("simple-cnn")
    except ImportError:
        t = None
    return t if t is not None else simple_cnn_trace()


#: gpuselect bench's training models (``train_steps``) the step-time model has traces for.
BENCH_TRACES = {"simple_cnn": bench_simple_cnn_trace, "transformer": bench_transformer_trace}
_BENCH_TRACE_CACHE: dict[str, Any] = {}


def bench_trace(model: str, *, cpu: bool = False) -> Any:
    """The trace the step model times a bench model's step with (on a CPU, its CPU paths)."""
    key = f"{model}/cpu" if cpu else model
    if key not in _BENCH_TRACE_CACHE:
        _BENCH_TRACE_CACHE[key] = BENCH_TRACES[model](cpu=cpu)
    return _BENCH_TRACE_CACHE[key]


@dataclass(frozen=True)
class BenchFit:
    """A benchmarked device's effective parameters, fitted on its own measured training steps:
    the host's cost per eager op, the factor by which a training step's kernels take longer than
    the roofline at the benchmark's measured matmul rate and bandwidth (caches shared with the
    step's other kernels, small GEMMs on many threads, clocks, a busy machine), and on a CPU whose
    record holds both a CNN and a GEMM-bound model, the convolutions' own factor (oneDNN's direct
    convolutions against its GEMMs differ from CPU to CPU)."""

    dispatch_s: float
    device_scale: float
    conv_scale: float  # convolutions take this much longer again (1: as the global conv factor says)
    steps: int  # measured steps fitted
    models: tuple[str, ...]
    rms_log_err: float  # in-sample

    @property
    def unsteady(self) -> bool:
        """The record's steps disagree with the fit (a busy machine), or are too few to tell: no
        more than the parameters fitted to them."""
        fitted = 3 if self.conv_scale != 1.0 else 2
        return self.rms_log_err > FIT_TRUST or self.steps <= fitted

    def describe(self) -> str:
        """The fit in words, for the device's notes and the local estimate's basis."""
        text = (
            f"fitted on its {self.steps} measured training steps ({', '.join(self.models)}): "
            f"{self.dispatch_s * 1e6:.1f} µs per op, kernels at {1 / self.device_scale:.2f}x the measured rates"
        )
        if self.conv_scale != 1.0:
            text += f", convolutions at {1 / self.conv_scale:.2f}x that again"
        if self.rms_log_err > FIT_TRUST:
            text += (
                f"; its steps disagree with the model by {100 * (math.exp(self.rms_log_err) - 1):.0f} % rms "
                "(a busy machine, or work the model misjudges on this device)"
            )
        elif self.unsteady:
            text += "; its steps disagree with the model or not: too few steps to tell"
        return text


#: The GPU fit's search box: per-op host cost 0.2 µs .. 20 ms, device factor 0.02 .. 50.
_DISPATCH_RANGE = (2e-7, 2e-2)
_SCALE_RANGE = (0.02, 50.0)
#: An in-sample rms log error above this is stated in the device's notes (e^0.35: 42 %), and the
#: device's rows take the band of such records ("cpu_unsteady").
FIT_TRUST = 0.35
#: Weight of the prior log(device factor)^2: as much as one step 22 % off.
_SCALE_PRIOR = 0.04


def _bench_components(
    d: Any, steps: list[tuple[str, int, float]], h2d_gbs: float | None
) -> list[tuple[float, float, float, float, float, float]]:
    """Per measured step: (seconds measured, launches, device seconds the scale applies to, of
    them in convolutions, device seconds it does not (kernel floors), copy seconds), with the
    device's host cost at 0."""
    from dataclasses import replace

    from gpuselect.estimate.roofline import op_time
    from gpuselect.estimate.trace import OpKind

    d0 = replace(d, dispatch_s=0.0, h2d_gbs=h2d_gbs or d.h2d_gbs)
    out = []
    for model, batch, seconds in steps:
        trace = bench_trace(model, cpu=d.kind == "cpu")
        st = step_time(trace, d0, batch, "fp32", optimizer="sgd-momentum")
        # a CPU's dropout draws run on one thread at their own rate: not scaled with the kernels
        floor = st.breakdown["kernel_floor"] + st.breakdown.get("rng", 0.0)
        conv = sum(op_time(d0, op, batch, "fp32")[0] for op in trace.ops if op.kind is OpKind.CONV)
        dev = max(0.0, st.device_s - floor)
        out.append((seconds, float(st.launches), dev, min(conv, dev), floor, st.breakdown["copy"]))
    return out


def _bench_predict(
    comp: tuple[float, float, float, float, float, float], dispatch_s: float, scale: float, conv: float, cpu: bool
) -> float:
    _t, launches, dev, dconv, floor, copy = comp
    host = launches * dispatch_s  # a benchmark's per-op cost is fitted alone (DeviceModel.step_fixed_s 0)
    device = scale * (dev - dconv + conv * dconv) + floor
    # The CPU runs each op on the thread that dispatched it; a GPU overlaps the host with the device.
    return host + device if cpu else max(host, device) + copy


def _solve(a: list[list[float]], y: list[float]) -> list[float] | None:
    """Least squares a x = y (normal equations, Gaussian elimination; a few unknowns)."""
    n = len(a[0])
    m = [
        [sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * v for r, v in zip(a, y, strict=True))]
        for i in range(n)
    ]
    for i in range(n):
        piv = max(range(i, n), key=lambda k: abs(m[k][i]))
        if abs(m[piv][i]) < 1e-30:
            return None
        m[i], m[piv] = m[piv], m[i]
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [u - f * v for u, v in zip(m[k], m[i], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit_cpu(comps: list[tuple[float, float, float, float, float, float]]) -> tuple[float, float, float] | None:
    """CPU steps are additive (step = launches x c + a x other device time + b x convolution
    time): least squares on the relative error, linear in (c, a, b). Both kinds of work must be
    in the record to separate a and b, else b = a (the global conv factor stands)."""
    rows = [[x[1] / x[0], (x[2] - x[3]) / x[0], x[3] / x[0]] for x in comps]
    # what the fitted terms must explain: the step less its fixed part (a CPU's dropout draws)
    ones = [max(0.0, 1.0 - x[4] / x[0]) for x in comps]
    conv_heavy = [x[3] > 0.5 * x[2] for x in comps]
    candidates: list[tuple[float, float, float]] = []
    if any(conv_heavy) and not all(conv_heavy):
        sol = _solve(rows, ones)
        if sol is not None and min(sol) > 0:
            candidates.append((sol[0], sol[1], sol[2] / sol[1]))
    sol = _solve([[r[0], r[1] + r[2]] for r in rows], ones)
    if sol is not None and min(sol) > 0:
        candidates.append((sol[0], sol[1], 1.0))
    # The device at its measured rates (factor 1) with only the host cost fitted; all device.
    c1 = sum(r[0] * (y - r[1] - r[2]) for r, y in zip(rows, ones, strict=True)) / sum(r[0] ** 2 for r in rows)
    candidates.append((max(c1, _DISPATCH_RANGE[0]), 1.0, 1.0))
    dev = [r[1] + r[2] for r in rows]
    candidates.append(
        (_DISPATCH_RANGE[0], sum(v * y for v, y in zip(dev, ones, strict=True)) / sum(v * v for v in dev), 1.0)
    )
    # A record no per-op cost and rates explain (a busy machine) must not leave absurd rates.
    lo, hi = _SCALE_RANGE
    candidates = [c for c in candidates if lo <= c[1] <= hi and lo <= c[2] <= hi]

    def loss(c: tuple[float, float, float]) -> float:
        return sum(math.log(_bench_predict(x, c[0], c[1], c[2], True) / x[0]) ** 2 for x in comps)

    return min(candidates, key=loss) if candidates else None


def fit_bench_steps(d: Any, steps: list[tuple[str, int, float]], *, h2d_gbs: float | None = None) -> BenchFit | None:
    """Fit the device's effective parameters (``BenchFit``) to measured steps [(bench model,
    batch, seconds)]: a CPU by linear least squares (``_fit_cpu``), a GPU, whose host overlaps
    the device (a max, not a sum), on a coarse log grid of (per-op cost, device factor) refined
    twice around its best. None without at least two usable steps."""
    steps = [s for s in steps if s[0] in BENCH_TRACES and s[1] > 0 and s[2] > 0]
    if len(steps) < 2:
        return None
    comps = _bench_components(d, steps, h2d_gbs)
    models = tuple(sorted({s[0] for s in steps}))
    if d.kind == "cpu":
        got = _fit_cpu(comps)
        if got is None:
            return None
        c, s, r = got
        err = sum(math.log(_bench_predict(x, c, s, r, True) / x[0]) ** 2 for x in comps)
        return BenchFit(c, s, r, len(steps), models, math.sqrt(err / len(steps)))

    def loss(c: float, s: float) -> float:
        # A weak prior at the measured rates (s = 1): steps that are all host-bound leave s free.
        prior = _SCALE_PRIOR * math.log(s) ** 2
        return prior + sum(math.log(_bench_predict(x, c, s, 1.0, False) / x[0]) ** 2 for x in comps)

    lc0, lc1 = (math.log(v) for v in _DISPATCH_RANGE)
    ls0, ls1 = (math.log(v) for v in _SCALE_RANGE)
    best = (math.inf, 0.0, 0.0)
    n = 24
    for i in range(n + 1):
        lc = lc0 + (lc1 - lc0) * i / n
        for j in range(n + 1):
            ls = ls0 + (ls1 - ls0) * j / n
            v = loss(math.exp(lc), math.exp(ls))
            if v < best[0]:
                best = (v, lc, ls)
    # Two refinements: +-1 coarse cell in tenths, then +-1 tenth in hundredths.
    for div in (10, 100):
        _v, bc, bs = best
        dc, ds = (lc1 - lc0) / n / div, (ls1 - ls0) / n / div
        for i in range(-10, 11):
            lc = min(lc1, max(lc0, bc + dc * i))
            for j in range(-10, 11):
                ls = min(ls1, max(ls0, bs + ds * j))
                v = loss(math.exp(lc), math.exp(ls))
                if v < best[0]:
                    best = (v, lc, ls)
    _v, lc, ls = best
    err = sum(math.log(_bench_predict(x, math.exp(lc), math.exp(ls), 1.0, False) / x[0]) ** 2 for x in comps)
    return BenchFit(math.exp(lc), math.exp(ls), 1.0, len(steps), models, math.sqrt(err / len(steps)))


def bench_step_list(rec: dict[str, Any], models: tuple[str, ...] | None = None) -> list[tuple[str, int, float]]:
    """The record's measured training steps the step-time model has traces for:
    [(bench model, batch, seconds per step)] (``models``: only these)."""
    out = []
    for s in _bench_steps(rec):
        m, b, ms = s.get("model"), s.get("batch_size"), s.get("step_ms")
        if m in BENCH_TRACES and (models is None or m in models) and b and ms and ms > 0:
            out.append((str(m), int(b), float(ms) / 1e3))
    return out


def apply_bench_fit(d: Any, f: BenchFit) -> Any:
    """The device with the fitted host cost per op, and every rate divided by the device factor."""
    from dataclasses import replace

    from gpuselect.estimate.roofline import _conv_factor

    s = f.device_scale
    return replace(
        d,
        peak_tflops={k: v / s for k, v in d.peak_tflops.items()},
        vector_tflops=d.vector_tflops / s,
        bandwidth_gbs=d.bandwidth_gbs / s,
        dispatch_s=f.dispatch_s,
        step_fixed_s=0.0,  # the fit's per-op cost carries the whole host, as fit_bench_steps fits it
        conv_factor=_conv_factor(d) / f.conv_scale if f.conv_scale != 1.0 else d.conv_factor,
        notes=(*d.notes, f.describe()),
        bench_fit=f,
    )


_BENCH_FITS: dict[tuple[Any, ...], BenchFit | None] = {}


def _fitted(d: Any, rec: dict[str, Any], h2d_gbs: float | None) -> Any:
    """``d`` fitted on the record's own training steps where it has at least two usable ones."""
    steps = bench_step_list(rec)
    rates = (d.kind, d.name, tuple(sorted(d.peak_tflops.items())), d.vector_tflops, d.bandwidth_gbs, d.units)
    key = (rates, d.dispatch_s, tuple(steps), h2d_gbs)
    if key not in _BENCH_FITS:
        if len(_BENCH_FITS) > 64:
            _BENCH_FITS.clear()
        _BENCH_FITS[key] = fit_bench_steps(d, steps, h2d_gbs=h2d_gbs)
    f = _BENCH_FITS[key]
    return d if f is None else apply_bench_fit(d, f)


def _bench_steps(rec: dict[str, Any]) -> list[dict[str, Any]]:
    steps = rec.get("train_steps") or []
    if isinstance(steps, str):  # early records stored the list as its repr
        import ast

        try:
            steps = ast.literal_eval(steps)
        except (ValueError, SyntaxError):
            return []
    return [s for s in steps if isinstance(s, dict)]


def cpu_fma_flops_per_cycle(features: list[str] | tuple[str, ...]) -> int:
    """fp32 FLOP per cycle and core of the widest FMA the CPU has: two FMA units of 16 (AVX-512),
    8 (AVX2/FMA) or 4 lanes (AVX without FMA: a multiply and an add port), 2 FLOP each; else SSE's
    4 lanes x 2. An upper bound: some AVX-512 parts have one 512-bit FMA unit."""
    f = set(features)
    if "avx512f" in f:
        return 64
    if "fma" in f and "avx2" in f:
        return 32
    if "avx" in f:
        return 16
    return 8


def cpu_device(
    rec: dict[str, Any] | None,
    *,
    cores: int | None,
    name: str = "this CPU",
    mhz: float | None = None,
    features: list[str] | tuple[str, ...] = (),
    fit_steps: bool = True,
    spec: dict[str, float] | None = None,
) -> Any:
    """A CPU as a device: its peak is its measured matmul rate, its bandwidth the measured copy
    rate, its per-op cost its measured launch overhead x the fitted ratio. Where the record holds
    measured training steps of the bench's models (``fit_steps``), the per-op cost and a factor on
    all rates are fitted on them (``fit_bench_steps``). Without a benchmark: cores x clock x FMA
    FLOP/cycle x the share fitted on our CPU records (``cpu.spec_gemm_share``, stated in the basis),
    ``cpu.spec_gbs_per_core`` x cores of bandwidth, a 5 µs launch x the host ratio per op
    (``spec``: those two figures from elsewhere, e.g. fitted leaving this machine out)."""
    from gpuselect.estimate.roofline import DeviceModel, params

    p = params()
    rec = rec or {}
    mm = rec.get("matmul_tflops") or {}
    fp32 = mm.get("fp32")
    notes: list[str] = []
    spec = p["cpu"] if spec is None else spec
    share = float(spec.get("spec_gemm_share", 0.5))
    if not fp32:
        fp32 = (cores or 2) * (mhz or 2500.0) * 1e6 * cpu_fma_flops_per_cycle(features) / 1e12 * share
        notes.append(f"its rate taken as cores x clock x FMA FLOP/cycle x {share:.0%}")
    peaks = {"fp32": float(fp32)}
    for prec in ("bf16", "fp16"):
        if mm.get(prec):
            peaks[prec] = float(mm[prec])
            if prec == "bf16":
                peaks["bf16-true"] = peaks[prec]
    launch = rec.get("launch_overhead_us") or 5.0
    d = DeviceModel(
        name=name,
        kind="cpu",
        vendor="cpu",
        arch="cpu",
        peak_tflops=peaks,
        vector_tflops=float(fp32),
        bandwidth_gbs=float(
            rec.get("memory_bandwidth_gbs") or max(1, cores or 2) * float(spec.get("spec_gbs_per_core", 5.0))
        ),
        units=max(1, cores or 1),
        gemm_eff={"fp32": 1.0, "16": 1.0, "tf32": 1.0, "fp8": 1.0},
        mem_eff=1.0,
        kernel_floor_s=0.0,
        dispatch_s=float(launch) * 1e-6 * p["cpu"]["dispatch_per_launch_overhead"],
        h2d_gbs=None,
        notes=tuple(notes),
    )
    return _fitted(d, rec, None) if fit_steps else d


def benchmarked_gpu_device(e: GpuEntry, rec: dict[str, Any], *, fit_steps: bool = True) -> Any:
    """A catalog GPU whose own benchmark replaces the defaults: measured large-GEMM rates per
    precision (efficiency 1 against them), measured copy bandwidth, dispatch from its launch
    overhead, its pageable host-to-device rate. Where the record holds measured training steps
    (``fit_steps``), the per-op host cost and a factor on the rates are fitted on them (at the
    pinned copy rate the bench's steps used)."""
    from dataclasses import replace

    from gpuselect.estimate.roofline import catalog_device, params

    p = params()
    d = catalog_device(e)
    peaks = dict(d.peak_tflops)
    eff = dict(d.gemm_eff)
    for prec, v in (rec.get("matmul_tflops") or {}).items():
        if v and prec in peaks:
            peaks[prec] = float(v)
            eff[{"fp16": "16", "bf16": "16"}.get(prec, prec)] = 1.0
    if "bf16" in peaks:
        peaks["bf16-true"] = peaks["bf16"]
    bw = rec.get("memory_bandwidth_gbs")
    launch = rec.get("launch_overhead_us")
    detail = rec.get("transfer_detail")
    h2d = None
    if isinstance(detail, dict):
        h2d = (detail.get("host_to_device_pageable") or {}).get("value")
    elif isinstance(detail, str) and "host_to_device_pageable" in detail:
        import re

        m = re.search(r"'host_to_device_pageable': \{'value': ([0-9.]+)", detail)
        h2d = float(m.group(1)) if m else None
    dispatch_s, step_fixed_s = d.dispatch_s, d.step_fixed_s
    if launch:  # the H100 machine's host costs over its bare-op launch, times this machine's launch
        dispatch_s = float(launch) * 1e-6 * p["host"]["dispatch_per_launch_overhead"]
        step_fixed_s = dispatch_s * p["host"]["step_fixed_us"] / p["host"]["dispatch_us"]
    d = replace(
        d,
        peak_tflops=peaks,
        gemm_eff=eff,
        bandwidth_gbs=float(bw) if bw else d.bandwidth_gbs,
        mem_eff=1.0 if bw else d.mem_eff,
        dispatch_s=dispatch_s,
        step_fixed_s=step_fixed_s,
        h2d_gbs=float(h2d) if h2d else d.h2d_gbs,
        notes=(*d.notes, "measured by gpuselect bench"),
    )
    if not fit_steps:
        return d
    pinned = rec.get("host_to_device_gbs")
    return _fitted(d, rec, float(pinned) if pinned else None)
