"""LLM-specific step physics (issue 12): eager vs fused attention, fp8 training, the sharded
optimizer step, PCIe without peer-to-peer, offload, and where llama-70b-full lands."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import parallel as P
from gpuselect.estimate import roofline as R
from gpuselect.estimate.memory import GB
from gpuselect.estimate.trace import OpKind, Phase
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.traces import transformer_trace


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def test_compiled_loop_agrees_with_op_time_for_fp8_and_eager_attention(catalog) -> None:  # type: ignore[no-untyped-def]
    d = R.catalog_device(catalog.get("nvidia-h100-sxm5-80gb"))
    bert = PRESETS["bert_large_squad"].shape
    assert bert is not None
    for shape in (bert, replace(bert, attention="eager")):
        ops = transformer_trace(shape).ops
        for prec in ("bf16", "fp8"):
            for b in (1, 6):
                slow = sum(R.op_time(d, op, b, prec)[0] for op in ops)
                fast = R.device_time(d, R.compile_ops(d, ops, prec), b)[0]
                assert fast == pytest.approx(slow, rel=1e-9)


def test_eager_attention_materialises_the_score_matrix() -> None:
    shape = PRESETS["bert_large_squad"].shape
    assert shape is not None
    fused, eager = transformer_trace(shape), transformer_trace(replace(shape, attention="eager"))
    assert not any(o.kind is OpKind.ATTENTION for o in eager.ops)
    assert any(o.kind is OpKind.ATTENTION for o in fused.ops)
    s, heads, layers = shape.seq_len, shape.heads, shape.layers
    scores = [o for o in eager.ops if o.name == "layers.attn.scores"]
    assert scores and scores[0].count == layers and scores[0].k == shape.hidden // heads
    softmax = next(o for o in eager.ops if o.name == "layers.attn.softmax" and o.phase is Phase.FORWARD)
    assert softmax.elems_per_sample * softmax.count == pytest.approx(2 * heads * s * s * layers)
    # The probabilities (and their dropout) are kept for the backward: more saved than fused.
    assert eager.saved_elems_per_sample >= fused.saved_elems_per_sample + 2 * heads * s * s * layers
    assert "eager attention" in eager.source and "fused attention" in fused.source


def test_eager_attention_is_slower_than_fused(catalog) -> None:  # type: ignore[no-untyped-def]
    e = catalog.get("nvidia-a100-sxm4-80gb")
    d = A.device_for(e)
    w = PRESETS["bert_large_squad"]
    assert w.shape is not None
    eager = replace(w, shape=replace(w.shape, attention="eager"))
    t_f = A.predict_step(w, d, e, 8, "fp16")[0].seconds
    t_e = A.predict_step(eager, d, e, 8, "fp16")[0].seconds
    assert 1.05 * t_f < t_e < 2.0 * t_f


def test_fp8_runs_attention_in_bf16_and_pays_the_casts(catalog) -> None:  # type: ignore[no-untyped-def]
    d = R.catalog_device(catalog.get("nvidia-h100-sxm5-80gb"))
    shape = PRESETS["llama-8b-full"].shape
    assert shape is not None
    ops = transformer_trace(shape).ops
    att = next(o for o in ops if o.kind is OpKind.ATTENTION)
    assert R.op_time(d, att, 2, "fp8")[0] == pytest.approx(R.op_time(d, att, 2, "bf16")[0])
    up = next(o for o in ops if o.name == "layers.mlp.up" and o.phase is Phase.FORWARD)
    dw = next(o for o in ops if o.name == "layers.mlp.up.dW")
    assert R.fp8_cast_bytes(up, 2, "fp8") > 0 and R.fp8_cast_bytes(up, 2, "bf16") == 0
    assert R.fp8_cast_bytes(dw, 2, "fp8") == 0  # reuses the forward's fp8 copies
    t8, t16 = R.op_time(d, up, 2, "fp8")[0], R.op_time(d, up, 2, "bf16")[0]
    assert 0.5 * t16 < t8 < t16  # twice the peak, less the quantisation kernel


def test_fsdp_shards_the_optimizer_step(catalog) -> None:  # type: ignore[no-untyped-def]
    e = catalog.get("nvidia-h100-sxm5-80gb")
    d = A.device_for(e)
    w = PRESETS["llama-8b-full"]
    one = A.predict_step(w, d, e, 1, "bf16")[0].breakdown["optimizer"]
    eight = A.predict_step(w, d, e, 1, "bf16", count=8, sharding="fsdp")[0].breakdown["optimizer"]
    ddp = A.predict_step(w, d, e, 1, "bf16", count=8)[0].breakdown["optimizer"]
    assert ddp == pytest.approx(one)
    assert eight == pytest.approx(one / 8, rel=0.05)  # the launches' floors are not sharded


def test_geforce_without_peer_to_peer_goes_through_host_memory(catalog) -> None:  # type: ignore[no-untyped-def]
    cp = P.CommParams()
    gf, ws = catalog.get("nvidia-rtx-4090"), catalog.get("nvidia-rtx-6000-ada")  # both Ada, PCIe 4.0
    assert not P.peer_to_peer(gf) and P.peer_to_peer(ws)
    bw_gf, name_gf = P.link_bandwidth(gf, 4, 8, 25.0, cp)
    bw_ws, name_ws = P.link_bandwidth(ws, 4, 8, 25.0, cp)
    assert bw_gf == pytest.approx(cp.host_staged_factor * bw_ws)
    assert "host memory" in name_gf and "host memory" not in name_ws
    # ... and it costs step time: full fine-tuning's FSDP traffic over 4 GeForce cards.
    w = PRESETS["llama-1b-full"]
    steps = {}
    for g in (gf, ws):
        st, par = A.predict_step(w, A.device_for(g), g, 1, "bf16", count=4, sharding="fsdp")
        assert par == "fsdp"
        steps[g.id] = st.breakdown["communication"]
    assert steps["nvidia-rtx-4090"] > 1.5 * steps["nvidia-rtx-6000-ada"]


def test_offload_is_in_the_step_time(catalog) -> None:  # type: ignore[no-untyped-def]
    e = catalog.get("nvidia-rtx-4090")
    d = A.device_for(e)
    w = PRESETS["llama-1b-full"]
    base = A.predict_step(w, d, e, 1, "bf16")[0]
    opt = A.predict_step(w, d, e, 1, "bf16", offload="optimizer")[0]
    par = A.predict_step(w, d, e, 1, "bf16", offload="params")[0]
    assert base.seconds < opt.seconds < par.seconds
    pcie, cpu = A.offload_seconds(w, d, "optimizer", "adamw", pcie_gbs=32.0)  # PCIe 4.0 x16 per direction
    # the gradients' copies down hide behind the backward (tests/estimate/test_llm_paths.py)
    down = w.trainable_params * 2.0 / (32.0 * 0.84e9)
    hidden = min(down, base.backward_s)
    assert opt.breakdown["offload"] == pytest.approx(pcie - hidden + cpu)
    # Over 4 GPUs each moves its quarter; the one host still updates every parameter once, and the
    # four ranks' copies share its memory: each gets a quarter of it where that is below its link.
    pcie4, cpu4 = A.offload_seconds(w, d, "optimizer", "adamw", shards=4, gpus_on_host=4, pcie_gbs=32.0)
    assert cpu4 == pytest.approx(cpu)
    assert A.HOST_OPTIMIZER_GBS / 4 < 32.0 * A.PINNED_FRACTION_OF_PCIE
    assert pcie4 == pytest.approx(w.trainable_params * 4.0 / 4 / (A.HOST_OPTIMIZER_GBS / 4 * 1e9))
    pcie2, _ = A.offload_seconds(w, d, "optimizer", "adamw", shards=2, gpus_on_host=2, pcie_gbs=32.0)
    assert pcie2 == pytest.approx(pcie / 2)  # 40 GB/s each: the link is the narrower


def test_optimizer_offload_is_one_zero_offload_row_whatever_the_sharding_says(catalog) -> None:  # type: ignore[no-untyped-def]
    """--offload optimizer is ZeRO-Offload (review 15, finding 2): its memory partitions the host's
    state over the ranks whatever --sharding says of none/zero2, and so must its time. Before, with
    --sharding none each rank's GPU update (which offload replaces) was the whole model's, so the
    rows' breakdowns differed by 0.18 s of 'optimizer' against 'offload'."""
    from gpuselect.estimate.api import Assumptions

    w = PRESETS["llama-8b-full"]
    rows = {
        s: A.estimate(
            w,
            Assumptions(counts=(8,), offload="optimizer", sharding=s, batch_size=4),
            catalog,
            gpu_ids=["nvidia-a100-pcie-40gb"],
            local=[],
        ).rows[0]
        for s in ("none", "zero1", "zero2")
    }
    none, zero2 = rows["none"], rows["zero2"]
    for f in ("peak_memory_gb", "max_batch", "throughput_samples_per_s", "time_breakdown_s", "bound", "parallelism"):
        assert getattr(none, f) == getattr(zero2, f), f
    # stage 1 keeps every 16-bit gradient (more memory), but steps the same
    assert rows["zero1"].time_breakdown_s == none.time_breakdown_s
    # Per rank, from first principles: an A100 PCIe box's collectives share the PCIe links, so none
    # of the copies hides; the 8 ranks' 2 + 2 bytes per parameter / 8 pass through the host's memory
    # (80 GB/s, below 8 links' 27 GB/s each), and its CPU updates 8 shards of P/8: 30 bytes each.
    p = w.trainable_params
    assert "optimizer" not in none.time_breakdown_s  # the GPU no longer updates
    assert none.time_breakdown_s["offload"] == pytest.approx((p * 4.0 + p * 30.0) / 80e9, rel=1e-5)


