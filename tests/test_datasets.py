"""The shipped samples: regenerating them gives the same bytes; the loaders' shapes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import absnb
from absnb import datasets
from absnb.core.errors import AbsnbError, DatasetNotFoundError

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
MAKERS = {
    "make_text.py": [
        "text/small/part-0.txt",
        "text/small/part-1.txt",
        *(f"text/large/part-{i}.txt" for i in range(4)),
    ],
    "make_bank.py": ["bank/accounts.csv", "bank/transfers.csv"],
    "make_numbers.py": ["numbers.txt"],
}


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_regenerating_gives_identical_bytes(maker, tmp_path):
    subprocess.run(
        [sys.executable, str(DATASETS / maker), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert files_under(tmp_path) == set(MAKERS[maker])
    for name in MAKERS[maker]:
        assert (tmp_path / name).read_bytes() == (DATASETS / name).read_bytes(), name


def test_another_seed_gives_other_samples(tmp_path):
    subprocess.run(
        [sys.executable, str(DATASETS / "make_bank.py"), str(tmp_path), "--seed", "2"],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "bank/accounts.csv").read_bytes() == (
        DATASETS / "bank/accounts.csv"
    ).read_bytes()
    assert (tmp_path / "bank/transfers.csv").read_bytes() != (
        DATASETS / "bank/transfers.csv"
    ).read_bytes()


def test_the_loader_finds_the_repository_folder(monkeypatch):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    assert datasets.datasets_dir().resolve() == DATASETS


def test_text_partitions():
    small = datasets.text_partitions()
    assert [len(part) for part in small] == [5, 5]
    assert small[0][0] == "to be or not to be that is the question"
    large = datasets.text_partitions("large")
    assert [len(part) for part in large] == [500, 500, 500, 500]
    for part in (*small, *large):
        for line in part:
            assert line == line.strip().lower()
            assert line.split(), "no empty lines"
    assert datasets.text_names() == ["large", "small"]
    job = absnb.word_count(lines=small)
    assert len(job.graph.tasks_of("source")) == 2


def test_bank():
    accounts = datasets.bank_accounts()
    assert accounts == {"A": 10_000, "B": 5_000, "C": 8_000, "D": 2_000}
    transfers = datasets.bank_transfers()
    assert len(transfers) == 40
    balances = dict(accounts)
    for src, dst, amount in transfers:
        assert src != dst
        assert {src, dst} <= set(accounts)
        assert isinstance(amount, int)
        assert 100 <= amount <= 1_000
        assert amount % 100 == 0
        balances[src] -= amount
        balances[dst] += amount
        assert balances[src] >= 0, "applied in file order, no account is overdrawn"
    assert sum(balances.values()) == sum(accounts.values())


def test_numbers():
    numbers = datasets.numbers()
    assert len(numbers) == 16
    assert len(set(numbers)) == 16
    assert all(isinstance(n, int) and 2 <= n <= 40 for n in numbers)
    assert absnb.cyclic(numbers=numbers).params["numbers"] == numbers


def test_the_environment_variable_chooses_the_folder(monkeypatch, tmp_path):
    subprocess.run(
        [sys.executable, str(DATASETS / "make_numbers.py"), str(tmp_path), "--seed", "5"],
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    assert datasets.datasets_dir() == tmp_path
    shipped = [int(n) for n in (DATASETS / "numbers.txt").read_text().split()]
    assert len(datasets.numbers()) == 16
    assert datasets.numbers() != shipped


def test_a_missing_sample_says_how_to_regenerate_it(monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    with pytest.raises(DatasetNotFoundError, match=r"make_bank\.py") as info:
        datasets.bank_transfers()
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, AbsnbError)
    assert str(tmp_path) in str(info.value)
    with pytest.raises(DatasetNotFoundError, match=r"make_text\.py"):
        datasets.text_partitions()
    with pytest.raises(DatasetNotFoundError, match=r"make_numbers\.py"):
        datasets.numbers()


def test_an_unknown_text_sample_lists_the_known_ones():
    with pytest.raises(DatasetNotFoundError, match="large, small"):
        datasets.text_partitions("medium")


def test_an_environment_variable_naming_no_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(DatasetNotFoundError, match=datasets.ENV_VAR):
        datasets.datasets_dir()


def test_another_packages_datasets_folder_is_not_taken(monkeypatch, tmp_path):
    # A non-editable install: absnb in site-packages next to e.g. Hugging Face's datasets/.
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("")
    monkeypatch.setattr(datasets, "_candidates", lambda: [tmp_path / "datasets"])
    with pytest.raises(DatasetNotFoundError, match=datasets.ENV_VAR):
        datasets.datasets_dir()


def test_a_notebook_in_a_checkout_finds_the_folder_above_it(monkeypatch, tmp_path):
    # absnb installed non-editable (as on Binder), the notebook running in notebooks/.
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    site = tmp_path / "site-packages"
    (site / "absnb").mkdir(parents=True)
    (site / "datasets").mkdir()  # someone else's package of that name
    monkeypatch.setattr(datasets, "__file__", str(site / "absnb" / "datasets.py"))
    checkout = tmp_path / "checkout"
    (checkout / "notebooks").mkdir(parents=True)
    (checkout / "datasets").mkdir()
    for script in ("make_text.py", "_cli.py"):
        shutil.copy(DATASETS / script, checkout / "datasets")
    subprocess.run(
        [sys.executable, str(checkout / "datasets" / "make_text.py")],
        check=True,
        capture_output=True,
    )
    monkeypatch.chdir(checkout / "notebooks")
    assert datasets.datasets_dir() == checkout.resolve() / "datasets"
    assert [len(part) for part in datasets.text_partitions()] == [5, 5]
