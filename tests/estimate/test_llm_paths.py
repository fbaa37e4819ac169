"""The LLM paths a constant-MFU rule gets wrong (issue 12): PEFT's eager adapter kernels, QLoRA's
dequantisation bytes and transient, fp8's casts and 16-bit GEMMs, offload over pinned PCIe."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.errors import DataError
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.estimate.memory import (
    MemoryOptions,
    dequant_transient_bytes,
    peak_memory,
    weight_storage_bytes,
)
from gpuselect.estimate.trace import DEQUANT_BYTES, Op, OpKind, Phase
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.traces import transformer_trace

LLAMA_8B = PRESETS["llama-8b-lora"].shape


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def _ops(t, name: str, phase: Phase | None = None) -> list[Op]:  # type: ignore[no-untyped-def]
    return [o for o in t.ops if o.name == name and (phase is None or o.phase is phase)]


def test_peft_adapters_run_dropout_weight_casts_and_scale_add_per_adapted_linear() -> None:
    """Per adapted linear and pass PEFT runs its own dropout over the input (2.5 elements per input
    element: read, write, 1-byte mask), casts its fp32 adapter weights to 16 bits under autocast
    (and their gradients back), two rank-r GEMMs, a scale and an add."""
    assert LLAMA_8B is not None
    s, f = LLAMA_8B.seq_len, LLAMA_8B.ffn
    t = transformer_trace(LLAMA_8B, mode="lora")
    L = LLAMA_8B.layers
    (drop,) = _ops(t, "layers.mlp.down.lora_dropout", Phase.FORWARD)
    assert drop.elems_per_sample * drop.count == pytest.approx(2.5 * s * f * L)
    (drop_b,) = _ops(t, "layers.mlp.down.lora_dropout.backward")
    assert drop_b.elems_per_sample * drop_b.count == pytest.approx(2.5 * s * f * L)
    (cast,) = _ops(t, "layers.attn.q.lora_weight_cast")
    assert cast.count == 2 * L and cast.elems_per_sample == 0 and cast.elems_fixed > 0  # per step, not per sample
    assert len(_ops(t, "layers.attn.q.lora_grad_cast")) == 1
    # every adapted linear: dropout + 2 casts + A + B + scale/add = 7 forward launches
    fwd = sum(o.count for o in t.ops if o.phase is Phase.FORWARD and o.name.startswith("layers.mlp.up.lora_"))
    assert fwd == 7 * L
    # the first layer's q/k/v adapters need no input gradient (frozen embeddings): their dropout
    # backward runs in the other layers only
    (q_drop_b,) = _ops(t, "layers.attn.q.lora_dropout.backward")
    assert q_drop_b.count == L - 1
    plain = transformer_trace(LLAMA_8B, mode="lora", lora_dropout=False)
    assert not [o for o in plain.ops if "lora_dropout" in o.name]
    assert t.launches_per_step() - plain.launches_per_step() == 7 * L * 2 - 3  # fwd + bwd, less layer 1's q/k/v
    # the adapters' eager kernels cost a real share of a LoRA step's memory-bound time at 2 x 2048
    # tokens (H100): all of them, dropout included, more than the adapters' GEMMs
    d = R.catalog_device(load_catalog().get("nvidia-h100-sxm5-80gb"))
    eager = sum(R.op_time(d, o, 2, "bf16")[0] for o in t.ops if ".lora_" in o.name and o.kind is not OpKind.GEMM)
    gemms = sum(R.op_time(d, o, 2, "bf16")[0] for o in t.ops if ".lora_" in o.name and o.kind is OpKind.GEMM)
    assert eager > gemms


def test_dequantisation_is_charged_the_fitted_bytes_per_weight_at_streaming_bandwidth(catalog) -> None:  # type: ignore[no-untyped-def]
    d = R.catalog_device(catalog.get("nvidia-rtx-4090"))
    op = Op(OpKind.DEQUANT, Phase.FORWARD, "w.dequant", elems_fixed=1e9)
    t, _c, t_m = R.op_time(d, op, 1, "bf16")
    per_weight = R.dequant_bytes(R.params())
    assert t_m == pytest.approx(1e9 * per_weight / (d.bandwidth_gbs * 1e9 * d.mem_eff))
    assert t == pytest.approx(t_m)
    # the kernel moves 0.5 B of codes + 4/64 B of absmax and writes 2 B per weight; bitsandbytes'
    # measured time inside LitGPT's steps is more than that traffic takes (fitted, steptime.json)
    assert DEQUANT_BYTES == 0.5 + 4 / 64 + 2.0
    assert R.params()["dequant"]["bytes_per_weight"] == per_weight > DEQUANT_BYTES
    # without a fitted value the model falls back to the traffic
    assert R.dequant_bytes(R.Params({k: v for k, v in R.params().doc.items() if k != "dequant"})) == DEQUANT_BYTES


def test_qlora_peak_holds_one_dequantised_linear() -> None:
    """bitsandbytes dequantises a linear's 4-bit weight into a 16-bit copy before its GEMM: the
    largest one (Llama 3.1 8B: the 4096 x 14336 MLP matrices) is alive at the peak."""
    w = PRESETS["llama-8b-qlora"]
    assert dequant_transient_bytes(w) == 2 * 4096 * 14336
    assert dequant_transient_bytes(PRESETS["llama-8b-lora"]) == 0.0
    o = MemoryOptions(checkpointing=True)
    stored = weight_storage_bytes(w)
    assert peak_memory(w, 1, o).weights == pytest.approx(stored + 2 * 4096 * 14336)
    # the 4-bit base (~7 B weights at 0.5159 B: NF4 with double quantisation, the default) with the
    # 16-bit embeddings and head (~1 B weights)
    assert stored == pytest.approx(6.98e9 * (0.5 + 1 / 64 + 4 / (64 * 256)) + 1.05e9 * 2, rel=0.02)
    assert weight_storage_bytes(w, quant="nf4") == pytest.approx(6.98e9 * (0.5 + 4 / 64) + 1.05e9 * 2, rel=0.02)


def test_fp8_keeps_the_output_layer_in_bf16_and_casts_each_operand_once(catalog) -> None:  # type: ignore[no-untyped-def]
    d = R.catalog_device(catalog.get("nvidia-h100-sxm5-80gb"))
    shape = PRESETS["llama-8b-full"].shape
    assert shape is not None
    ops = transformer_trace(shape).ops
    head = next(o for o in ops if o.name == "lm_head" and o.phase is Phase.FORWARD)
    assert not R.fp8_gemm(head) and R.fp8_cast_bytes(head, 2, "fp8") == 0
    assert R.op_time(d, head, 2, "fp8")[0] == pytest.approx(R.op_time(d, head, 2, "bf16")[0])
    up = next(o for o in ops if o.name == "layers.mlp.up" and o.phase is Phase.FORWARD)
    dx = next(o for o in ops if o.name == "layers.mlp.up.dX")
    m, k, n = up.m_per_sample, up.k, up.n
    # forward: amax (2 B) + cast/transpose (4 B) of the input and of the weight
    assert R.fp8_cast_bytes(up, 2, "fp8") == pytest.approx(6.0 * (2 * m * k + n * k))
    # input gradient: the output gradient only (the weight's transposed fp8 copy exists)
    assert R.fp8_cast_bytes(dx, 2, "fp8") == pytest.approx(6.0 * 2 * dx.m_per_sample * dx.k)
    assert len(R.fp8_cast_kernels(up, "fp8")) == 4 and len(R.fp8_cast_kernels(dx, "fp8")) == 2
    lora = transformer_trace(PRESETS["llama-8b-lora"].shape, mode="lora").ops  # type: ignore[arg-type]
    adapter = next(o for o in lora if o.name == "layers.attn.q.lora_A")
    assert not R.fp8_gemm(adapter)
    # the compiled loop (what estimates use) agrees with op_time on every op of an fp8 step
    for trace_ops in (ops, lora):
        compiled = R.compile_ops(d, trace_ops, "fp8")
        total = R.device_time(d, compiled, 2)[0]
        assert total == pytest.approx(sum(R.op_time(d, o, 2, "fp8")[0] for o in trace_ops), rel=1e-9)


def test_offload_copies_the_stored_weights_over_pinned_pcie(catalog) -> None:  # type: ignore[no-untyped-def]
    """Parameter offload copies each GPU's shard of the weights *as stored* up for the forward and
    again for the backward: QLoRA's 4-bit base, not 16-bit weights; pinned copies at 0.84 of the
    link (our H100's measured 54 GB/s of PCIe 5.0's 64)."""
    e = catalog.get("nvidia-rtx-4090")
    d = A.device_for(e)
    w = PRESETS["llama-70b-qlora"]
    pcie, _cpu = A.offload_seconds(w, d, "params", "adamw", shards=2, gpus_on_host=2, pcie_gbs=32.0)
    moved = w.trainable_params * 4.0 / 2 + 2 * weight_storage_bytes(w) / 2
    assert pcie == pytest.approx(moved / (32.0 * 0.84e9))
    assert weight_storage_bytes(w) < 0.65 * w.params  # ~0.56 B per weight with 16-bit embeddings/head
    one = PRESETS["llama-1b-full"]
    pcie1, _ = A.offload_seconds(one, d, "optimizer", "adamw", pcie_gbs=32.0)
    assert pcie1 == pytest.approx(one.trainable_params * 4.0 / (32.0 * 0.84e9))


def test_70b_qlora_on_two_24gb_cards_with_parameter_offload_gives_a_compute_bound_step(catalog) -> None:  # type: ignore[no-untyped-def]
    """FSDP + QLoRA + parameter offload on two RTX 4090s: it fits, and the step is the GPUs'
    compute (forward, recompute, input gradients of ~70 B weights) plus PCIe traffic well below it."""
    a = A.Assumptions(counts=(2,), sharding="fsdp", offload="params")
    r = A.estimate(PRESETS["llama-70b-qlora"], a, catalog, gpu_ids=["nvidia-rtx-4090"], local=[]).rows[0]
    assert r.fits and r.parallelism == "fsdp"
    bd = r.time_breakdown_s
    assert bd["offload"] < 0.2 * bd["compute"]
    e = catalog.get("nvidia-rtx-4090")
    tokens = r.batch_size * PRESETS["llama-70b-qlora"].seq_len
    floor = 3 * 2 * 70e9 * tokens / (e.tflops("bf16") * 1e12)  # three passes at the spec peak
    step = 2 * tokens / r.tokens_per_s
    assert floor < step < 4 * floor


def test_left_to_choose_checkpointing_takes_the_faster_of_none_and_full(catalog) -> None:  # type: ignore[no-untyped-def]
    """Llama 3.1 8B full on eight RTX A6000s over PCIe: without checkpointing only batch 1 fits,
    and the step waits on FSDP's gathers; checkpointed, batch 8 fits and spreads them. The
    default takes whichever trains faster, and says which it took; where checkpointing is slower
    (H100s at batch 2, compute-bound) it keeps none."""
    w = PRESETS["llama-8b-full"]

    def row(gid: str, n: int, ck: str | None):  # type: ignore[no-untyped-def]
        a = A.Assumptions(counts=(n,), checkpointing=ck)
        return A.estimate(w, a, catalog, gpu_ids=[gid], local=[]).rows[0]

    for gid, n, want in (("nvidia-rtx-a6000", 8, "full"), ("nvidia-h100-sxm5-80gb", 4, "none")):
        auto, none, full = row(gid, n, None), row(gid, n, "none"), row(gid, n, "full")
        assert none.fits and full.fits and full.batch_size > none.batch_size
        assert auto.checkpointing == want
        assert auto.tokens_per_s == pytest.approx(max(none.tokens_per_s, full.tokens_per_s))
        assert auto.batch_size == (full if want == "full" else none).batch_size
    assert row("nvidia-rtx-a6000", 8, "full").tokens_per_s > 1.5 * row("nvidia-rtx-a6000", 8, "none").tokens_per_s


@pytest.mark.parametrize(
    ("workload", "gid", "n"),
    [
        ("llama-1b-full", "nvidia-v100-pcie-32gb", 8),  # auto: batch 4 unchecked, FSDP
        ("llama-1b-full", "nvidia-rtx-5090", 2),  # auto: batch 3 checkpointed, DDP
        ("qwen3-30b-a3b-lora", "nvidia-h100-sxm5-80gb", 16),  # auto: batch 1 unchecked, 5.5x slower
    ],
)
def test_left_to_choose_a_sharded_row_weighs_checkpointing_s_larger_batch_too(
    catalog,  # type: ignore[no-untyped-def]
    workload: str,
    gid: str,
    n: int,
    tmp_path: Path,
) -> None:
    """Where FSDP lets the state fit unchecked only at a small batch, the choice between sharding
    and not weighed that small batch alone: the default row trained slower than the same GPUs with
    --checkpointing full (16 H100 on Qwen3-30B-A3B's LoRA: 3,323 tokens/s against 18,225, and auto
    precision then said fp32 was faster than bf16)."""
    import json

    from gpuselect.types import Mode
    from gpuselect.workloads.transformer import workload_from_hf_config

    if workload in PRESETS:
        w = PRESETS[workload]
    else:
        cfg = tmp_path / "config.json"
        cfg.write_text(
            json.dumps(
                {
                    "model_type": "qwen3_moe",
                    "vocab_size": 151936,
                    "hidden_size": 2048,
                    "intermediate_size": 6144,
                    "moe_intermediate_size": 768,
                    "num_hidden_layers": 48,
                    "num_attention_heads": 32,
                    "num_key_value_heads": 4,
                    "head_dim": 128,
                    "max_position_embeddings": 40960,
                    "tie_word_embeddings": False,
                    "num_experts": 128,
                    "num_experts_per_tok": 8,
                }
            )
        )
        w = workload_from_hf_config(cfg, mode=Mode.LORA)

    def row(ck: str | None) -> A.EstimateRow:
        return A.estimate(w, A.Assumptions(counts=(n,), checkpointing=ck), catalog, gpu_ids=[gid], local=[]).rows[0]

    auto, full, none = row(None), row("full"), row("none")
    assert auto.fits and full.fits and none.fits
    assert auto.tokens_per_s >= max(full.tokens_per_s, none.tokens_per_s) * 0.999


def test_nvlink_bridges_join_pairs_of_3090s_and_a6000s_and_4090s_stage_through_host(catalog) -> None:  # type: ignore[no-untyped-def]
    """RTX 3090 and RTX A6000 pairs take their NVLink bridge (112.5 GB/s); four of them, PCIe. The
    RTX 4090 has neither a bridge nor PCIe peer-to-peer: NCCL stages through host memory."""
    from gpuselect.estimate import parallel as P

    cp = P.CommParams()
    for gid in ("nvidia-rtx-3090", "nvidia-rtx-a6000"):
        e = catalog.get(gid)
        two, basis = P.link_bandwidth(e, 2, 8, None, cp)
        assert two == pytest.approx(112.5 / 2 * cp.efficiency) and "bridged pair" in basis
        four, basis4 = P.link_bandwidth(e, 4, 8, None, cp)
        assert four < two and basis4.startswith("PCIe 4.0")
    bw, basis = P.link_bandwidth(catalog.get("nvidia-rtx-4090"), 2, 8, None, cp)
    assert "through host memory" in basis and bw == pytest.approx(32 * cp.pcie_p2p_efficiency * cp.efficiency * 0.5)


def test_offloaded_gradients_go_down_during_the_backward(catalog) -> None:  # type: ignore[no-untyped-def]
    """ZeRO-Offload and FSDP's CPU offload copy each bucket's / unit's gradients to the host as the
    backward produces them: only what exceeds the backward is exposed; the updated weights' copy up
    and the CPU's update are not overlapped."""
    e = catalog.get("nvidia-rtx-4090")
    d = A.device_for(e)
    w = PRESETS["llama-1b-full"]
    base = A.predict_step(w, d, e, 1, "bf16")[0]
    opt = A.predict_step(w, d, e, 1, "bf16", offload="optimizer")[0]
    assert 0 < base.backward_s < base.device_s
    down, up = A.offload_bytes(w, "optimizer")
    assert down == up == pytest.approx(w.trainable_params * 2.0)
    link = 32.0 * 0.84e9  # PCIe 4.0 x16, pinned
    _pcie, cpu = A.offload_seconds(w, d, "optimizer", "adamw", pcie_gbs=32.0)
    exposed_down = max(0.0, down / link - base.backward_s)
    assert opt.breakdown["offload"] == pytest.approx(exposed_down + up / link + cpu)
    assert exposed_down < down / link  # some of the gradients' copy is hidden
    # in place of the GPU's update, which no longer runs (the device bounds this step); DeepSpeed
    # holds the module in 16 bits, so autocast's per-use weight casts go too
    from gpuselect.estimate.perf import step_time

    ds = step_time(A.trace_cached(w, False), d, 1, "bf16", sharded_weights=True)
    assert ds.launches < base.launches and ds.device_s > ds.host_s and opt.breakdown["optimizer"] == 0
    assert opt.seconds == pytest.approx(ds.seconds - ds.breakdown["optimizer"] + opt.breakdown["offload"])