def test_offload_saves_no_gpu_update_that_the_host_already_hid(catalog) -> None:  # type: ignore[no-untyped-def]
    """Where the host's dispatch bounds the step, removing the GPU's update shortens nothing: the
    offload's copies and CPU update are added whole, and the breakdown still sums to the step."""
    from gpuselect.estimate.perf import StepTime

    e = catalog.get("nvidia-rtx-4090")
    d = A.device_for(e)
    w = PRESETS["llama-1b-full"]
    bd = {"compute": 0.6, "memory": 0.2, "kernel_floor": 0.0, "optimizer": 0.1, "host": 0.3, "copy": 0.0}
    st = StepTime(1.2, bd, "overhead", device_s=0.9, host_s=1.2, launches=1, backward_s=0.4)
    off = A._with_offload(st, w, d, "optimizer", "adamw", shards=1, count=1, a=A.Assumptions(), pcie_gbs=32.0)
    pcie, cpu = A.offload_seconds(w, d, "optimizer", "adamw", pcie_gbs=32.0)
    hidden = min(w.trainable_params * 2.0 / (32.0 * 0.84e9), st.backward_s)
    assert off.seconds == pytest.approx(1.2 + pcie - hidden + cpu)
    assert off.breakdown["optimizer"] == 0 and off.breakdown["host"] == pytest.approx(0.4)
    assert sum(off.breakdown.values()) == pytest.approx(off.seconds)
    # device-bound, the update's time is saved
    st2 = StepTime(
        1.2, {**bd, "host": 0.0, "compute": 0.9}, "compute", device_s=1.2, host_s=0.5, launches=1, backward_s=0.4
    )
    off2 = A._with_offload(st2, w, d, "optimizer", "adamw", shards=1, count=1, a=A.Assumptions(), pcie_gbs=32.0)
    assert off2.seconds == pytest.approx(1.1 + pcie - hidden + cpu)
    assert sum(off2.breakdown.values()) == pytest.approx(off2.seconds)


