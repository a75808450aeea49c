"""The wheel brings the course anywhere: built from the repository, installed into a fresh
virtual environment outside it, it runs ``absnb run``, writes the course with ``absnb
notebooks``, and the notebooks that read its shipped files pass nbval there: 00 (which lists
them), 01 (the bank's CSVs), 02 (the texts, on Spark where Java is) and the labs. Notebooks
03-07 read nothing the others do not, and their one execution is the browser test's.

The fresh environment gets absnb from the wheel alone; its dependencies are the test
environment's, seen through a ``.pth`` line (which adds a path and loads no editable
finder), so nothing is downloaded but the wheel's build backend. The notebooks run in one
nbval session there (:func:`nbval_outcomes`), each test reading its notebooks' outcomes.
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "absnb",
    "datasets",
    "notebooks",
)
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "_course", ".ipynb_checkpoints")


def _run(*argv: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment outside the repository with absnb installed from its wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCE:
        from_ = ROOT / name
        if from_.is_dir():
            shutil.copytree(from_, src / name, ignore=SKIP)
        else:
            shutil.copy2(from_, src / name)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", src, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("absnb-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-deps",
        wheel,
        cwd=tmp,
    )
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp)
    deps = Path(purelib.stdout.strip()) / "absnb_test_dependencies.pth"
    deps.write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


LANGS = ("ko", "zh")
OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
"""The first word of pytest's ``-rA`` summary lines."""


@pytest.fixture(scope="module")
def nbval_outcomes(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """nbval in the installed environment, once, over every notebook the tests below check,
    in a course the installed ``absnb notebooks`` wrote in English, Korean and Chinese: the
    outcomes of each notebook's items, by its path under the course's ``notebooks/``
    (a nbval session of its own per language cost a pytest and its imports each)."""
    where = tmp_path_factory.mktemp("course")
    for lang in ("en", *LANGS):
        _run(installed / "bin" / "absnb", "notebooks", "course", "--lang", lang, cwd=where)
    books = where / "course" / "notebooks"
    chosen = ["00", "01", "02"] if shutil.which("java") else ["00", "01"]
    notebooks = [next(books.glob(f"{n}_*.ipynb")) for n in chosen]
    notebooks += sorted((books / "labs").glob("*.ipynb"))
    notebooks += [books / lang / "00_start_here.ipynb" for lang in LANGS]
    done = subprocess.run(
        [
            installed / "bin" / "python", "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
            "-p", "no:xdist", "--nbval", "--nbval-current-env", "--nbval-sanitize-with",
            books / "nbval_sanitize.cfg", *notebooks,
        ],
        cwd=books, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode in (0, 1), said  # 1: some item failed, which its test says
    outcomes: dict[str, list] = {str(n.relative_to(books)): [] for n in notebooks}
    for line in done.stdout.splitlines():
        word, _, node = line.partition(" ")
        if word in OUTCOMES:
            name = node.split("::", 1)[0].split(" - ", 1)[0]
            outcomes.setdefault(name, []).append((word, line))
    return outcomes


def assert_nbval_passed(outcomes: dict[str, list], *notebooks: str) -> None:
    """Every item of each of ``notebooks`` passed or was skipped, and one at least passed."""
    for notebook in notebooks:
        words = [word for word, _ in outcomes[notebook]]
        assert "PASSED" in words, (notebook, outcomes[notebook])
        assert set(words) <= {"PASSED", "SKIPPED"}, [
            line for word, line in outcomes[notebook] if word not in ("PASSED", "SKIPPED")
        ]


def test_the_wheel_carries_the_course_and_runs_outside_the_repository(
    installed: Path, tmp_path: Path
) -> None:
    python, absnb = installed / "bin" / "python", installed / "bin" / "absnb"
    where = _run(python, "-c", "import absnb; print(absnb.__file__)", cwd=tmp_path).stdout
    assert Path(where.strip()).is_relative_to(installed), where
    run = _run(absnb, "run", cwd=tmp_path).stdout
    assert "every completed snapshot is consistent" in run
    wrote = _run(absnb, "notebooks", cwd=tmp_path).stdout
    assert "open it with: jupyter lab absnb-notebooks/notebooks/00_start_here.ipynb" in wrote
    course = tmp_path / "absnb-notebooks"
    shipped = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (course / "notebooks").glob("*.ipynb")) == shipped
    for notebook in shipped:
        assert (course / "notebooks" / notebook).read_bytes() == (
            ROOT / "notebooks" / notebook
        ).read_bytes()
    labs = sorted((ROOT / "notebooks" / "labs").glob("*.ipynb"))
    assert labs
    for lab in labs:
        assert (course / "notebooks" / "labs" / lab.name).read_bytes() == lab.read_bytes()
    assert "the labs, where you write the protocols: absnb-notebooks/notebooks/labs" in wrote
    replayed = _run(
        absnb, "replay", course / "datasets" / "traces" / "seed_001.jsonl", cwd=tmp_path
    )
    assert "checkpoint 1: triggered at step 1, complete at step 8" in replayed.stdout


@pytest.mark.parametrize("lang", LANGS)
def test_the_wheel_carries_the_course_in_korean_and_chinese(
    installed: Path, nbval_outcomes: dict[str, list], tmp_path: Path, lang: str
) -> None:
    """``absnb notebooks --lang`` writes the translated course, and the installed catalogs
    translate the widgets (the wheel carries ``absnb/locales``); its first notebook passes
    nbval where the installed absnb wrote it (:func:`nbval_outcomes`)."""
    python, absnb = installed / "bin" / "python", installed / "bin" / "absnb"
    wrote = _run(absnb, "notebooks", "course", "--lang", lang, cwd=tmp_path).stdout
    assert f"open it with: jupyter lab course/notebooks/{lang}/00_start_here.ipynb" in wrote
    shipped = sorted((ROOT / "notebooks" / lang).glob("*.ipynb"))
    assert len(shipped) == 8
    for notebook in shipped:
        copy = tmp_path / "course" / "notebooks" / lang / notebook.name
        assert copy.read_bytes() == notebook.read_bytes()
    # the labs in the language, in labs/ beside its chapters (where notebook 00 links them)
    labs = sorted((ROOT / "notebooks" / lang / "labs").glob("*.ipynb"))
    assert [lab.name for lab in labs] == sorted(
        lab.name for lab in (ROOT / "notebooks" / "labs").glob("*.ipynb")
    )
    for lab in labs:
        copy = tmp_path / "course" / "notebooks" / lang / "labs" / lab.name
        assert copy.read_bytes() == lab.read_bytes()
    assert f"the labs, where you write the protocols: course/notebooks/{lang}/labs" in wrote
    step = _run(
        python, "-c", f"import absnb; absnb.set_language({lang!r}); "
        "from absnb.i18n import gettext; print(gettext('Step ▶'))", cwd=tmp_path,
    ).stdout.strip()  # fmt: skip
    assert step
    assert step != "Step ▶"
    assert_nbval_passed(nbval_outcomes, f"{lang}/00_start_here.ipynb")


def test_the_notebooks_reading_shipped_files_pass_nbval_in_the_installed_course(
    nbval_outcomes: dict[str, list],
) -> None:
    chosen = ["00", "01", "02"] if shutil.which("java") else ["00", "01"]
    notebooks = [next((ROOT / "notebooks").glob(f"{n}_*.ipynb")).name for n in chosen]
    labs = sorted(f"labs/{p.name}" for p in (ROOT / "notebooks" / "labs").glob("*.ipynb"))
    assert labs
    assert_nbval_passed(nbval_outcomes, *notebooks, *labs)
