"""Turning a serialized HloModuleProto (as a profile embeds it) into HLO text (imports JAX's XLA client).

No Python schema for HLO protos ships with jax or jaxlib; XLA's own ``XlaComputation`` reads the bytes and
prints the module as text (without '%' and with signature-free headers, which :mod:`~..analysis.program.hlo_reader`
reads).
"""

from __future__ import annotations

__all__ = ["HloProtoError", "hlo_text"]


class HloProtoError(ValueError):
    """The bytes could not be read as an HloModuleProto."""


def hlo_text(module_proto: bytes, what: str = "the HLO module") -> str:
    from jax._src.lib import xla_client  # type: ignore[attr-defined]  # private, present since jax 0.4; XlaComputation reads HloModuleProto

    try:
        return str(xla_client.XlaComputation(module_proto).as_hlo_text())
    except Exception as exc:  # noqa: BLE001 - XLA raises its own runtime error types
        raise HloProtoError(f"{what}: XLA could not read the embedded HloModuleProto: {exc}") from None
