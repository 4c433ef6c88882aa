"""Waiting for the other processes of a program (measurement/processes/peers.py), on a fake of JAX's distributed
key-value store and a fake clock: a busy process is waited for as long as it keeps saying what it does, a silent one
until the timeout, a failed one not at all."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from pytest_roofline.measurement.processes import peers as peers_module
from pytest_roofline.measurement.processes.peers import PeerError, Peers


class FakeKeyValueStore:
    """A fake of jax's DistributedRuntimeClient (key_value_set / key_value_try_get); ``on_get`` lets the other
    process act between two reads."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.on_get: Callable[[], None] = lambda: None

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        if key in self.data and not allow_overwrite:
            raise RuntimeError(f"ALREADY_EXISTS: {key}")
        self.data[key] = value

    def key_value_try_get(self, key: str) -> str:
        self.on_get()
        if key not in self.data:
            raise RuntimeError(f"NOT_FOUND: {key}")
        return self.data[key]


class FakeClock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(peers_module, "_POLL_S", 0.0)
    notices: list[str] = []
    monkeypatch.setattr(peers_module, "_notice", [notices.append])
    monkeypatch.setattr(peers_module, "_watch", [lambda index, count, text: None])
    return notices


def _pair(store: FakeKeyValueStore, clock: FakeClock, timeout_s: float = 60) -> tuple[Peers, Peers]:
    return (Peers(0, 2, store, "psum", timeout_s, 1, clock=clock), Peers(1, 2, store, "psum", timeout_s, 1))


def test_a_process_that_keeps_saying_what_it_does_is_waited_for_past_the_timeout(no_real_sleep: list[str]) -> None:
    store, clock = FakeKeyValueStore(), FakeClock(0.5)
    me, other = _pair(store, clock, timeout_s=60)
    reads = {"n": 0}

    def other_calibrates_for_five_minutes() -> None:
        reads["n"] += 1
        if clock.now < 300 and reads["n"] % 20 == 0:
            other.status(f"compiling and calibrating for kernel 'psum' (for {clock.now:.0f} s)")
        elif clock.now >= 300 and "pytest_roofline/1/ready/1" not in store.data:
            store.data["pytest_roofline/1/ready/1"] = "psum"

    store.on_get = other_calibrates_for_five_minutes
    assert me.exchange("ready", "psum") == ["psum", "psum"]
    assert clock.now >= 300  # five times the timeout, never silent for a minute
    (notice,) = no_real_sleep  # said once, after 10 s, with the other's last word
    assert "process 0 has waited 10 s for process 1 to reach 'ready' of kernel 'psum'" in notice
    assert "its last word: compiling and calibrating for kernel 'psum' (for " in notice


def test_a_silent_process_is_given_up_after_the_timeout() -> None:
    store, clock = FakeKeyValueStore(), FakeClock(0.5)
    me, other = _pair(store, clock, timeout_s=60)
    other.status("timing kernel 'psum'")
    with pytest.raises(PeerError, match="process 1 of 2 did not reach 'ready' of measurement 1 and said nothing "
                                        r"new for 60 s \(its last word: timing kernel 'psum'"):
        me.exchange("ready", "psum")
    assert 60 < clock.now < 65


def test_a_process_whose_measurement_failed_is_not_waited_for() -> None:
    store, clock = FakeKeyValueStore(), FakeClock(0.5)
    me, other = _pair(store, clock, timeout_s=300)
    with pytest.raises(ValueError, match="no such dtype"):
        with other.busy("compiling and calibrating for kernel 'psum'"):
            raise ValueError("no such dtype\nsecond line")
    assert store.data["pytest_roofline/status/1"].startswith("failed while compiling and calibrating")
    with pytest.raises(PeerError, match=r"process 1 of 2 failed while compiling and calibrating for kernel 'psum' "
                                        r"\(ValueError: no such dtype\); see its output"):
        me.exchange("ready", "psum")
    assert clock.now < 5  # at once, not after the timeout


def test_a_busy_process_repeats_its_word(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.setattr(peers_module, "KEEPALIVE_S", 0.001)
    store = FakeKeyValueStore()
    said: list[str] = []
    other = Peers(1, 2, store, "psum", 60, 1)
    repeated = threading.Event()
    def hear(index: int, count: int, text: str) -> None:
        said.append(text)
        if len(said) > 1:
            repeated.set()

    monkeypatch.setattr(peers_module, "_watch", [hear])
    with other.busy("compiling and calibrating for kernel 'psum'"):
        assert repeated.wait(60)
    assert said[0] == "compiling and calibrating for kernel 'psum'"
    assert said[1].startswith("compiling and calibrating for kernel 'psum' (for ")
    assert "pytest_roofline/1/failed/1" not in store.data


def test_processes_started_reads_jax_distributed_state_without_importing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from pytest_roofline.measurement.processes.peers import processes_started

    fake = types.SimpleNamespace(global_state=types.SimpleNamespace(client=None, num_processes=None, process_id=0))
    monkeypatch.setitem(sys.modules, "jax._src.distributed", fake)  # a fake of JAX's distributed module
    assert processes_started() is None  # never initialized
    fake.global_state = types.SimpleNamespace(client=FakeKeyValueStore(), num_processes=1, process_id=0)
    assert processes_started() is None  # one process
    fake.global_state = types.SimpleNamespace(client=FakeKeyValueStore(), num_processes=4, process_id=2)
    assert processes_started() == (2, 4)
    monkeypatch.delitem(sys.modules, "jax._src.distributed")
    assert processes_started() is None and "jax._src.distributed" not in sys.modules
