"""The cost of a custom call: library gemms (cuBLAS, hipBLAS) and convolutions (cuDNN, MIOpen) counted from
their operands, dense linear algebra (LAPACK, cuSOLVER: LU, Cholesky, QR, triangular solves; eigh and SVD as lower
bounds) from their shapes, data-movement calls as bytes, Pallas kernels from their cost_estimate, anything else as
bytes and a name in ``uncounted``. Pure: reads :mod:`.hlo_reader`."""

from __future__ import annotations

from math import prod

from .hlo_reader import Computation, HloModule, Instruction, Shape
from .op_cost import OpCost, compute_class, operand_bytes, shape_of, source_dtype
from .pallas_costs import estimate_in_config, pallas_backend

__all__ = ["custom_call_cost", "custom_call_target", "GEMM_TARGET_PREFIXES", "CONV_TARGET_PREFIXES",
           "DATA_MOVEMENT_TARGETS", "linalg_kind", "linalg_flops", "PARTLY_COUNTED"]


# Library calls XLA emits as custom calls (GPU). Gemms: cuBLAS and cuBLASLt (XLA on ROCm uses the same target
# names for hipBLAS/hipBLASLt); convolutions: cuDNN (MIOpen on ROCm, same names).
GEMM_TARGET_PREFIXES = ("__cublas$", "__hipblas")
CONV_TARGET_PREFIXES = ("__cudnn$conv",)
# Custom calls that move or annotate data and compute nothing: their operands and result are the traffic.
DATA_MOVEMENT_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost", "MoveToDevice",
    "AllocateBuffer", "LayoutConstraint", "annotate_device_placement", "PinToDevice", "__gpu$xla.gpu.copy",
})
# Python callbacks (jax.pure_callback, io_callback, debug callbacks, equinox's error checks): the host runs them, so
# the device's work is the bytes it hands over.
HOST_CALLBACK_TARGETS = frozenset({
    "xla_python_cpu_callback", "xla_ffi_python_cpu_callback", "xla_python_gpu_callback", "xla_ffi_python_gpu_callback",
    "xla_ffi_partitioned_python_cpu_callback", "xla_ffi_partitioned_python_gpu_callback",
})


# An LU's pivots turned into a permutation (cuSOLVER's and LAPACK's helpers alike): index work on a vector of n
# integers, its bytes its cost.
_INDEX_WORK = "lu_pivots_to_permutation"


def custom_call_target(inst: Instruction) -> str:
    return inst.attrs.get("custom_call_target", "").strip('"')


def _first_leaf(shape: Shape) -> Shape:
    """A library call's result: the first element of its tuple (the rest is workspace: scratch, not output)."""
    while shape.is_tuple and shape.elements_of:
        shape = shape.elements_of[0]
    return shape


def _gemm_flops(comp: Computation, inst: Instruction) -> float | None:
    """2 x batch x M x N x K of a gemm custom call, from its operands and the ``dot_dimension_numbers`` of its
    ``backend_config``; None when they are not there."""
    config = inst.backend_config.get("gemm_backend_config", inst.backend_config)
    dims = config.get("dot_dimension_numbers") if isinstance(config, dict) else None
    if not isinstance(dims, dict) or len(inst.operands) < 2:
        return None
    lhs, rhs = shape_of(comp, inst.operands[0]), shape_of(comp, inst.operands[1])
    if lhs is None or rhs is None or lhs.is_tuple or rhs.is_tuple:
        return None
    try:
        contracting = [int(d) for d in dims.get("lhs_contracting_dimensions", [])]
        batch = [int(d) for d in dims.get("lhs_batch_dimensions", [])]
        k = prod(lhs.dims[d] for d in contracting)
        b = prod(lhs.dims[d] for d in batch)
    except (IndexError, TypeError, ValueError):
        return None
    if k * b == 0:
        return 0.0
    # lhs = batch x M x K, rhs = batch x K x N: 2 x batch x M x N x K = 2 x |lhs| x |rhs| / (batch x K)
    return 2.0 * lhs.num_elements * rhs.num_elements / (b * k)


