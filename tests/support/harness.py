"""A fake of the roofline fixture's surroundings (named so): a fixture wired to a fake measure (:mod:`fakes`), with
fail, warn and property callbacks that record what they get; shared by the tests of the plugin and of the checks."""

from __future__ import annotations

from typing import Any, NoReturn

from fakes import FAKE_CPU, FakeMeasure

from pytest_roofline.base.kinds import Bound, CeilingsUsed
from pytest_roofline.hardware.spec import HardwareSpec
from pytest_roofline.plugin.fixture import RooflineFixture
from pytest_roofline.plugin.marker import parse_marker
from pytest_roofline.plugin.session import RooflineSession
from pytest_roofline.plugin.settings import Settings
from pytest_roofline.records.kernel_record import KernelRecord

NODE = "test_k.py::test_a"


class Failed(Exception):
    pass


class Harness:
    """A fixture wired to a fake measure, with fail/warn/property callbacks that record what they get."""

    def __init__(self, *utilizations: float, settings: Settings | None = None, marker: dict[str, Any] | None = None,
                 bound: Bound = "memory", ceilings: CeilingsUsed = "calibrated",
                 hardware: HardwareSpec = FAKE_CPU, verbosity: int = 2) -> None:
        """``verbosity``: pytest's -v count; 2 (-vv, the full failure block) unless a test reads the short one."""
        self.measure = FakeMeasure(*utilizations, bound=bound, ceilings=ceilings, hardware=hardware)
        self.saved: list[str] = []
        self.warnings: list[str] = []
        self.properties: list[tuple[str, Any]] = []

        def save(result: Any, root: str, nodeid: str, label: str) -> dict[str, str]:
            self.saved.append(label)
            return {"trace_dir": f"{root}/{label}", "hlo": "", "perfetto": "", "xplane": ""}

        self.session = RooflineSession(settings or Settings(), lambda: "/traces", measure=self.measure, save=save,
                                       hardware=lambda settings, recalibrate: (hardware, ceilings))
        names = self.session.settings.hardware_names
        spec = parse_marker((), marker, NODE, names) if marker is not None else None
        self.fixture = RooflineFixture(self.session, NODE, spec, self._fail, self.warnings.append,
                                       lambda k, v: self.properties.append((k, v)), verbosity=verbosity)

    @staticmethod
    def _fail(message: str) -> NoReturn:
        raise Failed(message)

    @property
    def records(self) -> list[KernelRecord]:
        return self.session.records


def kernel(x: Any) -> Any:
    return x