def test_llama_70b_full_stage_follows_memory_and_deadline(catalog) -> None:  # type: ignore[no-untyped-def]
    """8 GPUs of >= 180 GB hold 70B full fine-tuning (AdamW, mixed precision, FSDP): the state alone
    is >= 16 bytes/parameter / 8 = 131 GiB per GPU; so with the default 72 h the answer is one box
    (stage 3). Only a deadline no box of 8 meets sends it to a cluster (stage 4)."""
    w = PRESETS["llama-70b-full"]
    res = A.estimate(w, A.Assumptions(), catalog, local=[])
    rec = res.recommendation
    assert rec.stage == 3 and rec.option is not None and rec.option["count"] == 8
    chosen = next(r for r in res.rows if r.gpu_id == rec.option["gpu_id"] and r.count == 8)
    assert chosen.fits and chosen.parallelism == "fsdp" and chosen.vram_gb is not None
    assert chosen.peak_memory_gb is not None and chosen.peak_memory_gb <= chosen.vram_gb
    state = sum(chosen.memory_breakdown_gb[k] for k in ("weights", "gradients", "optimizer"))
    assert state * GB >= 16 * w.params / 8
    # No 80 GB card holds it in one box; a 192 GB one does.
    by = {(r.gpu_id, r.count): r for r in res.rows}
    assert not by[("nvidia-h100-sxm5-80gb", 8)].fits and by[("amd-mi300x", 8)].fits
    best_box = min(r.total_time_h for r in res.rows if r.fits and r.count <= 8 and r.total_time_h)
    tight = A.estimate(w, A.Assumptions(deadline_hours=0.5 * best_box), catalog, local=[])
    assert tight.recommendation.stage == 4 and tight.recommendation.deadline_met
    assert tight.recommendation.option is not None and tight.recommendation.option["count"] > 8


