"""What every command raises when it cannot do what was asked (:class:`CliError`): one line, exit code 2."""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A one-line reason the command cannot do what was asked (exit code 2)."""
