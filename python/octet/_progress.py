"""Progress of a compile on stderr: a tqdm bar where tqdm is installed, a plain line otherwise."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Union


class _Display:
    """Receives (message, done, total) from the C API's progress callback: the start of
    calibration gives the number of batches, then one call per batch; "compile" and
    "link" mark the other stages (total -1)."""

    def __init__(self, label: str):
        self.label = label
        self.start = time.perf_counter()
        self.bar = None
        self.plain_open = False
        try:
            import tqdm  # optional: pip install octet[progress]
            self._tqdm = tqdm.tqdm
        except ImportError:
            self._tqdm = None

    def __call__(self, message: str, done: int, total: int) -> None:
        if total > 0:
            if self._tqdm is not None:
                if self.bar is None:
                    self.bar = self._tqdm(total=total, desc=f"{self.label}: calibrating",
                                          unit="batch", file=sys.stderr, leave=True)
                self.bar.update(max(0, done - self.bar.n))
            else:
                elapsed = time.perf_counter() - self.start
                sys.stderr.write(f"\r{self.label}: calibrating, batch {done}/{total} ({elapsed:.1f} s)")
                sys.stderr.flush()
                self.plain_open = True
        else:
            self._finish_line()
            if self.bar is not None:
                self.bar.close()
                self.bar = None
            sys.stderr.write(f"{self.label}: {message}\n")
            sys.stderr.flush()

    def _finish_line(self) -> None:
        if self.plain_open:
            sys.stderr.write("\n")
            self.plain_open = False

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self._finish_line()


class _Custom:
    def __init__(self, callback: Callable[[str, int, int], None]):
        self.callback = callback

    def __call__(self, message: str, done: int, total: int) -> None:
        self.callback(message, done, total)

    def close(self) -> None:
        pass


def make_progress(progress: Union[bool, Callable[[str, int, int], None]], label: str) -> Optional[object]:
    """None (no progress), the default display, or the caller's callable."""
    if progress is True:
        return _Display(label)
    if not progress:
        return None
    if callable(progress):
        return _Custom(progress)
    raise TypeError(f"progress must be True, False or a callable(message, done, total), "
                    f"not {type(progress).__name__}")