def test_offloaded_gradients_do_not_hide_where_the_collectives_share_the_pcie_link(catalog) -> None:  # type: ignore[no-untyped-def]
    e = catalog.get("nvidia-rtx-4090")  # 4 cards: PCIe (through host memory), the collectives' link too
    d = A.device_for(e)
    w = PRESETS["llama-1b-full"]
    base = A.predict_step(w, d, e, 1, "bf16", count=4, sharding="fsdp")[0]
    opt = A.predict_step(w, d, e, 1, "bf16", count=4, sharding="fsdp", offload="optimizer")[0]
    pcie, cpu = A.offload_seconds(w, d, "optimizer", "adamw", shards=4, gpus_on_host=4, pcie_gbs=32.0)
    assert opt.breakdown["offload"] == pytest.approx(pcie + cpu)
    assert opt.breakdown["optimizer"] == 0 < base.breakdown["optimizer"]  # the CPU's update replaces the GPU's


@pytest.mark.parametrize("bad", ["8", -1.0, 0, float("nan"), True, None])
def test_a_corrupt_dequant_parameter_is_one_clear_sentence(bad: object) -> None:
    doc = {**R.params().doc, "dequant": {"bytes_per_weight": bad}}
    with pytest.raises(DataError, match=r"dequant\.bytes_per_weight"):
        R.dequant_bytes(R.Params(doc))


def test_a_box_slower_than_one_of_its_cards_says_why() -> None:
    catalog = load_catalog(use_overlay=False)
    rows = A.estimate(
        PRESETS["lstm-lm"], A.Assumptions(), catalog, gpu_ids=["nvidia-rtx-4090", "nvidia-h100-sxm5-80gb"]
    ).rows
    one = {r.gpu_id: r.throughput_samples_per_s for r in rows if r.count == 1}
    multi = [r for r in rows if r.count > 1 and r.fits]
    slower = [r for r in multi if r.throughput_samples_per_s < one[r.gpu_id]]
    assert slower  # the LSTM's small step over PCIe: two RTX 4090s train it slower than one
    for r in multi:
        assert ("slower than one of these GPUs" in (r.note or "")) == (r in slower)