def test_a_card_no_box_of_which_holds_the_model_is_tried_over_nodes(catalog) -> None:  # type: ignore[no-untyped-def]
    """'How many H100s for 70B full fine-tuning?' has an answer although 8 MI300X would do: each
    datacenter card none of whose boxes holds the model is tried at 16, 32, ... GPUs, and stops at
    the first count that holds it in time; a card whose box holds it is not."""
    w = PRESETS["llama-70b-full"]
    res = A.estimate(w, A.Assumptions(), catalog, local=[])
    h100 = sorted((r for r in res.rows if r.gpu_id == "nvidia-h100-sxm5-80gb"), key=lambda r: r.count)
    big = [r for r in h100 if r.count > 8]
    assert big and big[-1].fits and big[-1].meets_deadline
    assert all(not (r.fits and r.meets_deadline) for r in h100[:-1])
    assert not any(r.gpu_id == "amd-mi300x" and r.count > 8 for r in res.rows)  # its box of 8 works
    # A card whose box holds the model but is slow is not made a cluster while another box meets
    # the deadline (no 32x K80 for an 8B QLoRA run).
    small = A.estimate(PRESETS["llama-8b-qlora"], A.Assumptions(), catalog, local=[])
    assert any(r.fits and r.meets_deadline for r in small.rows)
    holds = {r.gpu_id for r in small.rows if r.fits and r.count <= 8}
    assert len(holds) > 20
    assert not any(r.count > 8 and r.gpu_id in holds for r in small.rows)
    assert small.recommendation.per_stage["4"] is None
    assert res.recommendation.per_stage["4"] is not None  # the chart's cluster bar
    # Between nodes: the card's reference node (DGX H100: 8x 400 Gb/s) unless the user names a figure.
    n = big[-1].count
    assert big[-1].link_basis is not None and "400 GB/s per node (the card's reference node)" in big[-1].link_basis
    slow = A.estimate(
        w, A.Assumptions(network_gbs=25.0, counts=(n,)), catalog, gpu_ids=["nvidia-h100-sxm5-80gb"], local=[]
    )
    row = slow.rows[0]
    assert row.link_basis is not None and "25 GB/s per node" in row.link_basis and "reference" not in row.link_basis
    assert row.total_time_h is not None and big[-1].total_time_h is not None
    assert row.total_time_h > 1.5 * big[-1].total_time_h


def test_reference_node_network(catalog) -> None:  # type: ignore[no-untyped-def]
    got = {
        g: P.reference_network_gbs(catalog.get(g))
        for g in (
            "nvidia-a100-sxm4-80gb",
            "nvidia-h100-sxm5-80gb",
            "nvidia-b300",
            "amd-mi300x",
            "nvidia-l40s",
            "nvidia-h100-pcie-80gb",
        )
    }
    assert got == {
        "nvidia-a100-sxm4-80gb": 200.0,
        "nvidia-h100-sxm5-80gb": 400.0,
        "nvidia-b300": 800.0,
        "amd-mi300x": 400.0,
        "nvidia-l40s": 25.0,
        "nvidia-h100-pcie-80gb": 25.0,
    }


def _attention_rate(d: R.DeviceModel, seq: int, head_dim: int, causal: bool) -> float:
    """TFLOP/s of one fused attention forward at 16k tokens (the FlashAttention-2 charts' setup)."""
    from gpuselect.estimate.trace import Op

    heads = 2048 // head_dim
    batch = 16384 // seq
    op = Op(
        OpKind.ATTENTION,
        Phase.FORWARD,
        "sdpa",
        flops_per_sample=4.0 * seq * seq * 2048 * (0.5 if causal else 1.0),
        m_per_sample=seq * heads,
        n=seq,
        k=head_dim,
        causal=causal,
    )
    t = R.op_time(d, op, batch, "bf16")[0]
    return op.flops_per_sample * batch / t / 1e12


