"""Reporting: measurement records as terminal text and as the JSON report. Pure apart from
:mod:`.provenance`, which runs git. No JAX, no pytest."""
