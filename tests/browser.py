"""Pages opened in a real browser: headless Chromium (Debian's chromium package) driven by Playwright.

Skips without them, unless SYMGRAD_REQUIRE_TOOLS=1 (as in CI), where a missing browser fails the test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from tools import require_tool

# What a page must not have: an element wider than the window (KaTeX's MathML for screen readers is hidden, clipped
# to one pixel, and not counted), a KaTeX error, or a request for anything but the page and data: URLs.
INSPECT = """() => {
  const wide = [...document.querySelectorAll("body *")]
    .filter(e => !e.closest(".katex-mathml") && e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map(e => e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? "." + e.className : ""));
  return {
    formulas: document.querySelectorAll(".math .katex").length,
    untypeset: [...document.querySelectorAll(".math")].filter(e => !e.querySelector(".katex")).length,
    errors: [...document.querySelectorAll(".katex-error")].map(e => e.title),
    svgs: document.querySelectorAll("figure.graph svg").length,
    wide: wide.slice(0, 5),
    scrollWidth: document.documentElement.scrollWidth,
    width: window.innerWidth,
  };
}"""


def chromium() -> str:
    require_tool("chromium", "chromium")
    return shutil.which("chromium") or ""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("SYMGRAD_REQUIRE_TOOLS") == "1":
            pytest.fail("playwright is not installed (pip install -e '.[test]')", pytrace=False)
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as driver:
        # --no-sandbox: Chromium's sandbox cannot start as root, which CI runs as
        launched = driver.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class Opened:
    """A page in a 1000 px wide window, with the requests it made and the errors its scripts raised."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1000, "height": 800})
        self.requests: list[str] = []
        self.script_errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.script_errors.append(str(error)))

    def inspect(self) -> dict[str, Any]:
        return self.page.evaluate(INSPECT)

    def close(self) -> None:
        self.page.close()
