"""Which peak FLOPs of one compute class meet on a device (rules in docs/hardware.md, "Which peak"). Pure."""

from __future__ import annotations

from dataclasses import replace

from .ceiling import Ceiling, DeviceFigures

__all__ = ["peak_for_class"]


def peak_for_class(spec: DeviceFigures, compute_class: str, precision: str = "default") -> tuple[str, Ceiling, str]:
    """The peak that FLOPs of one compute class meet on this hardware.

    Returns ``(key used, ceiling, note)``. Rules (documented in docs/hardware.md, "Which peak"):

    * ``vector``: the vector peak; without one (CPU, most TPUs) the f32 peak on CPU, else the fastest
      matrix peak (a lower bound on time, so utilization can only be understated).
    * ``f32`` on GPU at default/high precision runs as TF32; at ``highest`` as FP32.
    * ``f32`` on TPU runs as bf16 passes: 1 (default), 3 (high), 6 (highest); the bf16 peak is divided.
    * ``f16`` falls back to ``bf16``. A class the table lacks falls back to the fastest peak, with a note.
    * ``int8`` on a CPU: the int8 matmul rate its calibration measured (on a Xeon with AMX, 12x its f32 rate),
      said so; without one the fastest peak, with a note that this may read high.
    """
    peaks = spec.peaks
    note = ""
    if compute_class == "vector":
        if "vector" in peaks:
            return "vector", peaks["vector"], ""
        if spec.platform == "cpu" and "f32" in peaks:
            return "f32", peaks["f32"], "CPU: vector work measured against the f32 ceiling (same SIMD units)"
        key = max(peaks, key=lambda k: peaks[k].value)
        return key, peaks[key], f"no vector peak for {spec.name}: used the {key} peak (utilization understated)"
    if compute_class == "f32":
        if spec.platform == "gpu" and precision != "highest" and "tf32" in peaks:
            return "tf32", peaks["tf32"], "f32 dot at default precision runs as TF32 on this GPU"
        if spec.platform == "tpu" and "f32" not in peaks and "bf16" in peaks:
            passes = {"highest": 6, "high": 3}.get(precision, 1)
            bf16 = peaks["bf16"]
            if passes == 1:
                return "bf16", bf16, "f32 dot at default precision runs as one bf16 pass on TPU"
            return ("bf16", replace(bf16, value=bf16.value / passes),
                    f"f32 dot at precision {precision} runs as {passes} bf16 passes on TPU")
    if compute_class == "f16" and "f16" not in peaks and "bf16" in peaks:
        return "bf16", peaks["bf16"], "f16 measured against the bf16 peak"
    if compute_class in peaks:
        if compute_class == "int8" and spec.platform == "cpu" and peaks["int8"].origin == "calibration":
            note = "int8 matrix work held to the int8 matmul rate this machine's calibration measured"
        return compute_class, peaks[compute_class], note
    key = max(peaks, key=lambda k: peaks[k].value)
    if spec.platform == "cpu" and compute_class == "int8":
        return key, peaks[key], (f"no int8 rate for {spec.name}: int8 matrix work held to the {key} peak, though a "
                                 f"CPU with int8 dot instructions (VNNI, AMX) runs it several times faster (its "
                                 f"utilization may then read high): pytest --roofline-calibrate measures the rate")
    return key, peaks[key], f"no {compute_class} peak for {spec.name}: used the {key} peak (utilization understated)"
