"""The World: a simulated job's state (:mod:`absnb.sim.state`, plain data) with the action
table (:mod:`absnb.sim.rules`: when each action may happen and what it does) and its fast
path for every enabled action at once (:mod:`absnb.sim.enabled`), put together as the
classroom and the explorer use them; its methods only delegate.

:meth:`World.apply <absnb.World.apply>` performs one action and returns the
:class:`~absnb.sim.events.Event`.
"""

from __future__ import annotations

from typing import ClassVar

from absnb.core.errors import ActionNotEnabledError, TransferRefusedError
from absnb.sim import enabled, rules
from absnb.sim.actions import Action, Transfer
from absnb.sim.events import Event
from absnb.sim.state import WorldState


class World(WorldState):
    """One state of a simulated job.

    Args:
        job: the job to run (see :mod:`absnb.jobs`).
        protocol: a protocol name (``chandy-lamport``, ``abs``, ``abs-cyclic``,
            ``synchronous``, ``at-least-once``, ``unaligned``, ``abs-timeout``, ``none``) or
            object.
        checkpoint_interval: steps between periodic checkpoints (the schedulers trigger
            them when due); None for checkpoints only on request.
        max_checkpoints: stop triggering after this many (exhaustive exploration).
        allow_deadlock: run ABS Algorithm 1 on a cyclic graph anyway.
        alignment_timeout: with ``abs``, switch to unaligned at a task whose alignment has
            lasted this many steps (protocol ``abs-timeout``, Flink's aligned checkpoint
            timeout).
        checkpoint_timeout: abort a checkpoint still pending this many steps after its
            trigger (Flink's checkpoint timeout); None: never.
        min_pause: steps after a completed checkpoint before the next periodic trigger.
        max_concurrent: checkpoints pending at once (default: the protocol's; None: no
            limit).
        notify_steps: deliver notify-checkpoint-complete to each task as a step of its own
            (:class:`~absnb.sim.actions.Notify`) rather than with the completing step; by
            default when a sink writes to an external system (``Operator.external``).
    """

    carries_external: ClassVar[bool] = False
    """Whether the world's clones and keys carry the external systems its sinks write to
    (each branch of a search its own), so that :func:`~absnb.sim.explore.explore` may
    branch them (:class:`~absnb.labs.two_phase_commit.world.StoreWorld`)."""

    # -- what is enabled (absnb.sim.enabled, absnb.sim.rules) --------------------------------
    # The functions themselves, as methods: the stepper asks at every step.
    enabled_actions = enabled.enabled_actions
    progress_actions = enabled.progress_actions
    can_trigger = rules.can_trigger

    def is_enabled(self, action: Action) -> bool:
        """True when ``action`` can be applied now."""
        return rules.why_not(self, action) is None

    def needs_final_checkpoint(self) -> bool:
        """True when the coordinator decides the final checkpoint is due
        (:meth:`~absnb.CheckpointCoordinator.final_checkpoint_due`):
        the input is consumed, the channels empty and every notification delivered, but
        sinks still hold uncommitted output."""
        ended = (
            self.failed is None
            and not self.notices
            and all(not q for q in self.channels.values())
            and not self.input_remaining()
        )
        return (
            ended
            and self.can_trigger()
            and self.coordinator.final_checkpoint_due(ended, self.uncommitted())
        )

    # -- applying actions (absnb.sim.rules) --------------------------------------------------
    def apply(self, action: Action, *, checked: bool = False) -> Event:
        """Perform ``action`` and return what happened; ``checked``: the caller took it
        from :meth:`enabled_actions` of this very state, so it is not checked again.

        Raises:
            ActionNotEnabledError: the action is not enabled now; the message says why and
                lists what is.
        """
        why = None if checked else rules.why_not(self, action)
        if why is not None:
            options = ", ".join(str(a) for a in self.enabled_actions()) or "nothing"
            refused = type(action) is Transfer and why.startswith("account ")
            raise (TransferRefusedError if refused else ActionNotEnabledError)(
                f"cannot {action} at step {self.clock}: {why}. Enabled now: {options}"
            )
        return rules.perform(self, action)
