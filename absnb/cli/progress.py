"""Progress of long command-line runs: a tqdm bar on a terminal, else a plain line on stderr
every five seconds (so short runs print nothing, and logs of long ones stay readable)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, NoReturn, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm


CHECK_EVERY = 1024
"""Updates between two looks at the clock (plain text)."""


class Progress:
    """Counts units of work (steps, transitions) and shows the count.

    Args:
        desc: what is counted, e.g. ``"run"``.
        unit: the unit, e.g. ``"steps"``.
        total: the most there can be, if known.
        stream: where to write (stderr by default).
        every: seconds between two plain-text lines; 0 writes one at every look.
        bar: force the tqdm bar on (True) or off (False); by default on when ``stream`` is
            a terminal and tqdm is installed.
    """

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        every: float = 5.0,
        bar: bool | None = None,
    ) -> None:
        self.desc, self.unit, self.total = desc, unit, total
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.count = 0
        self.lines = 0
        self._last = time.monotonic()
        self._bar: tqdm[NoReturn] | None = None
        if bar is None:
            bar = bool(getattr(self.stream, "isatty", lambda: False)())
        if bar:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(
                    total=total, desc=desc, unit=f" {unit}", file=self.stream, leave=False
                )
        self._check = 1 if every == 0 else CHECK_EVERY

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        before = self.count
        self.count += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.count // self._check != before // self._check:
            now = time.monotonic()
            if now - self._last >= self.every:
                self._last = now
                self._write()

    def _write(self) -> None:
        of = f" of at most {self.total:,}" if self.total is not None else ""
        self.stream.write(f"absnb {self.desc}: {self.count:,} {self.unit}{of}\n")
        self.stream.flush()
        self.lines += 1

    def close(self) -> None:
        """Remove the bar (plain text: nothing more is written)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
