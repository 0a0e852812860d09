"""The lifecycle every service shares (docs/design.md): a context manager whose failed start cleans up after itself."""

from __future__ import annotations

from typing import Self


class Service:
    """Subclasses define ``start`` and ``close``; ``close`` must be safe after a partial start."""

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def open(self) -> Self:
        """``start``, with what a failed start began closed before the failure is raised (``with`` opens so)."""
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
