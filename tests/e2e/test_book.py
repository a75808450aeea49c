"""The book as a reader opens it: the home page and a notebook chapter, drawn whole, in
English, Korean and Chinese, with a switch to the same page in the other languages.

The book is built from the repository (as `.ci/run` builds it, the Korean and Chinese books
in its ko/ and zh/ folders) into a temporary folder, or taken from the folder
``ABSNB_BOOK`` names (`.ci/run` sets it to the book it has just built), and
served on loopback and opened in Debian's chromium at a projector's 1280x720. Every picture
of the page must be drawn (an ``<img>`` loaded with a size, an inline ``<svg>`` with a
box), and a chapter must show as many pictures as its notebook stores.
``ABSNB_SCREENSHOTS=DIR`` keeps the screenshots (1280x720 and 1920x1080) for a person to
look at. Without chromium or playwright the test skips, unless ABSNB_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.stored_outputs import expected_pictures
from tests.e2e.test_lab import CHROMIUM, CHROMIUM_ARGS, missing_tools, skip_or_fail

ROOT = Path(__file__).resolve().parents[2]

DRAWN = """() => {
  const imgs = [...document.querySelectorAll('article img')];
  const svgs = [...document.querySelectorAll('article svg')].filter(
    s => !s.closest('a, button, .headerlink, label'));
  return {
    images: imgs.length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0 && i.naturalHeight > 0))
      .map(i => (i.getAttribute('src') || '').slice(0, 60)),
    svgs: svgs.length,
    empty_svgs: svgs.filter(s => { const b = s.getBoundingClientRect();
      return b.width === 0 || b.height === 0; }).length,
  };
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves the built book without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


LANGUAGES = (("en", "."), ("ko", "ko"), ("zh_CN", "zh"))
"""The book's languages and the folder of each in the built book."""


def _built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book in three languages: the one ``ABSNB_BOOK`` names (the folder `.ci/run` has
    just built from this checkout, so it is not built twice), else built here."""
    given = os.environ.get("ABSNB_BOOK")
    if given:
        out = Path(given).resolve()
        missing = [f for _, f in LANGUAGES if not (out / f / "index.html").is_file()]
        assert not missing, (
            f"ABSNB_BOOK={given} is not a built book: no index.html in "
            f"{', '.join(missing)}; build it as .ci/run does, or unset ABSNB_BOOK"
        )
        return out
    out = tmp_path_factory.mktemp("book")
    build = [sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-n", "-b", "html"]
    for language, folder in LANGUAGES:
        done = subprocess.run(
            [*build, "-D", f"language={language}", "docs", str(out / folder)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"the {language} book does not build:\n{done.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The book built from the repository and served on loopback; yields its base URL."""
    missing = [m for m in missing_tools() if not m.startswith("jupyterlab")]
    if missing:
        skip_or_fail("the book's browser test needs " + ", ".join(missing))
    out = _built_book(tmp_path_factory)
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    ("page", "notebook"),
    [
        ("index.html", None),
        ("notebooks/02_abs_word_count.html", "02_abs_word_count.ipynb"),
        ("ko/notebooks/00_start_here.html", "ko/00_start_here.ipynb"),
        ("zh/notebooks/02_abs_word_count.html", "zh/02_abs_word_count.ipynb"),
    ],
)
def test_the_book_draws_its_pictures(book: str, page: str, notebook: str | None) -> None:
    from playwright.sync_api import sync_playwright

    shots = os.environ.get("ABSNB_SCREENSHOTS")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for width, height in ((1280, 720), (1920, 1080)):
                tab = browser.new_page(viewport={"width": width, "height": height})
                tab.goto(f"{book}/{page}", wait_until="load")
                assert tab.title(), page
                drawn = tab.evaluate(DRAWN)
                assert drawn["broken"] == [], f"{page}: pictures not drawn: {drawn['broken']}"
                assert drawn["empty_svgs"] == 0, f"{page}: {drawn}"
                if notebook is not None:
                    stored = sum(expected_pictures(ROOT / "notebooks" / notebook))
                    assert drawn["images"] + drawn["svgs"] >= stored >= 2, drawn
                    assert "Error displaying widget" not in tab.inner_text("article")
                if shots:
                    name = page.replace("/", "_").replace(".html", "")
                    tab.screenshot(path=str(Path(shots) / f"book_{name}_{width}.png"))
                    if drawn["images"]:
                        tab.locator("article img").first.scroll_into_view_if_needed()
                        tab.screenshot(path=str(Path(shots) / f"book_{name}_{width}_img.png"))
                tab.close()
        finally:
            browser.close()


SCRIPTS = {"ko": "[\\uac00-\\ud7a3]", "zh": "[\\u4e00-\\u9fff]"}


def test_every_page_switches_to_the_same_page_in_the_other_languages(book: str) -> None:
    """From a guide page in English to Korean, to Chinese and back, by the sidebar's
    links: the same page each time, in its language (its ``lang`` and its words)."""
    import re

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 720})
            tab.goto(f"{book}/guide/python.html", wait_until="load")
            for name, folder, lang in (("한국어", "ko", "ko"), ("中文", "zh", "zh-CN")):
                tab.locator(".absnb-languages a", has_text=name).click()
                tab.wait_for_load_state("load")
                assert tab.url.endswith(f"/{folder}/guide/python.html"), tab.url
                assert tab.evaluate("document.documentElement.lang") == lang
                heading = tab.inner_text("article h1")
                assert re.search(SCRIPTS[folder], heading), heading
            tab.locator(".absnb-languages a", has_text="English").click()
            tab.wait_for_load_state("load")
            assert tab.url == f"{book}/guide/python.html"
            assert tab.inner_text("article h1").startswith("In Python")
        finally:
            browser.close()
