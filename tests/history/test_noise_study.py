"""``pytest-roofline noise``'s study of A/A rounds: comparisons drawn from the rounds and judged as ab judges one,
the false alarms counted, the smallest detectable drop and the quiet max_drop (made-up rounds)."""

from __future__ import annotations

import pytest
from fakes import obs

from pytest_roofline.history.noise import study_kernel
from pytest_roofline.history.paired import KernelRounds


def _kernel(heads: list[float], base: float = 0.5) -> KernelRounds:
    return KernelRounds("t.py::test_k", "k", tuple(obs(base) for _ in heads), tuple(obs(h) for h in heads))


def test_a_quiet_kernel_raises_no_false_alarm_and_its_detectable_drop_is_its_noise_plus_the_floor() -> None:
    heads = [0.5 * r for r in (0.99, 1.01, 1.0, 0.995, 1.005, 1.0, 0.998, 1.002, 1.0, 0.997, 1.003, 1.001)]
    study = study_kernel(_kernel(heads), comparisons=20, max_drop=0.05)
    assert study.comparisons == 20 and study.false_alarms == 0 and study.improvements == 0
    assert study.high is not None and study.detectable_drop is not None
    assert study.detectable_drop == pytest.approx(1 - 0.95 / study.high)
    assert 0.05 <= study.detectable_drop < 0.07  # the floor and a little noise
    assert study.quiet_above == 0.0  # no step ever reached below 1


def test_a_noisy_kernel_judged_with_no_floor_raises_false_alarms_and_says_which_floor_is_quiet() -> None:
    heads = [0.5 * r for r in (0.7, 0.72, 0.75, 0.74, 0.71, 0.73, 1.3, 0.76, 0.78, 1.25, 0.74, 0.72)]
    study = study_kernel(_kernel(heads), comparisons=20, max_drop=0.01)
    assert study.false_alarms > 0  # with nothing changed but a noisy runner, the gate fires
    assert study.quiet_above is not None and study.quiet_above >= 0.2
    again = study_kernel(_kernel(heads), comparisons=20, max_drop=study.quiet_above)
    assert again.false_alarms == 0  # at the quiet floor, none of the same comparisons fires


def test_too_few_quiet_rounds_cannot_be_studied() -> None:
    study = study_kernel(_kernel([0.5] * 4), comparisons=20)
    assert study.comparisons == 0 and study.detectable_drop is None
