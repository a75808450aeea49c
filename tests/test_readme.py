"""Every command the README gives is one the tests run.

The README's ``bash`` blocks are read line by line: each ``python3 -m absnb ...`` command
is run here through the command line's own entry point (from the repository's top, as a
reader runs it), and must exit as its comment says (0, or the code after "exits");
every other command must be one that ``.ci/run`` runs or that a named test runs. A command
added to the README that nothing runs fails this test.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from absnb.cli import main
from docs.make_picture import PICTURE, picture

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI_RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

OTHER_RUNNERS = {
    # the README's commands that .ci/run does not give verbatim, and what runs them
    "python3 -m absnb run": "test_readme_absnb_commands, as `python3 -m absnb run`",
    "python3 -m absnb bench": "tests/test_experiments.py runs it, at a tiny scale",
}


def _commands() -> list[str]:
    """The command lines of the README's bash blocks, comments stripped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command:
                lines.append(line.strip())
    return lines


def _absnb(line: str) -> tuple[list[str], int]:
    command, _, comment = line.partition("#")
    argv = shlex.split(command)
    assert argv[:3] == ["python3", "-m", "absnb"], line
    exits = re.search(r"exits (\d)", comment)
    return argv[3:], int(exits.group(1)) if exits else 0


ABSNB = [
    line
    for line in _commands()
    if line.startswith("python3 -m absnb ") and not line.startswith("python3 -m absnb bench")
]
"""The README's absnb commands run here (the full bench takes minutes: a test runs it small)."""


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 200
    first = README.splitlines()[3:5]
    assert first == [
        "bash .ci/setup && .venv/bin/python -m absnb run     # new machine: set up, then run"
        " the main job",
        "bash .ci/setup && .venv/bin/python -m pytest        # new machine: set up, then pass"
        " the tests",
    ]


@pytest.mark.parametrize("line", ABSNB, ids=[line.split("#")[0].strip() for line in ABSNB])
def test_readme_absnb_commands(line: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    argv, code = _absnb(line)
    if "--runtime" in argv and "spark" in argv and shutil.which("java") is None:
        pytest.skip("Spark needs Java")
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        got = main(argv)
    assert got == code, printed.getvalue()[-2000:]
    assert printed.getvalue().strip()


def test_every_other_readme_command_is_run_by_ci() -> None:
    def plain(text: str) -> str:
        return " ".join(text.replace(".venv/bin/python", "python3").split())

    ci = plain(CI_RUN)
    others = [line.split("  #")[0].strip() for line in _commands() if line not in ABSNB]
    assert len(others) >= 3, "the README gives its set-up, test and book commands"
    for command in others:
        steps = [plain(step) for step in command.split("&&")]
        for step in steps:
            assert step in ci or step in OTHER_RUNNERS, (
                f"the README's command {step!r} is run neither by .ci/run nor by a test"
            )


def test_the_picture_is_what_its_script_draws() -> None:
    assert PICTURE.read_text(encoding="utf-8") == picture(), (
        "docs/_static/word_count_abs.svg is stale: run `python docs/make_picture.py`"
    )
    assert "aligning 1: 1/2" in picture()


def test_jupyter_lab_command_names_a_notebook_that_exists() -> None:
    for path in re.findall(r"jupyter lab (\S+\.ipynb)", README):
        assert (ROOT / path).is_file(), path
    assert os.path.isfile(ROOT / "docs" / "make_picture.py")