def _conv_custom_flops(comp: Computation, inst: Instruction, target: str) -> float | None:
    """A cuDNN convolution's FLOPs, as the forward convolution it computes or differentiates:
    2 x forward-output elements x kernel elements per output feature."""
    if len(inst.operands) < 2:
        return None
    a, b = shape_of(comp, inst.operands[0]), shape_of(comp, inst.operands[1])
    result = _first_leaf(inst.shape)
    if a is None or b is None:
        return None
    if "BackwardFilter" in target:
        forward_out, kernel = b, result  # operands: input, output gradient; result: the kernel gradient
    elif "BackwardInput" in target:
        forward_out, kernel = a, b  # operands: output gradient, kernel; result: the input gradient
    else:
        forward_out, kernel = result, b  # operands: input, kernel (bias, side input); result: output
    labels = inst.attrs.get("dim_labels", "")
    try:
        kernel_labels = labels.split("_")[1].split("->")[0]
        out_feature = kernel.dims[kernel_labels.index("o")]
    except (IndexError, ValueError):
        return None
    return 2.0 * forward_out.num_elements * kernel.num_elements / max(out_feature, 1)


def custom_call_cost(module: HloModule, comp: Computation, inst: Instruction,
                      param_sources: tuple[str, ...] | None) -> OpCost:
    """Gemm and convolution library calls counted from their operands; data-movement calls and host callbacks as
    bytes; any other custom call is bytes plus a name in ``uncounted``."""
    target = custom_call_target(inst)
    written = _first_leaf(inst.shape).bytes if inst.shape.is_tuple else inst.shape.bytes
    io_bytes = operand_bytes(comp, inst) + written
    flops: float | None = None
    # (Before the gemms: cuBLAS's triangular solve is a "__cublas$" call with no dot dimensions.)
    if (kind := linalg_kind(target)) is not None and (flops := linalg_flops(comp, inst, kind)) is not None:
        # Vector FLOPs: a solver's panels and updates do not run at a matrix unit's peak.
        partly = (f"{inst.name} ({target}: {kind}, {PARTLY_COUNTED})",) \
            if kind in LOWER_BOUND_LINALG else ()
        top = linalg_flops(comp, inst, kind, top=True) if partly else None
        return OpCost(flops, 0.0, io_bytes, custom_call_flops=flops, uncounted=partly,
                      top_extra=max(top - flops, 0.0) if top is not None else 0.0)
    if target.startswith(GEMM_TARGET_PREFIXES):
        flops = _gemm_flops(comp, inst)
    elif target.startswith(CONV_TARGET_PREFIXES):
        flops = _conv_custom_flops(comp, inst, target)
    elif target in DATA_MOVEMENT_TARGETS or target in HOST_CALLBACK_TARGETS or _INDEX_WORK in target:
        return OpCost(0.0, 0.0, io_bytes)
    elif pallas_backend(target) is not None:
        return _pallas_cost(module, comp, inst, target, io_bytes, param_sources)
    if flops is None:
        return OpCost(0.0, 0.0, io_bytes, uncounted=(f"{inst.name} ({target or 'no target'})",))
    dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
    return OpCost(flops, 0.0, io_bytes, {compute_class(dtypes): flops}, custom_call_flops=flops)


def _pallas_cost(module: HloModule, comp: Computation, inst: Instruction, target: str, io_bytes: float,
                 param_sources: tuple[str, ...] | None) -> OpCost:
    """A Pallas kernel: the work its cost_estimate states (in its backend_config, or from the traced program);
    without one, its operands and result as bytes and its name in ``uncounted``."""
    backend = pallas_backend(target)
    stated, traced = estimate_in_config(inst), module.kernel_estimates.get(inst.name)
    # The traced program's estimate knows whether the body does matrix work; the call's own numbers win.
    est = traced if traced is not None and (stated is None or stated.numbers == traced.numbers) else stated
    if est is None:
        return OpCost(0.0, 0.0, io_bytes, uncounted=(f"{inst.name} ({target}: a {backend} Pallas kernel without a "
                                                      f"cost_estimate)",))
    dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
    matrix = {compute_class(dtypes): est.flops} if est.matrix and est.flops else {}
    return OpCost(est.flops, est.transcendentals, est.bytes_accessed, matrix, custom_call_flops=est.flops,
                  estimated=(f"{inst.name} ({backend}{', counted from its body' if est.source == 'body' else ''})",))


