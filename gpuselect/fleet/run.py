"""The fleet run on one rank: detect, health (and a quick benchmark), collective bandwidth within
the node and across nodes, then everything gathered on rank 0 into one :class:`FleetReport`.

Launch: ``torchrun --nproc-per-node N [--nnodes M ...] -m gpuselect fleet`` (torchrun's
environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT).
Without it, one process checks this machine and measures no bandwidth.

Failure is an answer, not a hang. Every rank writes its stage and a heartbeat into the
rendezvous store; when a collective fails or times out (``timeout_s``), when a stage outlives the
timeout (a watchdog thread: NCCL may block where Gloo raises), or when the launcher stops a rank
(SIGTERM, because another rank died), the rank says which ranks are gone or stuck and where, and
rank 0 writes what it has as an incomplete report. torch is imported only here, inside the run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuselect import __version__
from gpuselect.errors import UsageError
from gpuselect.fleet.model import (
    GIB,
    MIN_BYTES,
    OPS,
    SCOPES,
    BandwidthPoint,
    FleetReport,
    GpuFigures,
    RankInfo,
    find_stragglers,
    sizes,
    summarise_nodes,
)

#: Exit status of a fleet run that failed (a rank died, hung or a collective failed).
EXIT_FLEET_FAILED = 4
KEY = "gpuselect-fleet/"
BEAT_S = 1.0
#: A rank whose heartbeat is older than this has stopped (or its host cannot reach the store).
BEAT_STALE_S = 5.0
#: Environment hook for the tests: "RANK:exit", "RANK:hang" or "RANK:slow" makes that rank die,
#: hang, or work slowly (with progress) for twice the timeout just before the first collective.
#: Never set outside tests.
TEST_HOOK_ENV = "GPUSELECT_FLEET_TEST_FAIL"


@dataclass
class FleetConfig:
    max_bytes: int | None = None  # None: 1 GiB on NCCL, 64 MiB on Gloo (CPU memory and time)
    min_bytes: int = MIN_BYTES
    factor: int = 2
    warmup: int = 2
    repeats: int = 5
    timeout_s: float = 120.0
    bench_quick: bool = False
    backend: str = "auto"  # auto | nccl | gloo
    probe: bool = False
    on_output: Callable[[FleetReport], None] | None = None  # rank 0 writes with this (also when incomplete)

    def validate(self) -> None:
        if self.max_bytes is not None and not self.min_bytes <= self.max_bytes <= 16 * GIB:
            raise UsageError(f"--max-bytes must be between {self.min_bytes} and {16 * GIB}, not {self.max_bytes}")
        if not 1 <= self.repeats <= 1000:
            raise UsageError(f"--repeats must be between 1 and 1000, not {self.repeats}")
        if not 1 <= self.timeout_s <= 86_400:
            raise UsageError(f"--timeout-s must be between 1 and 86400, not {self.timeout_s:g}")
        if self.backend not in ("auto", "nccl", "gloo"):
            raise UsageError(f"--backend must be auto, nccl or gloo, not {self.backend!r}")


@dataclass
class LaunchEnv:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int | None  # torchrun's GROUP_RANK; None: group ranks by host name
    launched: bool  # under torchrun (or another launcher that sets the same variables)


def launch_env(environ: dict[str, str] | None = None) -> LaunchEnv:
    env = dict(os.environ if environ is None else environ)
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return LaunchEnv(0, 1, 0, 1, None, False)
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(env.get("LOCAL_RANK", "0"))
        local_world = int(env.get("LOCAL_WORLD_SIZE", "1"))
        node = int(env["GROUP_RANK"]) if "GROUP_RANK" in env else None
    except ValueError as exc:
        raise UsageError(f"the launcher's environment is not numeric ({exc}); launch with torchrun") from None
    if not 0 <= rank < world:
        raise UsageError(f"RANK {rank} is outside 0..{world - 1}")
    return LaunchEnv(rank, world, local, local_world, node, True)


class FleetFailed(Exception):  # noqa: N818 - public name; a rename is an API change
    """The run cannot finish; the message names the ranks and the stage."""


# --- progress, heartbeats and the post-mortem ------------------------------------------------


class Progress:
    """This rank's stage, progress and heartbeat in the rendezvous store; a watchdog over its own
    progress; and waits for the other ranks that tell a slow rank from a dead or hung one.

    Store keys (prefixed): ``who/R`` host|pid|node, ``stage/R`` seq|stage|step (changes on every
    step: that is progress), ``beat/R`` a wall-clock time every second, ``arrived/SEQ`` how many
    ranks reached a stage, ``abort`` the message of the rank that declared the run failed."""

    def __init__(
        self, store: Any, rank: int, world: int, timeout_s: float, grace_s: float, on_timeout: Callable[[str], None]
    ) -> None:
        self.store, self.rank, self.world = store, rank, world
        # One namespace per launch attempt: an elastic restart must not see the last attempt's keys.
        self.prefix = (
            f"{KEY}{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/"
        )
        self.timeout_s, self.grace_s, self.on_timeout = timeout_s, grace_s, on_timeout
        self.seq, self.name, self.since = 0, "start", time.monotonic()
        self.last_progress = self.since
        self.waiting = False  # in wait_all: the wait judges the others, not the watchdog
        self.stage_s: dict[str, float] = {}
        self._last_step_write = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def publish_identity(self, host: str, node: str) -> None:
        self._set(f"who/{self.rank}", f"{host}|{os.getpid()}|{node}")

    def enter(self, seq: int, name: str) -> None:
        now = time.monotonic()
        self.stage_s[self.name] = round(now - self.since, 3)
        self.seq, self.name, self.since, self.last_progress = seq, name, now, now
        self._set(f"stage/{self.rank}", f"{seq}|{name}|")
        self._add(f"arrived/{seq}")

    def step(self, label: str) -> None:
        """Progress inside a stage (one collective size done); written at most twice a second."""
        now = time.monotonic()
        self.last_progress = now
        if now - self._last_step_write >= 0.5:
            self._last_step_write = now
            self._set(f"stage/{self.rank}", f"{self.seq}|{self.name}|{label}")

    def mark_left(self, reason: str) -> None:
        """This rank is leaving through the failure path (it names the culprits itself)."""
        self._set(f"left/{self.rank}", reason)

    def post_abort(self, message: str) -> None:
        """Tell every waiting rank that the run has failed, and why."""
        self._set("abort", message)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="gpuselect-fleet-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _set(self, key: str, value: str) -> None:
        if self.store is None:
            return
        # The store going away must not mask the real error.
        with contextlib.suppress(Exception):
            self.store.set(self.prefix + key, value)

    def _add(self, key: str, amount: int = 1) -> int:
        if self.store is None:
            return 0
        try:
            return int(self.store.add(self.prefix + key, amount))
        except Exception:  # noqa: BLE001
            return 0

    def _get(self, key: str) -> str | None:
        if self.store is None:
            return None
        try:
            if not self.store.check([self.prefix + key]):
                return None
            return bytes(self.store.get(self.prefix + key)).decode()
        except Exception:  # noqa: BLE001
            return None

    def _beat(self) -> None:
        fired = False
        while not self._stop.wait(BEAT_S):
            self._set(f"beat/{self.rank}", f"{time.time():.3f}")
            stuck = time.monotonic() - self.last_progress
            if not fired and not self.waiting and stuck > self.timeout_s + self.grace_s:
                fired = True
                self.on_timeout(f"no progress for {stuck:.0f} s, past --timeout-s {self.timeout_s:g}")

    def _where(self, r: int) -> tuple[str, str, str]:
        who = self._get(f"who/{r}")
        host, pid, node = [*who.split("|"), "", "", ""][:3] if who else ("?", "", "?")
        return f"rank {r} ({node}, host {host})", host, pid

    def _stage_of(self, r: int) -> tuple[int, str, str]:
        stage = self._get(f"stage/{r}")
        seq, name, step = [*stage.split("|"), "", ""][:3] if stage else ("0", "start", "")
        return int(seq or 0), name, step

    def _gone(self, r: int, host: str, pid: str) -> str | None:
        """Why rank r is gone (its process exited, or its heartbeat stopped), else None."""
        if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
            return f"exited (pid {pid})"
        beat = self._get(f"beat/{r}")
        age = time.time() - float(beat) if beat else None
        if age is not None and age > BEAT_STALE_S:
            return f"no heartbeat for {age:.0f} s"
        return None

    def diagnose(self, members: list[int] | None = None) -> list[str]:
        """Which ranks are gone or behind, in words; empty when every rank looks fine."""
        if self.store is None:
            return []
        out = []
        for r in members if members is not None else range(self.world):
            if r == self.rank:
                continue
            if self._get(f"left/{r}") is not None:
                continue  # it failed through this same path and said why itself: not a culprit
            where, host, pid = self._where(r)
            seq, name, _ = self._stage_of(r)
            gone = self._gone(r, host, pid)
            if gone:
                out.append(f"{where}: {gone} during '{name}'")
            elif seq < self.seq:
                out.append(f"{where}: alive but still in '{name}' while this rank is in '{self.name}'")
        return out

    def wait_all(self, seq: int, poll_s: float = 0.2) -> None:
        """Wait until every rank has reached stage ``seq`` (as a barrier would) without a
        collective's fixed timeout: a rank that is slow but making progress is waited for; one
        that exited, lost its heartbeat, or made no progress for ``timeout_s`` fails the run
        (FleetFailed names it). Rank 0 judges and posts ``abort``; the others follow it, and
        judge for themselves only if nobody has for twice the timeout (rank 0 itself stuck)."""
        if self.store is None:
            return
        self.waiting = True
        try:
            seen: dict[int, tuple[str, float]] = {}
            started = last_scan = time.monotonic()
            while True:
                if self._add(f"arrived/{seq}", 0) >= self.world:
                    return
                abort = self._get("abort")
                if abort:
                    raise FleetFailed(abort)
                now = time.monotonic()
                judge = self.rank == 0 or now - started > 2 * self.timeout_s
                if judge and now - last_scan >= 1.0:
                    last_scan = now
                    self._judge(seq, seen, now)
                time.sleep(poll_s)
        finally:
            self.waiting = False
            self.last_progress = time.monotonic()

    def _judge(self, seq: int, seen: dict[int, tuple[str, float]], now: float) -> None:
        for r in range(self.world):
            s_seq, name, step = self._stage_of(r)
            if s_seq >= seq:
                continue
            where, host, pid = self._where(r)
            gone = self._gone(r, host, pid)
            state = f"{s_seq}|{name}|{step}"
            if seen.get(r, ("", 0.0))[0] != state:
                seen[r] = (state, now)
            idle = now - seen[r][1]
            msg = None
            if gone:
                msg = f"{where}: {gone} during '{name}'"
            elif idle > self.timeout_s:
                msg = f"{where}: still in '{name}' with no progress for {idle:.0f} s (--timeout-s {self.timeout_s:g})"
            if msg:
                self.post_abort(msg)
                raise FleetFailed(msg)


def _alive(pid: int) -> bool:
    """True while the process runs (a zombie has exited: its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except OSError:
            return True


# --- what one rank finds about itself ---------------------------------------------------------


def _uuid_key(u: str | None) -> str | None:
    if not u:
        return None
    u = u.strip().lower()
    for prefix in ("gpu-", "mig-"):
        u = u.removeprefix(prefix)
    return u


def gpu_figures(snapshot: Any, uuid: str | None, local_rank: int) -> GpuFigures | None:
    """The rank's GPU from the snapshot: by UUID (CUDA_VISIBLE_DEVICES reorders indices), else by index."""
    gpus = list(snapshot.gpus)
    match = next((g for g in gpus if uuid and _uuid_key(g.uuid) == _uuid_key(uuid)), None)
    if match is None:
        match = next((g for g in gpus if g.torch_index == local_rank), None) or (
            gpus[local_rank] if local_rank < len(gpus) else None
        )
    if match is None:
        return None
    p = match.pcie
    pcie = None if p.generation is None else f"gen{p.generation} x{p.width} (max gen{p.max_generation} x{p.max_width})"
    return GpuFigures(
        match.name,
        match.uuid,
        match.pci_bus_id,
        match.memory_total_bytes,
        match.temperature_c,
        match.power_draw_w,
        match.power_limit_w,
        match.clocks.sm_mhz,
        match.clocks.sm_max_mhz,
        pcie,
    )


def bench_figures(device: str) -> dict[str, Any]:
    """`bench --quick` on this rank's device: the figures a fleet compares."""
    from gpuselect.bench.engine import run_to_completion
    from gpuselect.bench.model import BenchConfig

    rep = run_to_completion(BenchConfig(quick=True, devices=(device,), models=()))
    if not rep.devices:
        return {"device": device, "error": "the benchmark found no such device"}
    d = rep.devices[0]
    return {
        "device": d.device,
        "name": d.name,
        "matmul_tflops": dict(d.matmul_tflops),
        "memory_bandwidth_gbs": d.memory_bandwidth_gbs,
        "host_to_device_gbs": d.host_to_device_gbs,
        "spec_ratio": d.spec_ratio,
        "spec_name": d.spec_name,
        "skipped": dict(d.skipped),
    }


def local_info(
    env: LaunchEnv, node: str, device: str, uuid: str | None, torch_version: str | None, cfg: FleetConfig
) -> RankInfo:
    from gpuselect.hardware.snapshot import detect
    from gpuselect.health.rules import evaluate

    snap = detect(probe=cfg.probe)
    health = evaluate(snap)
    # what was measured and the threshold too, as `health` gives them: the report said only the title
    keys = ("id", "device", "title", "detail", "value", "threshold", "unit", "remedy")
    findings = [
        {"severity": f.severity.value, **{k: getattr(f, k) for k in keys}}
        for f in health.findings
        if f.severity.value != "ok"
    ]
    return RankInfo(
        rank=env.rank,
        local_rank=env.local_rank,
        node=node,
        host=snap.host,
        device=device,
        torch_version=torch_version,
        cpu_model=snap.cpu.model,
        gpu=gpu_figures(snap, uuid, env.local_rank) if device.startswith("cuda") else None,
        gpus_on_node=len(snap.gpus),
        health_worst=health.worst.value,
        health_counts=dict(health.counts),
        findings=findings,
    )


# --- the run ----------------------------------------------------------------------------------


@dataclass
class _State:
    """What this rank has so far: rank 0 writes it as an incomplete report if the run fails."""

    info: RankInfo | None = None
    points: list[BandwidthPoint] = field(default_factory=list)
    gathered: list[RankInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    backend: str = "none"
    torch_version: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    start: float = field(default_factory=time.monotonic)
    written: bool = False


def _say(rank: int, text: str) -> None:
    print(f"gpuselect fleet: rank {rank}: {text}", file=sys.stderr, flush=True)


def build_report(state: _State, world: int, complete: bool) -> FleetReport:
    ranks = sorted(state.gathered or ([state.info] if state.info else []), key=lambda r: r.rank)
    nodes = summarise_nodes(ranks)
    if world > 1 and complete:
        for n in nodes:
            if len(n.ranks) == 1:
                state.notes.append(f"{n.name}: one rank, so no intra-node bandwidth")
        if len(nodes) == 1:
            state.notes.append(
                "one node: no inter-node bandwidth (run torchrun with --nnodes M on M nodes to measure it)"
            )
    if not complete and len(ranks) < world:
        state.notes.append(f"only {len(ranks)} of {world} ranks reported: the run stopped before the gather")
    return FleetReport(
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        app_version=__version__,
        backend=state.backend,
        world_size=world,
        torch_version=state.torch_version,
        settings=state.settings,
        nodes=nodes,
        ranks=ranks,
        bandwidth=state.points,
        stragglers=find_stragglers(nodes, ranks, state.points),
        notes=state.notes,
        errors=state.errors,
        complete=complete,
        duration_s=round(time.monotonic() - state.start, 2),
    )


def _test_hook(rank: int, prog: Progress, timeout_s: float) -> None:
    spec = os.environ.get(TEST_HOOK_ENV, "")
    target, _, mode = spec.partition(":")
    if not target.isdigit() or int(target) != rank:
        return
    if mode == "exit":
        _say(rank, f"test hook {TEST_HOOK_ENV}: exiting now")
        os._exit(17)
    if mode == "hang":
        _say(rank, f"test hook {TEST_HOOK_ENV}: hanging")
        time.sleep(10**6)
    if mode == "slow":  # slow but making progress, for twice the timeout: must not fail the run
        _say(rank, f"test hook {TEST_HOOK_ENV}: slow for {2 * timeout_s:g} s")
        end = time.monotonic() + 2 * timeout_s
        while time.monotonic() < end:
            time.sleep(0.25)
            prog.step(f"slow {end - time.monotonic():.1f} s left")


def run_fleet(cfg: FleetConfig, environ: dict[str, str] | None = None) -> tuple[FleetReport | None, int]:
    """Run this rank's part. Rank 0 returns the report (written through ``cfg.on_output``);
    other ranks return None. The status is 0, or EXIT_FLEET_FAILED when the run failed."""
    cfg.validate()
    env = launch_env(environ)
    import torch  # the fleet run needs it; the rest of gpuselect imports without it

    state = _State(torch_version=str(torch.__version__))
    if not env.launched or env.world_size == 1:
        device = "cuda:0" if torch.cuda.is_available() else "cpu"
        uuid = _torch_uuid(torch, 0) if device != "cpu" else None
        state.info = local_info(env, "node0", device, uuid, state.torch_version, cfg)
        if cfg.bench_quick:
            state.info.bench = bench_figures(device)
        state.notes.append(
            "one process: no collective bandwidth measured; launch with "
            "torchrun --nproc-per-node N -m gpuselect fleet to measure it"
        )
        report = build_report(state, 1, True)
        if cfg.on_output is not None:
            cfg.on_output(report)
        return report, 0
    return _run_distributed(cfg, env, torch, state)


def _torch_uuid(torch: Any, index: int) -> str | None:
    try:
        u = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        return str(u) if u is not None else None
    except Exception:  # noqa: BLE001
        return None


def _run_distributed(cfg: FleetConfig, env: LaunchEnv, torch: Any, state: _State) -> tuple[FleetReport | None, int]:
    import torch.distributed as dist

    backend = cfg.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise UsageError("--backend nccl needs CUDA GPUs, and torch sees none")
        seen = torch.cuda.device_count()
        if env.local_rank >= seen:
            raise UsageError(
                f"this node runs {env.local_world_size} ranks but torch sees {seen} GPU{'s' if seen != 1 else ''}: "
                "use --nproc-per-node at most the GPU count"
            )
        torch.cuda.set_device(env.local_rank)
        device = f"cuda:{env.local_rank}"
    else:
        device = "cpu"
    state.backend = backend
    max_bytes = cfg.max_bytes if cfg.max_bytes is not None else (GIB if backend == "nccl" else 64 << 20)
    byte_sizes = sizes(max_bytes, cfg.min_bytes, cfg.factor)
    state.settings = {
        "max_bytes": max_bytes,
        "min_bytes": cfg.min_bytes,
        "factor": cfg.factor,
        "warmup": cfg.warmup,
        "repeats": cfg.repeats,
        "timeout_s": cfg.timeout_s,
        "bench_quick": cfg.bench_quick,
    }
    # Gloo raises when a collective passes the process-group timeout; NCCL's own watchdog would
    # abort the process without naming anyone, so ours fires first there.
    pg_timeout = cfg.timeout_s if backend == "gloo" else cfg.timeout_s + 30
    grace = 15.0 if backend == "gloo" else 0.0
    timeout = dt.timedelta(seconds=pg_timeout)
    try:
        # Binding the device up front lets NCCL set up eagerly and barrier() know its GPU.
        dist.init_process_group(
            backend, timeout=timeout, **({"device_id": torch.device(device)} if backend == "nccl" else {})
        )
    except TypeError:  # torch older than 2.3 has no device_id
        dist.init_process_group(backend, timeout=timeout)
    try:
        from torch.distributed.distributed_c10d import _get_default_store

        store = _get_default_store()
    except Exception:  # noqa: BLE001 - a private helper; without it we cannot name ranks
        store = None
        state.notes.append("the rendezvous store was not reachable: a failure cannot name the ranks involved")
    host = socket.gethostname()
    node_guess = f"node{env.node_rank}" if env.node_rank is not None else host
    rank = env.rank
    members: list[int] | None = None

    def fail_and_exit(reason: str, named: str | None = None) -> None:
        if named is None:
            lines = prog.diagnose(members)
            named = "; ".join(lines) if lines else "no other rank looks gone or behind"
            prog.post_abort(f"rank {rank} failed during '{prog.name}': {named}")
        prog.mark_left(reason)
        _say(rank, f"FAILED during '{prog.name}': {named} ({reason})")
        state.errors.append(f"rank {rank} failed during '{prog.name}': {named} ({reason})")
        _write_partial(cfg, state, env)
        os._exit(EXIT_FLEET_FAILED)

    prog = Progress(store, rank, env.world_size, cfg.timeout_s, grace, on_timeout=fail_and_exit)
    prog.publish_identity(host, node_guess)
    prog.start()
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(_signum: int, _frame: Any) -> None:
        fail_and_exit("stopped by the launcher (SIGTERM): another rank failed")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
    try:
        prog.enter(1, "detect and health")
        state.info = local_info(
            env,
            node_guess,
            device,
            _torch_uuid(torch, env.local_rank) if backend == "nccl" else None,
            state.torch_version,
            cfg,
        )
        if cfg.bench_quick and (device != "cpu" or env.local_rank == 0):
            # CPU ranks of one node share its cores: one benchmark per node says what they can do.
            prog.enter(2, "quick benchmark")
            state.info.bench = bench_figures(device)
        _test_hook(rank, prog, cfg.timeout_s)
        prog.enter(3, "topology")
        prog.wait_all(3)
        topo: list[Any] = [None] * env.world_size
        dist.all_gather_object(topo, (rank, env.local_rank, host, env.node_rank))
        nodes = _assign_nodes(topo)
        state.info.node = nodes[rank]
        prog.publish_identity(host, nodes[rank])
        by_node: dict[str, list[int]] = {}
        for r in range(env.world_size):
            by_node.setdefault(nodes[r], []).append(r)
        prog.enter(4, "process groups")
        groups = {name: dist.new_group(rs) for name, rs in sorted(by_node.items())}
        leaders = [rs[0] for _, rs in sorted(by_node.items())]
        leader_group = dist.new_group(leaders)
        my_node = nodes[rank]
        members = by_node[my_node]
        prog.enter(5, "intra-node collectives")
        if len(members) > 1:
            pts = _measure(
                torch, dist, groups[my_node], len(members), device, "intra-node", my_node, byte_sizes, cfg, prog.step
            )
            if rank == members[0]:
                state.points.extend(pts)
        members = None
        prog.enter(6, "barrier")
        prog.wait_all(6)  # nodes finish their sweeps at different times: wait without a collective's timeout
        dist.barrier()
        if len(leaders) > 1 and rank in leaders:
            members = leaders
            prog.enter(7, "inter-node collectives")
            pts = _measure(
                torch, dist, leader_group, len(leaders), device, "inter-node", "nodes", byte_sizes, cfg, prog.step
            )
            if rank == leaders[0]:
                state.points.extend(pts)
            members = None
        if len(leaders) > 1 and env.world_size > len(leaders):
            prog.enter(8, "waiting for the inter-node sweep")
            prog.wait_all(8)
            members = list(range(env.world_size))
            prog.enter(9, "all-ranks collectives")
            pts = _measure(torch, dist, None, env.world_size, device, "all-ranks", "all", byte_sizes, cfg, prog.step)
            if rank == 0:
                state.points.extend(pts)
            members = None
        prog.enter(10, "gather")
        state.info.stage_s = dict(prog.stage_s)
        prog.wait_all(10)
        gathered: list[Any] | None = [None] * env.world_size if rank == 0 else None
        dist.gather_object((state.info, state.points), gathered, dst=0)
        if rank == 0:
            if gathered is None:
                raise RuntimeError("internal error: gathered is unset")
            state.gathered = [g[0] for g in gathered]
            state.points = sorted(
                (p for g in gathered for p in g[1]),
                key=lambda p: (SCOPES.index(p.scope), p.group, OPS.index(p.op), p.bytes),
            )
        prog.enter(11, "done")
        dist.barrier()
    except FleetFailed as exc:
        fail_and_exit("the run cannot finish", named=str(exc))
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, UsageError):
            raise
        fail_and_exit(f"{type(exc).__name__}: {text[:200]}")
    finally:
        prog.stop()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
    with contextlib.suppress(Exception):  # teardown only: a peer already gone must not fail the report
        dist.destroy_process_group()
    if rank != 0:
        return None, 0
    report = build_report(state, env.world_size, True)
    if cfg.on_output is not None:
        cfg.on_output(report)
    return report, 0


def _assign_nodes(topo: list[Any]) -> dict[int, str]:
    """Node names: torchrun's node rank when set (two launches on one host stay two nodes),
    else the host name's order of first appearance."""
    out: dict[int, str] = {}
    hosts: dict[str, int] = {}
    for rank, _local, host, node_rank in sorted(topo):
        if node_rank is not None:
            out[rank] = f"node{node_rank}"
        else:
            out[rank] = f"node{hosts.setdefault(host, len(hosts))}"
    return out


def _measure(
    torch: Any,
    dist: Any,
    group: Any | None,
    n: int,
    device: str,
    scope: str,
    label: str,
    byte_sizes: list[int],
    cfg: FleetConfig,
    on_step: Callable[[str], None],
) -> list[BandwidthPoint]:
    from gpuselect.fleet.collectives import measure_group

    return measure_group(
        torch,
        dist,
        group,
        n,
        device,
        scope=scope,
        label=label,
        byte_sizes=byte_sizes,
        warmup=cfg.warmup,
        repeats=cfg.repeats,
        on_step=on_step,
    )


def _write_partial(cfg: FleetConfig, state: _State, env: LaunchEnv) -> None:
    if env.rank != 0 or state.written or cfg.on_output is None:
        return
    state.written = True
    try:
        cfg.on_output(build_report(state, env.world_size, False))
    except Exception as exc:  # noqa: BLE001
        _say(env.rank, f"could not write the incomplete report: {exc}")


def default_output_name() -> Path:
    return Path(f"fleet-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
