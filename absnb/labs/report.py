"""What a lab's check gives back: a report per part, and the counterexample of a failure.

:class:`LabReport` prints as text (``print(report)``) and shows as HTML in a notebook;
:meth:`LabReport.stepper` opens the stepper widget at the start of the counterexample:
Step walks to the bug, one step of the shortest run at a time.

The report speaks the language set (:func:`absnb.set_language`), through the catalogs: its
verdict, parts, statuses and headings where it is shown, the counterexample's sentences and
steps when the check finds them. What a part found in detail (a scripted case's steps and
differences, a random run's description, a search's bounds, the consistency check's
finding) is in English.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from absnb.core.job import Job
from absnb.i18n import N_
from absnb.i18n import gettext as _
from absnb.sim.actions import Action
from absnb.sim.schedulers import RandomScheduler, ScriptedScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World

if TYPE_CHECKING:
    from absnb.operators.base import Operator
    from absnb.protocols.base import BarrierHandler
    from absnb.views.widgets import StepperWidget

Status = Literal["passed", "failed", "not implemented", "not run", "skipped"]

MARKS: dict[str, str] = {
    "passed": "✔",
    "failed": "✘",
    "not implemented": "…",
    "not run": "-",
    "skipped": "-",
}
STATUSES: dict[str, str] = {
    "passed": N_("passed"),
    "failed": N_("failed"),
    "not implemented": N_("not implemented"),
    "not run": N_("not run"),
    "skipped": N_("skipped"),
}
"""Each status as shown (translated where shown)."""
COLOURS: dict[str, str] = {
    "passed": "#1a7f37",
    "failed": "#c03c00",
    "not implemented": "#9a6700",
    "not run": "#6e7781",
    "skipped": "#6e7781",
}


@dataclass(frozen=True)
class Counterexample:
    """A shortest run of the simulator that shows a bug.

    Attributes:
        job: the job it runs.
        handler_class: the handler under check.
        actions: the schedule, step by step (replayed by a scripted scheduler).
        problem: what the check found at the end of it, as the checker says it.
        words: what happened, sentence by sentence: which task, which channel, which
            record crossed which cut, and what the decision did wrong.
        steps: each step as the trace log writes it.
        how: how it was found (the search and its bounds).
        make_world: makes the world the schedule starts from (the search's, with the
            handler under check).
        max_checkpoints: the checkpoints the world allows (the search's bound).
    """

    job: Job
    handler_class: type[BarrierHandler] | type[Operator]
    actions: tuple[Action, ...]
    problem: str
    words: tuple[str, ...]
    steps: tuple[str, ...]
    how: str
    make_world: Callable[[], World]
    max_checkpoints: int | None = 1

    def world(self) -> World:
        """The world the schedule starts from."""
        return self.make_world()

    def replay(self) -> Stepper:
        """A stepper that has taken every step of the schedule (``back()`` undoes them)."""
        stepper = self.start()
        stepper.run()
        return stepper

    def start(self) -> Stepper:
        """A stepper at the start of the schedule, which its scheduler plays step by step;
        past its end (or once a step taken by hand leaves it) a seeded random scheduler goes
        on, so that a student sees what follows the bug."""
        then = RandomScheduler(seed=0)
        return Stepper(self.world(), ScriptedScheduler(self.actions, then=then))

    def stepper(self, *, timeline: bool = True) -> StepperWidget:
        """The stepper widget at the start of the schedule: Step walks to the bug, one step
        of the shortest run at a time."""
        from absnb.views.widgets import StepperWidget

        return StepperWidget(self.start(), timeline=timeline)

    def lines(self) -> list[str]:
        head = _("Shortest run that shows it: {steps} steps of job {job} ({how})").format(
            steps=len(self.actions), job=repr(self.job.graph.name), how=self.how
        )
        return [
            head,
            *(f"  {w}" for w in self.words),
            "  " + _("The steps:"),
            *(f"    {s}" for s in self.steps),
        ]

    def __str__(self) -> str:
        return "\n".join(self.lines())


@dataclass
class PartResult:
    """One part of a check.

    Attributes:
        part: its letter and name (``a. scripted cases``).
        status: passed, failed, not implemented, not run (not asked for, or an earlier
            part failed) or skipped (it cannot run here: part d without Java).
        summary: one line: what ran, and what it found.
        details: the lines of a failure (the case, what differs) or a pass.
        seconds: how long it took.
    """

    part: str
    status: Status
    summary: str
    details: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        head = f"{MARKS[self.status]} {_(self.part)}: {self.shown_status()}: {_(self.summary)}"
        return [head, *(f"    {d}" for d in self.details)]

    def shown_status(self) -> str:
        """The status in the language set, and how long the part took if it ran."""
        took = f" ({self.seconds:.1f} s)" if self.status in ("passed", "failed") else ""
        return _(STATUSES[self.status]) + took


@dataclass
class LabReport:
    """What :func:`absnb.labs.check <absnb.labs.grade.check>` found, part by part.

    Attributes:
        lab: the lab's name (``abs``).
        handler: the name of the class checked.
        parts: each part, in the order run (those after a failure are "not run").
        counterexample: the shortest run of the simulator that shows the failure, when one
            does.
    """

    lab: str
    handler: str
    parts: list[PartResult]
    counterexample: Counterexample | None = None

    @property
    def passed(self) -> bool:
        """Every part that ran passed, and none failed or is not implemented."""
        return all(p.status in ("passed", "not run", "skipped") for p in self.parts) and any(
            p.status == "passed" for p in self.parts
        )

    @property
    def failed_part(self) -> PartResult | None:
        """The part that failed or is not implemented (the check stopped there)."""
        return next((p for p in self.parts if p.status in ("failed", "not implemented")), None)

    def stepper(self, *, timeline: bool = True) -> StepperWidget:
        """The stepper widget at the counterexample, where the bug shows.

        Raises:
            ValueError: the check found no run of the simulator that shows a bug.
        """
        if self.counterexample is None:
            raise ValueError(
                f"{self.handler} has no counterexample to step through: "
                + (
                    "every part passed"
                    if self.passed
                    else "the failure shows on Spark only, not in a run of the simulator"
                    if self.failed_part is not None and self.failed_part.part.startswith("d.")
                    else "the failure shows in the scripted cases, not in a run of the simulator"
                )
            )
        return self.counterexample.stepper(timeline=timeline)

    def verdict(self) -> str:
        """One sentence: passes, is not finished (what is missing), or fails which part."""
        failed = self.failed_part
        if failed is None:
            return _("{handler} passes the {lab} lab.").format(handler=self.handler, lab=self.lab)
        if failed.status == "not implemented":
            return _("{handler} is not finished: {missing}").format(
                handler=self.handler, missing=failed.summary
            )
        return _("{handler} fails part {part}.").format(handler=self.handler, part=_(failed.part))

    def title(self) -> str:
        """``Lab abs: MyAbs``, in the language set."""
        return _("Lab {lab}: {handler}").format(lab=self.lab, handler=self.handler)

    def lines(self) -> list[str]:
        out = [self.title(), self.verdict()]
        for p in self.parts:
            out.extend(p.lines())
        if self.counterexample is not None:
            out.extend(self.counterexample.lines())
            out.append(_("report.stepper() opens the stepper at its start: Step walks to the bug."))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = []
        for p in self.parts:
            colour = COLOURS[p.status]
            details = "".join(f"<li>{html.escape(d)}</li>" for d in p.details)
            rows.append(
                f"<tr><td style='color:{colour};font-weight:bold;text-align:left'>"
                f"{MARKS[p.status]} {html.escape(_(p.part))}</td>"
                f"<td style='text-align:left'>{html.escape(p.shown_status())}: "
                f"{html.escape(_(p.summary))}"
                + (f"<ul style='margin:2px 0'>{details}</ul>" if details else "")
                + "</td></tr>"
            )
        body = (
            f"<p><b>{html.escape(self.title())}</b>. "
            f"{html.escape(self.verdict())}</p><table>{''.join(rows)}</table>"
        )
        c = self.counterexample
        if c is not None:
            first, *rest = c.lines()
            body += f"<p><b>{html.escape(first)}</b></p><pre>" + html.escape("\n".join(rest))
            hint = html.escape(
                _("report.stepper() opens the stepper at its start: Step walks to the bug.")
            )
            body += "</pre><p>" + hint.replace("report.stepper()", "<code>report.stepper()</code>")
            body += "</p>"
        return body
