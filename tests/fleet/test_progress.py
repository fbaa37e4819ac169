"""The failure logic without a launcher: stages, heartbeats, waits and verdicts over a fake
rendezvous store (the same calls torch's TCPStore answers)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from gpuselect.fleet.run import FleetFailed, Progress


class FakeStore:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def set(self, key: str, value: str) -> None:
        with self.lock:
            self.data[key] = value.encode()

    def get(self, key: str) -> bytes:
        with self.lock:
            return self.data[key]

    def check(self, keys: list[str]) -> bool:
        with self.lock:
            return all(k in self.data for k in keys)

    def add(self, key: str, amount: int) -> int:
        with self.lock:
            v = int(self.data.get(key, b"0")) + amount
            self.data[key] = str(v).encode()
            return v


def _ranks(store: FakeStore, n: int, timeout_s: float = 1.0) -> list[Progress]:
    out = []
    for r in range(n):
        p = Progress(store, r, n, timeout_s, 0.0, on_timeout=lambda msg: None)
        p.publish_identity(socket.gethostname(), "node0")
        out.append(p)
    return out


def _exited_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_wait_returns_when_every_rank_arrives() -> None:
    store = FakeStore()
    r0, r1 = _ranks(store, 2)
    r0.enter(3, "topology")
    threading.Timer(0.3, lambda: r1.enter(3, "topology")).start()
    t0 = time.monotonic()
    r0.wait_all(3)
    assert 0.2 < time.monotonic() - t0 < 3


def test_a_rank_whose_process_is_gone_is_named() -> None:
    store = FakeStore()
    r0, r1 = _ranks(store, 2)
    r1.enter(1, "detect and health")
    store.set(r1.prefix + "who/1", f"{socket.gethostname()}|{_exited_pid()}|node0")
    r0.enter(3, "topology")
    with pytest.raises(FleetFailed, match=r"rank 1 \(node0, host .*\): exited \(pid \d+\) during 'detect and health'"):
        r0.wait_all(3)
    # Rank 0 posted the verdict: a waiting rank that is not the judge follows it.
    r2 = Progress(store, 2, 3, 1.0, 0.0, on_timeout=lambda m: None)
    r2.prefix = r0.prefix
    with pytest.raises(FleetFailed, match="exited"):
        r2.wait_all(3)


def test_a_rank_without_progress_is_named_after_the_timeout_but_a_slow_one_is_waited_for() -> None:
    store = FakeStore()
    r0, r1 = _ranks(store, 2, timeout_s=1.0)
    r1.enter(1, "detect and health")
    stop = threading.Event()

    def beat_and_step(steps: bool) -> None:
        i = 0
        while not stop.is_set():
            store.set(r1.prefix + "beat/1", f"{time.time():.3f}")
            if steps:
                i += 1
                r1._last_step_write = 0.0  # write every step, not twice a second
                r1.step(f"size {i}")
            time.sleep(0.2)

    # Slow but progressing for 2.5 s (> timeout): waited for, then it arrives.
    t = threading.Thread(target=beat_and_step, args=(True,))
    t.start()
    threading.Timer(2.5, lambda: r1.enter(3, "topology")).start()
    r0.enter(3, "topology")
    r0.wait_all(3)
    stop.set()
    t.join()
    # Alive (heartbeat) but no progress: named once the timeout passes.
    stop.clear()
    r1.enter(5, "intra-node collectives")
    t = threading.Thread(target=beat_and_step, args=(False,))
    t.start()
    r0.enter(6, "barrier")
    t0 = time.monotonic()
    try:
        with pytest.raises(FleetFailed, match=r"still in 'intra-node collectives' with no progress for \d+ s"):
            r0.wait_all(6)
    finally:
        stop.set()
        t.join()
    assert time.monotonic() - t0 < 5


def test_a_stale_heartbeat_on_another_host_is_named() -> None:
    store = FakeStore()
    r0, r1 = _ranks(store, 2)
    store.set(r1.prefix + "who/1", "other-host|12345|node1")
    store.set(r1.prefix + "beat/1", f"{time.time() - 30:.3f}")
    r1.enter(1, "detect and health")
    r0.enter(3, "topology")
    assert r0.diagnose() == ["rank 1 (node1, host other-host): no heartbeat for 30 s during 'detect and health'"]
    r1.mark_left("stopped by the launcher")
    assert r0.diagnose() == []  # it left through the failure path and spoke for itself


def test_the_watchdog_fires_on_no_progress_but_not_while_waiting() -> None:
    store = FakeStore()
    fired: list[str] = []
    p = Progress(store, 0, 1, 1.0, 0.0, on_timeout=fired.append)
    p.start()
    try:
        p.waiting = True
        time.sleep(2.2)
        assert fired == []
        p.waiting = False
        p.last_progress = time.monotonic()
        time.sleep(2.5)
        assert len(fired) == 1 and "no progress" in fired[0]
    finally:
        p.stop()


def test_keys_are_per_launch_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job7")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    p = Progress(FakeStore(), 0, 1, 1.0, 0.0, on_timeout=lambda m: None)
    assert p.prefix.endswith("/job7/2/")