def test_attention_rate_follows_head_dim_and_causal_blocks(catalog) -> None:  # type: ignore[no-untyped-def]
    """The FlashAttention-2 charts: head dim 64 runs ~13 % below 128 (per-score-element softmax work
    against per-element MACs); a causal mask costs most at short sequences (the diagonal blocks run
    in full while half their FLOPs count), little at 16k."""
    d = R.catalog_device(catalog.get("nvidia-h100-sxm5-80gb"))
    for causal in (False, True):
        ratio = _attention_rate(d, 16384, 64, causal) / _attention_rate(d, 16384, 128, causal)
        assert 0.8 < ratio < 0.95  # charts: 296/338 = 0.88 (non-causal), 284/328 = 0.87 (causal)
    short = _attention_rate(d, 512, 128, True) / _attention_rate(d, 512, 128, False)
    long = _attention_rate(d, 16384, 128, True) / _attention_rate(d, 16384, 128, False)
    assert 0.5 < short < 0.75  # charts: 163/248 = 0.66
    assert 0.92 < long <= 1.0  # charts: 328/338 = 0.97
    # causal attention in a Llama trace is marked so; BERT's is not
    llama, bert = PRESETS["llama-8b-lora"].shape, PRESETS["bert_large_squad"].shape
    assert llama is not None and bert is not None
    assert all(o.causal for o in transformer_trace(llama).ops if o.kind is OpKind.ATTENTION)
    assert not any(o.causal for o in transformer_trace(bert).ops if o.kind is OpKind.ATTENTION)
    from gpuselect.workloads.traces import trace_from_dict, trace_to_dict

    t = transformer_trace(llama)
    assert trace_from_dict(trace_to_dict(t)).ops == t.ops  # the flag survives a shipped trace's round trip
    # the meta tracer marks SDPA called with is_causal (GPT-2's shipped trace), not BERT's
    from gpuselect.workloads.traces import shipped_trace

    for wid, causal in (("gpt2-124m", True), ("bert_base_squad", False)):
        shipped = shipped_trace(wid)
        assert shipped is not None
        att = [o for o in shipped.ops if o.kind is OpKind.ATTENTION]
        assert att and all(o.causal is causal for o in att)


def test_qlora_costs_lora_plus_the_dequantisation_traffic(catalog) -> None:  # type: ignore[no-untyped-def]
    """bitsandbytes NF4 dequantises every quantised weight to 16 bits once per forward and once per
    backward (and once more in the recompute), a streaming kernel charged the fitted bytes per weight
    (``dequant.bytes_per_weight``), after double quantisation's two small absmax kernels. QLoRA's
    step is LoRA's plus that at the streaming bandwidth and those kernels at the kernel floor."""
    for gpu in ("nvidia-h100-sxm5-80gb", "nvidia-rtx-4090"):
        e = catalog.get(gpu)
        d = A.device_for(e)
        for ckpt in (False, True):
            lora = A.predict_step(PRESETS["llama-8b-lora"], d, e, 2, "bf16", checkpointing=ckpt)[0]
            qlora = A.predict_step(PRESETS["llama-8b-qlora"], d, e, 2, "bf16", checkpointing=ckpt)[0]
            trace = A.trace_cached(PRESETS["llama-8b-qlora"], ckpt)
            weights = sum(o.elems_fixed * o.count for o in trace.ops if o.kind is OpKind.DEQUANT)
            # forward + backward (+ recompute) passes over the ~7 B quantised linear weights
            assert weights == pytest.approx((3 if ckpt else 2) * 6.98e9, rel=0.02)
            calls = sum(o.count for o in trace.ops if o.kind is OpKind.DEQUANT)
            absmax = [o for o in trace.ops if o.name.endswith(".dequant.absmax")]
            assert sum(o.count for o in absmax) == 2 * calls and not any(o.host_dispatch for o in absmax)
            expected = weights * R.dequant_bytes(R.params()) / (d.bandwidth_gbs * 1e9 * d.mem_eff)
            expected += 2 * calls * d.kernel_floor_s
            assert qlora.seconds - lora.seconds == pytest.approx(expected, rel=0.1)