# Dense linear algebra calls (LAPACK on the CPU, cuSOLVER / cuBLAS on a GPU, rocSOLVER alike), by a word of their
# target, with their textbook FLOP counts for an m x n matrix (n x n where square) of real numbers (x4 complex):
# LU m n^2 - n^3/3, Cholesky n^3/3, QR 2 m n^2 - 2 n^3/3 (and forming Q the same), a triangular solve k^2 per
# column of its right-hand side (k: the triangle's side). eigh and SVD count their reduction to tridiagonal or
# bidiagonal form (4/3 n^3, 4 m n^2 - 4/3 n^3): the iterations after it are not counted, a lower bound.
LINALG_WORDS = (("getrf", "LU"), ("potrf", "Cholesky"), ("geqrf", "QR"), ("orgqr", "QR's Q"), ("ungqr", "QR's Q"),
                ("trsm", "triangular solve"), ("triangularsolve", "triangular solve"), ("syevd", "eigh"),
                ("heevd", "eigh"), ("syevj", "eigh"), ("gesdd", "SVD"), ("gesvd", "SVD"))
LOWER_BOUND_LINALG = frozenset({"eigh", "SVD"})
# The top of their range (Golub and Van Loan, Matrix Computations, 4th ed., 8.3 and figure 8.6.1): the symmetric QR
# algorithm with its eigenvectors about 9 n^3 (divide and conquer, LAPACK's syevd, does less); an SVD with U and V
# (m >= n) 4 m^2 n + 22 n^3. A kernel below its threshold even at that count fails (not a lower-bound warning).
LINALG_TOP = {"eigh": "9 n^3", "SVD": "4 m^2 n + 22 n^3"}
# How an uncounted entry says its call was counted in part (its FLOPs are there, a lower bound), not left out.
PARTLY_COUNTED = "its reduction counted, not its iterations"


def linalg_kind(target: str) -> str | None:
    """Which dense linear algebra call a custom call target is ("LU", "Cholesky" ...), or None."""
    low = target.lower().replace("_", "").replace("$", "")
    return next((kind for word, kind in LINALG_WORDS if word in low), None)


def _matrix(shape: Shape | None) -> tuple[float, float, float] | None:
    """(batch, m, n) of a stack of matrices."""
    if shape is None or shape.is_tuple or len(shape.dims) < 2:
        return None
    *batch, m, n = shape.dims
    return float(prod(batch)), float(m), float(n)


def linalg_flops(comp: Computation, inst: Instruction, kind: str, top: bool = False) -> float | None:
    """The FLOPs of a dense linear algebra call from its operands' shapes (None where they cannot be read); ``top``:
    for eigh and SVD, the most their iterations can bring them to (:data:`LINALG_TOP`)."""
    operand = shape_of(comp, inst.operands[0]) if inst.operands else None
    first = _matrix(operand)
    if operand is None or first is None:
        return None
    batch, m, n = first
    scale = 4.0 if operand.dtype.startswith("c") else 1.0
    if kind == "triangular solve":
        rhs = shape_of(comp, inst.operands[1]) if len(inst.operands) > 1 else None
        if rhs is None or rhs.is_tuple:
            return None
        return scale * m * rhs.num_elements  # k x k triangle: k^2 per right-hand column, k x columns = |rhs| / k
    big, small = max(m, n), min(m, n)
    per_matrix = {
        "LU": big * small**2 - small**3 / 3,
        "Cholesky": n**3 / 3,
        "QR": 2 * big * small**2 - 2 * small**3 / 3,
        "QR's Q": 2 * big * small**2 - 2 * small**3 / 3,
        "eigh": (9 if top else 4 / 3) * n**3,
        "SVD": 4 * big**2 * small + 22 * small**3 if top else 4 * big * small**2 - 4 * small**3 / 3,
    }[kind]
    return scale * batch * per_matrix
