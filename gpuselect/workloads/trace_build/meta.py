"""The meta-device tracer: one whole training step (forward, loss, backward) of a torch module,
recorded op by op with a TorchDispatchMode on the meta device (shapes only: no memory, no data).

- FLOPs: torch.utils.flop_counter's formulas (causal fused attention counted half, as the
  analytic builder does).
- Kinds: mm/addmm/bmm/baddbmm -> GEMM (m, n, k); convolution(+backward) -> CONV as implicit GEMM
  (convolution_backward split into its dX and dW kernels); scaled_dot_product_* / flash /
  efficient attention -> ATTENTION; embedding(+dense backward) -> EMBEDDING; every other op that
  launches a kernel -> ELEMENTWISE. Views and allocations without a fill launch nothing and are
  left out.
- Elements read + written: the numel of the op's tensor arguments and results.
- Per sample vs per step: the step is traced at two batch sizes and differenced.
- Saved activations: torch.autograd.graph.saved_tensors_hooks, storages deduplicated,
  parameters excluded; float tensors in elements, integer/bool ones in bytes.
- RNNs: ``nn.LSTM`` and ``nn.GRU`` run as cuDNN does (``CudnnRnnFn``: one dispatched call per layer and pass,
  its per-step GEMM and pointwise kernels marked ``Op.host_dispatch`` False); an LSTM/GRU cell
  called step by step from Python keeps one dispatch per kernel, its pointwise ops merged into the
  fused cell kernel a GPU launches (``_fuse_rnn_cells``).
- Checkpointing: the model's repeated blocks (the children of its largest ModuleList, or of the
  model when it is a Sequential) are the checkpoint units: their forward ops are the recompute,
  and what stays saved is everything outside the units + the units' inputs + the largest unit's
  own saved set.

Torch is imported here only; this runs at build time (``python -m gpuselect.workloads.trace_build``)
and in the ``--model`` subprocess, never in the app.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from gpuselect.estimate.trace import Op, OpKind, Phase, StepTrace

aten = torch.ops.aten

_GEMM = {aten.mm, aten.addmm, aten.bmm, aten.baddbmm}
_CONV = {aten.convolution, aten._convolution, aten.cudnn_convolution, aten.convolution_backward}
_ATTENTION = {
    aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention,
    aten._flash_attention_forward,
    aten._efficient_attention_forward,
    aten._scaled_dot_product_flash_attention_backward,
    aten._scaled_dot_product_efficient_attention_backward,
    aten._scaled_dot_product_cudnn_attention_backward,
    aten._flash_attention_backward,
    aten._efficient_attention_backward,
}
_EMBEDDING = {
    aten.embedding,
    aten.embedding_dense_backward,
    aten.embedding_backward,
    aten._embedding_bag,
    aten._embedding_bag_backward,
    aten._embedding_bag_dense_backward,
}
_FP32_LOSS = re.compile(r"log_softmax|nll_loss|cross_entropy|mse_loss|binary_cross_entropy|_softmax_backward_data")
# Ops that launch no kernel (metadata, allocation without a fill, scalar reads).
_NO_KERNEL = {
    aten.empty,
    aten.empty_like,
    aten.empty_strided,
    aten.new_empty,
    aten.new_empty_strided,
    aten.detach,
    aten._local_scalar_dense,
    aten.lift_fresh,
    aten.alias,
    aten.sym_size,
    aten.sym_stride,
    aten.sym_numel,
    aten._unsafe_view,
    aten._reshape_alias,
}  # the last two: views the dispatcher does not tag as views


#: Depth of ``library_kernels()`` blocks: ops recorded inside are kernels a library launches by
#: itself within one dispatched call (``Op.host_dispatch`` False).
_LIBRARY = [0]


@contextmanager
def library_kernels() -> Iterator[None]:
    """Mark the ops run inside as launched by a library from C++ (cuDNN's per-time-step RNN
    kernels), not dispatched one by one from Python: device time, no host dispatch each."""
    _LIBRARY[0] += 1
    try:
        yield
    finally:
        _LIBRARY[0] -= 1


class CudnnRnnFn(torch.autograd.Function):
    """One direction of one ``nn.LSTM`` / ``nn.GRU`` layer as a GPU runs it (torch calls
    cudnn_rnn): forward, one GEMM of every time step's input projection, then per step the
    recurrent GEMM (batch x gates x h: 4h for an LSTM, 3h for a GRU) and one fused pointwise kernel; backward, per step the pointwise kernel and the recurrent GEMM
    for dh, then one GEMM each for dX, dW_ih and dW_hh over all steps. cuDNN launches the per-step
    kernels itself (``library_kernels``: device time, no eager dispatch each). On the meta device
    torch would instead decompose the layer into ~6 dispatched ops per step and run the weight
    gradients as per-step GEMMs. ``x``: (batch, steps, features), or (steps, batch, features)
    when ``batch_first`` is False."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        w_ih: torch.Tensor,
        w_hh: torch.Tensor,
        b_ih: torch.Tensor | None,
        b_hh: torch.Tensor | None,  # noqa: ARG004 - added to b_ih inside the kernel; its gradient is b_ih's
        batch_first: bool,
    ) -> torch.Tensor:
        b, t = (x.shape[0], x.shape[1]) if batch_first else (x.shape[1], x.shape[0])
        h4, hid = w_ih.shape[0], w_hh.shape[1]  # all gates, the hidden size
        flat = x.reshape(b * t, x.shape[-1])
        gx = torch.mm(flat, w_ih.t()) if b_ih is None else torch.addmm(b_ih, flat, w_ih.t())  # the dispatched call
        gx = gx.view(*x.shape[:2], h4)
        with library_kernels():
            h = x.new_zeros(b, hid)
            for step in range(t):
                g = gx[:, step] if batch_first else gx[step]
                h = torch.sigmoid(torch.addmm(g, h, w_hh.t()))[:, :hid]  # recurrent GEMM, fused cell
        # cuDNN's reserve space keeps every step's gates and states (an LSTM's h and c) for the backward
        states = 2 if h4 == 4 * hid else 1
        ctx.save_for_backward(x, w_ih, w_hh, x.new_empty(b, t, h4 + states * hid))
        ctx.batch_first, ctx.has_bias = batch_first, b_ih is not None
        return x.new_empty(*x.shape[:2], hid)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, w_ih, w_hh, _reserve = ctx.saved_tensors
        h4, hid = w_ih.shape[0], w_hh.shape[1]
        t = x.shape[1] if ctx.batch_first else x.shape[0]
        dgates = grad.new_empty(*x.shape[:2], h4)
        with library_kernels():
            for step in range(t):
                # the fused cell's backward (saved gates and dh in, this step's dgates out), then
                # the recurrent GEMM: dh for the step before
                dg = dgates[:, step] if ctx.batch_first else dgates[step]
                torch.mm(torch.sigmoid(dg), w_hh)
        flat = dgates.reshape(-1, h4)
        dx = torch.mm(flat, w_ih).view_as(x)  # cudnn_rnn_backward: the input gradient (dispatched)
        dw_ih = torch.mm(flat.t(), x.reshape(-1, x.shape[-1]))  # the weight gradients over every step
        with library_kernels():
            dw_hh = torch.mm(flat.t(), grad.reshape(-1, hid))
            db = flat.sum(0) if ctx.has_bias else None
        return dx, dw_ih, dw_hh, db, db, None