def test_8b_lora_base_gemms_are_compute_bound_and_the_optimizer_sees_adapters_only(catalog) -> None:  # type: ignore[no-untyped-def]
    """At 2 x 2048 tokens every frozen base-weight GEMM of Llama 3.1 8B has ~4k rows: far more FLOPs
    per byte than any GPU's ridge point. The optimizer updates the adapters (~42 M parameters),
    not the 8 B weights, so its step is a few thousandths of full fine-tuning's."""
    w = PRESETS["llama-8b-lora"]
    trace = A.trace_cached(w, False)
    base = [o for o in trace.ops if o.kind is OpKind.GEMM and "lora_" not in o.name and "lm_head" not in o.name]
    assert base and not any(o.name.endswith(".dW") for o in base)  # frozen: no weight gradients
    for gpu in ("nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb", "nvidia-rtx-4090", "nvidia-l40s"):
        d = A.device_for(catalog.get(gpu))
        for o in base:
            _t, t_c, t_m = R.op_time(d, o, 2, "bf16")
            assert t_c > 2 * t_m, (gpu, o.name)
        e = catalog.get(gpu)
        lora = A.predict_step(w, d, e, 1, "bf16")[0].breakdown["optimizer"]
        full = A.predict_step(PRESETS["llama-8b-full"], d, e, 1, "bf16")[0].breakdown["optimizer"]
        assert lora < 0.01 * full


def _mixtral_like(**kw: int):  # type: ignore[no-untyped-def]
    from gpuselect.workloads.transformer import TransformerShape

    return TransformerShape(
        layers=4, hidden=1024, heads=8, vocab=32000, seq_len=1024, ffn=3584, kv_heads=2, gated_ffn=True,
        tied_embeddings=False, norm="rmsnorm", rotary=True, **{"experts": 8, "experts_per_token": 2, **kw},
    )  # fmt: skip


def test_an_moe_expert_loop_costs_a_host_sync_per_expert(catalog) -> None:  # type: ignore[no-untyped-def]
    """Hugging Face's eager MoE block reads each expert's token count back (torch.where): the
    device idles once per expert while the host dispatches the next kernel; a CPU runs serially
    already and pays nothing extra."""
    from gpuselect.estimate.perf import step_time

    tr = transformer_trace(_mixtral_like(), mode="lora")
    assert tr.syncs_per_step == 4 * (8 + 1)
    for gpu_id in ("nvidia-h100-sxm5-80gb", "nvidia-rtx-4090"):
        d = R.catalog_device(catalog.get(gpu_id))
        with_syncs, without = (step_time(t, d, 2, "bf16") for t in (tr, replace(tr, syncs_per_step=0)))
        assert with_syncs.seconds - without.seconds == pytest.approx(tr.syncs_per_step * d.dispatch_s)
        assert with_syncs.breakdown["host"] - without.breakdown["host"] == pytest.approx(
            tr.syncs_per_step * d.dispatch_s
        )


def test_moe_routing_runs_only_the_top_k_experts_but_stores_them_all() -> None:
    dense_ffn = _mixtral_like(experts=0, experts_per_token=0)
    moe = transformer_trace(_mixtral_like(), mode="full")
    same_active = transformer_trace(replace(_mixtral_like(), experts=2, experts_per_token=2), mode="full")
    gemm = lambda t: sum(o.flops_per_sample * o.count for o in t.ops if o.kind is OpKind.GEMM)  # noqa: E731
    # 8 experts with 2 per token do the GEMM work of 2 experts with 2 per token (router aside) ...
    assert gemm(moe) == pytest.approx(gemm(same_active), rel=0.01)
    # ... on four times the expert weights, in four times the launches of smaller GEMMs
    assert moe.params - same_active.params == 4 * 6 * 1024 * 3584 * 3 + 4 * 6 * 1024
    launches = lambda t: sum(o.count for o in t.ops if o.name.startswith("layers.moe.expert."))  # noqa: E731
    assert launches(moe) == 4 * launches(same_active)
    assert transformer_trace(dense_ffn).syncs_per_step == 0


def test_an_moe_config_row_says_it_is_unvalidated_and_takes_the_widest_band(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from gpuselect.cli import main

    cfg = {
        "model_type": "mixtral", "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3584,
        "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 4, "num_local_experts": 8,
        "num_experts_per_tok": 2, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }  # fmt: skip
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    args = ["estimate", "--config", str(p), "--seq-len", "1024", "--gpus", "nvidia-h100-sxm5-80gb", "--count", "1,2"]
    assert main([*args, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    doc = json.loads(A.BAND_FILE.read_text())
    widest = max(v for k, v in doc["regimes"].items() if not k.startswith("cpu"))
    assert len(rows) == 2 and all(r["fits"] for r in rows)
    for r in rows:
        assert r["error_band"] == pytest.approx(widest, abs=1e-4)
        assert "mixture of experts: no measured MoE step validates this" in r["note"]
        assert r["tokens_per_s"] > 0
