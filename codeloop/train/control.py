"""The Trainer callback that pauses, checkpoints, marks and reports a codeloop run.

A pause must never lose work and never leave a half-written checkpoint: the request
(a pause file, or SIGTERM from the launcher or a cluster scheduler) is only noted
when it arrives, and acted on at the next optimizer-step boundary, by asking the
Trainer to save a checkpoint and stop. The signal handler itself does nothing but
set a flag, since a handler that saved would run in the middle of a backward pass.
This module imports transformers, so import it only where training happens.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from codeloop import store
from codeloop.train import checkpoints


class RunControl(TrainerCallback):
    """Pause on request, mark finished checkpoints, write the heartbeat, print progress."""

    def __init__(
        self,
        output: Path,
        binding: dict[str, Any],
        pause_file: Path | None,
        prior_seconds: float = 0.0,
        echo: bool = True,
    ) -> None:
        self.output = output
        self.binding = binding
        self.pause_file = pause_file
        self.prior_seconds = prior_seconds
        self.echo = echo
        self.signalled: str | None = None
        self.paused_by: str | None = None
        self._started: float | None = None

    # --- requests ------------------------------------------------------------------------

    def request_pause(self, reason: str) -> None:
        """Note a pause request; it takes effect at the next step boundary."""
        self.signalled = self.signalled or reason

    def _pause_reason(self) -> str | None:
        if self.signalled:
            return self.signalled
        if self.pause_file is not None and self.pause_file.exists():
            return f"pause file {self.pause_file}"
        return None

    @property
    def train_seconds(self) -> float:
        """Seconds of training kept in checkpoints so far, across resumed segments."""
        elapsed = 0.0 if self._started is None else time.monotonic() - self._started
        return self.prior_seconds + elapsed

    # --- Trainer events ------------------------------------------------------------------

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        self._started = time.monotonic()

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        reason = self._pause_reason()
        if reason and state.global_step < state.max_steps:
            self.paused_by = reason
            control.should_save = True
            control.should_training_stop = True

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        folder = self.output / f"checkpoint-{state.global_step}"
        # under torchrun, the main process saves the checkpoint and marks it complete
        if folder.is_dir() and state.is_world_process_zero:
            checkpoints.write_marker(folder, self.binding, state.global_step, self.train_seconds)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kw: Any,
    ) -> None:
        loss = (logs or {}).get("loss")
        if loss is None or not state.is_world_process_zero:
            return
        store.write_progress(
            self.output, "train", state.global_step, state.max_steps, loss=float(loss)
        )
        if self.echo:
            print(f"step {state.global_step}/{state.max_steps} loss {loss:.4f}", flush=True)


@contextmanager
def sigterm_pauses(control: RunControl) -> Iterator[None]:
    """While training, SIGTERM means 'pause at the next step', not 'die now'."""
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: control.request_pause("SIGTERM"))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