class _Join(torch.autograd.Function):
    """Both directions' outputs as one tensor without a recorded copy: cuDNN writes them into one
    output (on the meta device an empty tensor whose gradient reaches both directions)."""

    @staticmethod
    def forward(ctx: Any, *outs: torch.Tensor) -> torch.Tensor:
        ctx.sizes = [o.shape[-1] for o in outs]
        return outs[0].new_empty(*outs[0].shape[:-1], sum(ctx.sizes))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(grad.narrow(-1, sum(ctx.sizes[:i]), n) for i, n in enumerate(ctx.sizes))


_RNN_FORWARD: dict[type[nn.Module], Callable[..., Any]] = {nn.LSTM: nn.LSTM.forward, nn.GRU: nn.GRU.forward}


def _rnn_as_cudnn(self: nn.LSTM | nn.GRU, input: Any, hx: Any = None) -> Any:
    """``nn.LSTM.forward`` / ``nn.GRU.forward`` on the meta device as cuDNN runs them
    (``CudnnRnnFn`` per layer and direction); packed sequences and LSTM projections go through
    torch's own path."""
    own = _RNN_FORWARD[nn.LSTM if isinstance(self, nn.LSTM) else nn.GRU]
    if not (isinstance(input, torch.Tensor) and input.device.type == "meta" and input.dim() == 3) or self.proj_size:
        return own(self, input, hx)
    x, dirs = input, 2 if self.bidirectional else 1
    for layer in range(self.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            outs.append(
                CudnnRnnFn.apply(  # type: ignore[no-untyped-call]  # torch leaves Function.apply unannotated
                    x,
                    getattr(self, "weight_ih" + sfx),
                    getattr(self, "weight_hh" + sfx),
                    getattr(self, "bias_ih" + sfx) if self.bias else None,
                    getattr(self, "bias_hh" + sfx) if self.bias else None,
                    self.batch_first,
                )
            )
        x = outs[0] if dirs == 1 else _Join.apply(*outs)  # type: ignore[no-untyped-call]
        if self.dropout and self.training and layer < self.num_layers - 1:
            with library_kernels():  # cuDNN applies the dropout between layers itself
                x = torch.nn.functional.dropout(x, self.dropout, training=True)
    b = input.shape[0] if self.batch_first else input.shape[1]
    h_n = input.new_empty(self.num_layers * dirs, b, self.hidden_size)
    return (x, (h_n, torch.empty_like(h_n))) if isinstance(self, nn.LSTM) else (x, h_n)


@contextmanager
def _cudnn_rnn() -> Iterator[None]:
    """While tracing, ``nn.LSTM`` and ``nn.GRU`` (the presets' and a user's ``--model``) run as
    cuDNN does."""
    for cls in _RNN_FORWARD:
        setattr(cls, "forward", _rnn_as_cudnn)  # noqa: B010 - patching the class for the trace's duration
    try:
        yield
    finally:
        for cls, fwd in _RNN_FORWARD.items():
            setattr(cls, "forward", fwd)  # noqa: B010


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Scaled dot-product attention through the fused (FlashAttention) kernel, as on a GPU: on the
    meta device torch's dispatcher would pick the unfused math path, so call the kernel itself."""
    if q.device.type == "meta":
        out: torch.Tensor = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[0]
        return out
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _fused_sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` as a GPU runs it: the flash kernel (or the
    memory-efficient one where a mask is given), which keep no score matrix for the backward."""
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    if attn_mask is None:
        out: torch.Tensor = aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, scale=scale)[0]
        return out
    if attn_mask.dtype == torch.bool:  # the efficient kernel takes an additive bias
        attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device)
    bias = attn_mask.expand(q.shape[0], q.shape[-3], q.shape[-2], k.shape[-2])
    eff: torch.Tensor = aten._scaled_dot_product_efficient_attention(
        q, k, v, bias, True, dropout_p, is_causal, scale=scale
    )[0]
    return eff


_SDPA = torch.nn.functional.scaled_dot_product_attention


def _sdpa_fused_on_meta(*args: Any, **kwargs: Any) -> Any:
    """``F.scaled_dot_product_attention`` with 4-D meta inputs sent to the fused kernels."""
    q = args[0] if args else kwargs.get("query")
    if not (isinstance(q, torch.Tensor) and q.device.type == "meta" and q.dim() == 4):
        return _SDPA(*args, **kwargs)
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
    call = dict(zip(names, args, strict=False))
    call.update(kwargs)
    return _fused_sdpa(
        call["query"],
        call["key"],
        call["value"],
        call.get("attn_mask"),
        float(call.get("dropout_p", 0.0)),
        bool(call.get("is_causal", False)),
        call.get("scale"),
        bool(call.get("enable_gqa", False)),
    )


def _sdpa_cpu_on_meta(*args: Any, **kwargs: Any) -> Any:
    """``F.scaled_dot_product_attention`` as torch's CPU dispatcher picks it: its fused CPU kernel
    takes no dropout, so with ``dropout_p`` > 0 the math path runs (scores by bmm, softmax, a
    dropout mask of batch x heads x seq x seq, a second bmm: what the meta device itself runs);
    without dropout the fused kernel. benchmarks/cpu_attention_path.py checks this on a real CPU."""
    p = args[4] if len(args) > 4 else kwargs.get("dropout_p", 0.0)
    if float(p) > 0.0:
        return _SDPA(*args, **kwargs)
    return _sdpa_fused_on_meta(*args, **kwargs)


#: Where a traced step's attention runs: "gpu" (the fused kernels, with their dropout inside) or
#: "cpu" (torch's CPU choice, ``_sdpa_cpu_on_meta``).
_ATTENTION_ROUTE: dict[str, Callable[..., Any]] = {"gpu": _sdpa_fused_on_meta, "cpu": _sdpa_cpu_on_meta}


class _FusedAttention(TorchFunctionMode):
    """On the meta device torch's dispatcher picks SDPA's unfused math path (softmax of a stored
    score matrix): a user's ``--model`` would be traced with memory and kernels no GPU run has.
    This mode catches a model's own SDPA calls (also a name imported before tracing); calls made
    inside another torch function (nn.MultiheadAttention's) see the mode popped, so the module
    attribute is patched too while tracing (see ``_fused_attention``)."""

    def __init__(self, route: Callable[..., Any]) -> None:
        super().__init__()
        self.route = route

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is _SDPA:
            return self.route(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


@contextmanager
def _fused_attention(attention: str = "gpu") -> Iterator[None]:
    route = _ATTENTION_ROUTE[attention]
    torch.nn.functional.scaled_dot_product_attention = route
    try:
        with _FusedAttention(route):
            yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = _SDPA


@dataclass
class _Rec:
    func: str
    kind: OpKind
    phase: Phase
    name: str
    flops: float
    elems: float
    dims: tuple[int, ...]  # the shape numbers that may scale with the batch, in a fixed order per kind
    n: int = 0
    k: int = 0
    fp32: bool = False
    in_unit: bool = False
    causal: bool = False  # attention with a causal mask (its FLOPs counted half)
    host: bool = True  # dispatched by the framework (False: launched by a library, see library_kernels)


def _numel(xs: Any) -> int:
    flat, _ = tree_flatten(xs)
    return sum(t.numel() for t in flat if isinstance(t, torch.Tensor))


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, torch.Tensor) else ()


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves TorchDispatchMode unannotated
    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # as above
        self.recs: list[_Rec] = []
        self.phase = Phase.FORWARD
        self.scope: list[str] = []  # module path stack (forward only)
        self.unit_depth = 0
        self.paused = False  # the harness's own ops (loss targets) are not the model's

    def _name(self, func: Any) -> str:
        where = self.scope[-1] if self.scope and self.phase is Phase.FORWARD else ""
        where = re.sub(r"\.\d+(?=\.|$)", ".#", where)  # fold repeated layers
        op = str(func.overloadpacket).replace("aten::", "aten.")
        return f"{where}:{op}" if where else op

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func.overloadpacket
        if self.paused or getattr(func, "is_view", False) or packet in _NO_KERNEL:
            return out
        flops = 0.0
        if packet in flop_registry:
            flops = float(flop_registry[packet](*args, **kwargs, out_val=out))
        elems = float(_numel(args) + _numel(kwargs) + _numel(out))
        name = self._name(func)
        ph, iu = self.phase, self.unit_depth > 0
        first = len(self.recs)
        if packet in _GEMM:
            a, b = (args[1], args[2]) if packet in (aten.addmm, aten.baddbmm) else (args[0], args[1])
            if a.dim() == 3:  # bmm: (B, m, k) x (B, k, n)
                dims = (a.shape[0], a.shape[1], b.shape[2], a.shape[2])
            else:
                dims = (1, a.shape[0], b.shape[1], a.shape[1])
            self.recs.append(
                _Rec(name, OpKind.GEMM, name=name, flops=flops, elems=elems, dims=dims, phase=ph, in_unit=iu)
            )
        elif packet in _CONV:
            if packet is aten.convolution_backward:
                grad_out, inp, weight = args[0], args[1], args[2]
                mask = args[-1]
                w = tuple(weight.shape)
                groups = int(args[-2]) if isinstance(args[-2], int) else 1
                area = 1
                for d in w[2:]:
                    area *= d
                parts = [("dX", mask[0], w[1] * groups, w[0] * area // groups), ("dW", mask[1], w[0], w[1] * area)]
                live = [p for p in parts if p[1]]
                for label, _, n, k in live:
                    self.recs.append(
                        _Rec(
                            name,
                            OpKind.CONV,
                            name=f"{name}.{label}",
                            flops=flops / len(live),
                            elems=elems / len(live),
                            dims=(grad_out.shape[0],),
                            n=n,
                            k=k,
                            phase=ph,
                            in_unit=iu,
                        )
                    )
                if len(mask) > 2 and mask[2]:  # the bias gradient: a reduction
                    self.recs.append(
                        _Rec(
                            name,
                            OpKind.ELEMENTWISE,
                            name=f"{name}.dBias",
                            flops=0.0,
                            elems=float(grad_out.numel()),
                            dims=(),
                            phase=ph,
                            in_unit=iu,
                        )
                    )
            else:
                inp, weight = args[0], args[1]
                w = tuple(weight.shape)
                transposed = bool(args[6]) if len(args) > 6 else False
                area = 1
                for d in w[2:]:
                    area *= d
                n, k = (w[1], w[0] * area) if transposed else (w[0], w[1] * area)
                self.recs.append(
                    _Rec(
                        name,
                        OpKind.CONV,
                        name=name,
                        flops=flops,
                        elems=elems,
                        dims=(inp.shape[0],),
                        n=n,
                        k=k,
                        phase=ph,
                        in_unit=iu,
                    )
                )
        elif packet in _ATTENTION:
            q, key = args[0], args[1]
            causal = bool(
                kwargs.get(
                    "is_causal",
                    args[4] if packet in (aten._scaled_dot_product_flash_attention,) and len(args) > 4 else False,
                )
            )
            if "backward" in str(packet):
                causal = bool(kwargs.get("is_causal", False)) or any(a is True for a in args[6:])
            if causal:
                flops /= 2
            b, heads, s_q, d = q.shape
            self.recs.append(
                _Rec(
                    name,
                    OpKind.ATTENTION,
                    name=name,
                    flops=flops,
                    elems=elems,
                    dims=(b * heads * s_q,),
                    n=int(key.shape[-2]),
                    k=int(d),
                    phase=ph,
                    in_unit=iu,
                    causal=causal,
                )
            )
        elif packet in _EMBEDDING:
            self.recs.append(
                _Rec(name, OpKind.EMBEDDING, name=name, flops=flops, elems=elems, dims=(), phase=ph, in_unit=iu)
            )
        else:
            fp32 = bool(_FP32_LOSS.search(str(packet)))
            self.recs.append(
                _Rec(
                    name,
                    OpKind.ELEMENTWISE,
                    name=name,
                    flops=flops,
                    elems=elems,
                    dims=(),
                    fp32=fp32,
                    phase=ph,
                    in_unit=iu,
                )
            )
        if _LIBRARY[0]:
            for r in self.recs[first:]:
                r.host = False
        return out


def _output_tensor(out: Any, loss: str) -> torch.Tensor:
    """The tensor a step's loss is taken from: the output itself, the first of a tuple or list, or
    from a dict (Hugging Face's ModelOutput is one) its "loss" where the model returns its loss,
    else its "logits", else its first tensor. Anything else is one sentence, not a TypeError from
    deep inside torch."""
    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    elif isinstance(out, Mapping):
        keys = ("loss", "logits") if loss == "self" else ("logits", "last_hidden_state")
        picked = next((out[k] for k in keys if isinstance(out.get(k), torch.Tensor)), None)
        out = picked if picked is not None else next((v for v in out.values() if isinstance(v, torch.Tensor)), out)
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"the model's forward returned {type(out).__name__}; gpuselect needs a tensor, a tuple or list whose "
            "first item is one, or a dict (such as a Hugging Face ModelOutput) holding one"
        )
    return out


def _units(model: nn.Module) -> tuple[list[nn.Module], bool]:
    """The checkpoint units: the children of the longest ModuleList of alike blocks (the layers),
    else a Sequential's children."""
    lists = [
        m
        for m in model.modules()
        if isinstance(m, nn.ModuleList)
        and len(m) > 1
        and len({type(c) for c in m}) == 1
        and (list(m[0].children()) or isinstance(m[0], nn.RNNBase))
    ]
    if lists:
        best = max(lists, key=lambda m: (len(m), sum(p.numel() for p in m.parameters())))
        return list(best), True
    if isinstance(model, nn.Sequential):
        return list(model), False
    return [], True


class NotTrainableError(ValueError):
    """What the factory returned cannot be trained: not a module, or no weight to train (the trace
    failed inside torch with "'int' object has no attribute 'train'" or "element 0 of tensors does
    not require grad")."""


@dataclass
class _Run:
    recs: list[_Rec]
    saved: float  # float elements
    saved_bytes: float  # integer / bool bytes
    saved_outside: float  # float elements saved outside the checkpoint units
    saved_bytes_outside: float
    unit_saved: list[float] = field(default_factory=list)
    unit_saved_bytes: list[float] = field(default_factory=list)
    units_are_blocks: bool = True  # a ModuleList's blocks (else a Sequential's layers)
    unit_inputs: list[float] = field(default_factory=list)


def _step(
    factory: Callable[[], nn.Module],
    input_shape: tuple[int, ...],
    dtype: torch.dtype,
    batch: int,
    loss: str,
    attention: str = "gpu",
) -> tuple[_Run, int, int]:
    with torch.device("meta"):
        model = factory()
    if not isinstance(model, nn.Module):
        raise NotTrainableError(f"it returned {type(model).__name__}, not a torch.nn.Module")
    model.train()
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if not trainable:
        raise NotTrainableError("the model it returned has no trainable parameters, so there is nothing to train")
    param_storages = {p.untyped_storage()._cdata for p in model.parameters()}
    if dtype.is_floating_point:
        x = torch.empty((batch, *input_shape), dtype=dtype, device="meta")
    else:
        x = torch.zeros((batch, *input_shape), dtype=dtype, device="meta")
    rec = _Recorder()
    units, blocks = _units(model)
    unit_ids = {id(u): i for i, u in enumerate(units)}
    current_unit: list[int] = []
    seen: dict[int, tuple[float, bool, int]] = {}  # storage -> (size, is_float, unit or -1)
    unit_inputs = [0.0] * len(units)

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.device.type != "meta":
            return t
        st = t.untyped_storage()
        key = st._cdata
        if key in param_storages or key in seen:
            return t
        size = float(st.nbytes())
        fl = t.dtype.is_floating_point
        seen[key] = (size / t.element_size() if fl else size, fl, current_unit[-1] if current_unit else -1)
        return t

    handles = []
    for m_name, mod in model.named_modules():

        def pre(mod: nn.Module, inputs: Any, m_name: str = m_name) -> None:
            rec.scope.append(m_name)
            if id(mod) in unit_ids:
                current_unit.append(unit_ids[id(mod)])
                rec.unit_depth += 1
                unit_inputs[unit_ids[id(mod)]] += sum(
                    float(t.numel())
                    for t in tree_flatten(inputs)[0]
                    if isinstance(t, torch.Tensor) and t.dtype.is_floating_point
                )

        def post(mod: nn.Module, _inputs: Any, _output: Any) -> None:
            rec.scope.pop()
            if id(mod) in unit_ids:
                current_unit.pop()
                rec.unit_depth -= 1

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    try:
        with (
            torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
            _fused_attention(attention),
            _cudnn_rnn(),
            rec,
        ):
            out = _output_tensor(model(x), loss)
            rec.paused = True  # the labels come with the batch: not part of the step's work
            target = (
                torch.zeros(out.numel() // out.shape[-1], dtype=torch.long, device="meta")
                if loss == "ce"
                else torch.empty_like(out)
            )
            rec.paused = False
            if loss == "ce":
                value = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target)
            elif loss == "bce":
                value = torch.nn.functional.binary_cross_entropy_with_logits(out, target)
            elif loss == "mse":
                value = torch.nn.functional.mse_loss(out, target)
            else:  # the model returns its loss
                value = out.sum() if out.dim() else out
            rec.phase = Phase.BACKWARD
            value.backward()  # type: ignore[no-untyped-call]  # unannotated in torch
    finally:
        for h in handles:
            h.remove()
    rnn_scopes = {
        re.sub(r"\.\d+(?=\.|$)", ".#", m_name)
        for m_name, mod in model.named_modules()
        if isinstance(mod, (nn.RNNBase, nn.RNNCellBase))
    }
    run = _Run(
        recs=_fuse_rnn_cells(rec.recs, rnn_scopes),
        saved=0.0,
        saved_bytes=0.0,
        saved_outside=0.0,
        saved_bytes_outside=0.0,
        unit_saved=[0.0] * len(units),
        unit_saved_bytes=[0.0] * len(units),
        unit_inputs=unit_inputs,
        units_are_blocks=blocks,
    )
    for size, fl, unit in seen.values():
        if fl:
            run.saved += size
            if unit < 0:
                run.saved_outside += size
            else:
                run.unit_saved[unit] += size
        else:
            run.saved_bytes += size
            if unit < 0:
                run.saved_bytes_outside += size
            else:
                run.unit_saved_bytes[unit] += size
    return run, params, trainable


def _scope(name: str) -> str:
    return name.rsplit(":", 1)[0] if ":" in name else ""


def _fuse_rnn_cells(recs: list[_Rec], rnn_scopes: set[str]) -> list[_Rec]:
    """On a GPU an LSTM/GRU cell's gate arithmetic is one fused kernel each way (torch's
    _thnn_fused_lstm_cell / _thnn_fused_gru_cell for the cells, cuDNN's RNN kernels for nn.LSTM),
    where the meta device decomposes it into ~10 pointwise ops forward and ~14 backward
    (add_, unsafe_split, sigmoid_ x3, tanh_, mul x3, add_, tanh; mul, tanh_backward,
    sigmoid_backward x3, cat ...). Merged here into the kernels the GPU launches: a forward run of
    pointwise ops inside an RNN module, and a backward run of pointwise ops with a
    sigmoid_backward (the gates' gradient) in a model that has RNN modules. The fused kernel reads
    its inputs and writes its outputs once: its traffic is taken as its two largest constituent
    ops' (forward: the gates' add, 12 h per row, and split, 8 h, against the fused kernel's ~15 h;
    backward ~11 h against ~13 h)."""
    if not rnn_scopes:
        return recs
    out: list[_Rec] = []
    run: list[_Rec] = []

    def group(r: _Rec) -> tuple[Phase, bool] | None:
        if r.kind is not OpKind.ELEMENTWISE or r.fp32 or not r.host:  # a library's kernels are as it runs them
            return None
        if r.phase is Phase.FORWARD:
            return (r.phase, _scope(r.name) in rnn_scopes)
        return (r.phase, True)

    def flush() -> None:
        fusible = len(run) > 1 and (
            _scope(run[0].name) in rnn_scopes
            if run[0].phase is Phase.FORWARD
            else any(r.func.endswith("sigmoid_backward") for r in run)
        )
        if not fusible:
            out.extend(run)
        else:
            top = sorted((r.elems for r in run), reverse=True)[:2]
            first = run[0]
            label = "fused_rnn_cell" if first.phase is Phase.FORWARD else "fused_rnn_cell_backward"
            scope = _scope(first.name)
            out.append(
                replace(
                    first,
                    func=label,
                    name=f"{scope}:{label}" if scope else label,
                    flops=sum(r.flops for r in run),
                    elems=sum(top),
                )
            )
        run.clear()

    for r in recs:
        g = group(r)
        if g is None or (run and group(run[0]) != g):
            flush()
        if g is None:
            out.append(r)
        else:
            run.append(r)
    flush()
    return out


def _diff(v2: float, v4: float) -> tuple[float, float]:
    """(per sample, fixed) from the values at batch 2 and 4."""
    per = (v4 - v2) / 2.0
    fixed = v2 - 2.0 * per
    tol = 1e-9 * max(abs(v2), abs(v4), 1.0)
    return (per if abs(per) > tol else 0.0), (fixed if abs(fixed) > tol else 0.0)


def _to_op(a: _Rec, b: _Rec) -> Op:
    flops_ps, flops_fixed = _diff(a.flops, b.flops)
    elems_ps, elems_fixed = _diff(a.elems, b.elems)
    m_ps = 0.0
    n, k = a.n, a.k
    if a.kind is OpKind.GEMM:
        # (B, m, n, k): find the dimension that grows with the batch and make it the rows
        B, m, nn_, kk = a.dims  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
        B4, m4, n4, k4 = b.dims  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
        if B4 != B:
            m_ps, n, k = (B4 - B) / 2.0 * m, nn_, kk
        elif m4 != m:
            m_ps, n, k = (m4 - m) / 2.0 * B, nn_, kk
        elif n4 != nn_:
            m_ps, n, k = (n4 - nn_) / 2.0 * B, m, kk  # the transposed product: rows are columns
        elif k4 != kk:
            m_ps, n, k = (k4 - kk) / 2.0 * B, nn_, m  # a weight gradient: the reduction runs over samples
        else:
            m_ps, n, k = 0.0, nn_, kk
            flops_fixed, flops_ps = flops_ps + flops_fixed, 0.0
    elif a.kind in (OpKind.CONV, OpKind.ATTENTION):
        if a.kind is OpKind.ATTENTION:
            m_ps = (b.dims[0] - a.dims[0]) / 2.0
        elif n and k:
            m_ps = flops_ps / (2.0 * n * k)
    return Op(
        kind=a.kind,
        phase=a.phase,
        name=a.name,
        flops_per_sample=flops_ps,
        elems_per_sample=elems_ps,
        elems_fixed=elems_fixed,
        m_per_sample=m_ps,
        n=int(n),
        k=int(k),
        fp32_only=a.fp32,
        flops_fixed=flops_fixed,
        causal=a.causal,
        host_dispatch=a.host,
    )


def _fold(ops: list[Op]) -> list[Op]:
    """Identical ops (same everything but count) become one with their counts summed, in order."""
    folded: dict[Op, int] = {}
    for o in ops:
        key = replace(o, count=1)
        folded[key] = folded.get(key, 0) + o.count
    return [replace(o, count=c) for o, c in folded.items()]


def trace_module(
    factory: Callable[[], nn.Module],
    input_shape: tuple[int, ...],
    dtype: torch.dtype = torch.float32,
    *,
    loss: str = "ce",
    labels_per_sample: int = 1,
    source: str = "",
    attention: str = "gpu",
) -> tuple[StepTrace, StepTrace]:
    """The traced step of ``factory()`` on one sample of ``input_shape``: (plain, checkpointed).
    ``attention``: "gpu" traces SDPA as the fused GPU kernels; "cpu" as torch's CPU runs it
    (with dropout, the math path and its mask over the score matrix)."""
    r2, params, trainable = _step(factory, input_shape, dtype, 2, loss, attention)
    r4, _, _ = _step(factory, input_shape, dtype, 4, loss, attention)
    if len(r2.recs) != len(r4.recs) or any(a.func != b.func for a, b in zip(r2.recs, r4.recs, strict=True)):
        raise RuntimeError("the model runs different operators at batch 2 and 4; cannot separate per-sample work")
    ops = [_to_op(a, b) for a, b in zip(r2.recs, r4.recs, strict=True)]
    recompute = [
        replace(o, phase=Phase.RECOMPUTE)
        for o, a in zip(ops, r2.recs, strict=True)
        if a.phase is Phase.FORWARD and a.in_unit
    ]
    saved, _ = _diff(r2.saved, r4.saved)
    saved_b, _ = _diff(r2.saved_bytes, r4.saved_bytes)
    saved_ckpt, saved_b_ckpt = saved, saved_b
    if r2.unit_saved:
        # Checkpoint segments: each block of a ModuleList, or ~sqrt(n) runs of a Sequential's
        # layers (torch.utils.checkpoint_sequential). What stays: everything outside the units,
        # each segment's input, and the largest segment's own saved set while it is recomputed.
        n = len(r2.unit_saved)
        segs = n if r2.units_are_blocks else max(1, round(n**0.5))
        bounds = [round(i * n / segs) for i in range(segs + 1)]
        per = [_diff(a, b)[0] for a, b in zip(r2.unit_saved, r4.unit_saved, strict=True)]
        per_b = [_diff(a, b)[0] for a, b in zip(r2.unit_saved_bytes, r4.unit_saved_bytes, strict=True)]
        inputs = [_diff(a, b)[0] for a, b in zip(r2.unit_inputs, r4.unit_inputs, strict=True)]
        outside, _ = _diff(r2.saved_outside, r4.saved_outside)
        out_b, _ = _diff(r2.saved_bytes_outside, r4.saved_bytes_outside)
        largest = max(sum(per[lo:hi]) for lo, hi in itertools.pairwise(bounds))
        largest_b = max(sum(per_b[lo:hi]) for lo, hi in itertools.pairwise(bounds))
        saved_ckpt = min(saved, outside + sum(inputs[lo] for lo in bounds[:-1]) + largest)
        saved_b_ckpt = min(saved_b, out_b + largest_b)
    if saved_ckpt >= saved:
        recompute = []  # checkpointing these units would keep no less: nothing to recompute
    in_bytes = float(torch.empty((), dtype=dtype).element_size())
    for d in input_shape:
        in_bytes *= d
    plain = StepTrace(
        ops=tuple(_fold(ops)),
        params=int(params),
        trainable_params=int(trainable),
        input_bytes_per_sample=in_bytes + 8.0 * labels_per_sample,
        saved_elems_per_sample=saved,
        saved_elems_per_sample_ckpt=saved_ckpt,
        checkpointing=False,
        saved_bytes_per_sample=saved_b,
        saved_bytes_per_sample_ckpt=saved_b_ckpt,
        source=source or "meta-device trace (gpuselect/workloads/trace_build/meta.py)",
        notes=("traced in fp32: the loss ops are marked fp32_only; elements are precision-free",),
    )
    ckpt = replace(plain, ops=tuple(_fold(ops + recompute)), checkpointing=True)
    if not recompute:
        ckpt = replace(
            ckpt,
            notes=(
                *ckpt.notes,
                "no checkpoint units that would save memory: checkpointing recomputes and saves nothing here",
            ),
        )
    return plain, ckpt
