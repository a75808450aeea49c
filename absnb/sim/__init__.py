"""The deterministic simulator: world, actions, schedulers, stepper, recovery, checks."""

from absnb.sim.actions import (
    Action,
    Crash,
    DeclineCheckpoint,
    Deliver,
    Emit,
    EndInput,
    Notify,
    Recover,
    Transfer,
    TriggerCheckpoint,
    Wait,
)
from absnb.sim.checks import (
    Deadlock,
    exactly_once,
    find_deadlock,
    reference_output,
    snapshot_problems,
    world_problems,
)
from absnb.sim.events import Event
from absnb.sim.explore import Exploration, explore
from absnb.sim.schedulers import (
    ManualScheduler,
    RandomScheduler,
    RoundRobinScheduler,
    ScriptedScheduler,
)
from absnb.sim.stepper import Stepper
from absnb.sim.world import World

__all__ = [
    "Action",
    "Crash",
    "Deadlock",
    "DeclineCheckpoint",
    "Deliver",
    "Emit",
    "EndInput",
    "Event",
    "Exploration",
    "ManualScheduler",
    "Notify",
    "RandomScheduler",
    "Recover",
    "RoundRobinScheduler",
    "ScriptedScheduler",
    "Stepper",
    "Transfer",
    "TriggerCheckpoint",
    "Wait",
    "World",
    "exactly_once",
    "explore",
    "find_deadlock",
    "reference_output",
    "snapshot_problems",
    "world_problems",
]
