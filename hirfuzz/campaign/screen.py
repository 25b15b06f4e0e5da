"""What a campaign shows while it runs: a progress bar (tqdm, with --no-progress none) and
the lines said above it, from the loop and from the reduction threads alike."""
from __future__ import annotations

import threading
from typing import Callable


class Screen:
    def __init__(self, progress: bool, lock: threading.RLock):
        self.progress = progress
        self.lock = lock  # shared with the findings tables: a line is said while they change
        self.bar = None

    def open(self, total: int | None, initial: int, desc: str):
        if not self.progress:
            return
        from tqdm import tqdm
        self.bar = tqdm(total=total, initial=initial, unit="case", dynamic_ncols=True, desc=desc)

    def tick(self, postfix: Callable[[], str]):
        """One more case judged, and the figures beside the bar (worked out only for a bar)."""
        if self.bar is None:
            return
        self.bar.set_postfix_str(postfix(), refresh=False)
        self.bar.update(1)

    def say(self, text: str):
        with self.lock:  # reduction threads speak too
            if self.bar is not None:
                self.bar.write(text)
            else:
                print(text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
