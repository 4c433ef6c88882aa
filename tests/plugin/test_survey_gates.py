"""The config's ``programs:`` section as the plugin reads it: a threshold per program-name pattern, optionally per
platform, and the work to judge a program on; a malformed entry is an error that names it and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.hardware.per_device import PerDevice, Threshold
from pytest_roofline.plugin.settings import ConfigError, resolve_settings
from pytest_roofline.plugin.survey.gates import stated_work


def _settings(tmp_path: Path, text: str) -> object:
    config = tmp_path / "roofline.yaml"
    config.write_text(text)
    return resolve_settings({"config": str(config), "survey": True}, {}, {}, "no ini file", str(tmp_path))


def test_gates_read_in_order_with_their_work_per_platform(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "programs:\n  jit_attention*: 0.3\n  jit_project:\n    min: {cpu: 0.31}\n"
                                   "    work: {cpu: {flops: 268435456, bytes: 3145728, transcendentals: 0}}\n")
    (first, attention), (second, project) = settings.programs  # type: ignore[attr-defined]
    assert (first, second) == ("jit_attention*", "jit_project")
    assert isinstance(attention.min, Threshold) and attention.min.value == 0.3 and attention.work == {}
    assert isinstance(project.min, PerDevice)
    stated = stated_work(settings.programs)  # type: ignore[attr-defined]
    assert stated("jit_project", "cpu") == (268435456.0, 3145728.0, 0.0)
    assert stated("jit_project", "gpu") is None and stated("jit_attention_fwd", "cpu") is None


@pytest.mark.parametrize(("entry", "said"), [
    ("jit_a: 1.5", "programs: 'jit_a': 1.5 in"),
    ("jit_a: {min: 0.5, work: {cpu: {flops: 1}}}", "work for 'cpu' needs flops and bytes"),
    ("jit_a: {work: {cpu: {flops: 1, bytes: 2}}}", "give min"),
    ("jit_a: {min: 0.5, max_drop: 0.1}", "give min (and work"),
])
def test_a_malformed_gate_names_itself_and_the_file(tmp_path: Path, entry: str, said: str) -> None:
    with pytest.raises(ConfigError, match="roofline.yaml") as error:
        _settings(tmp_path, f"programs:\n  {entry}\n")
    assert said in str(error.value)
