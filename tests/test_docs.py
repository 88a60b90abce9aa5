"""The README is the first screen and the quickest paths; the rest is the site in docs/ (`make docs`, strict in CI).

mkdocs checks the site's own links and anchors; these tests check what it does not read: the README's length, its
two commands, and its links into the repository (GitHub renders them, so a moved page must not leave one dangling).
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def _slug(heading):
    """The anchor a heading gets: GitHub's rule, which the site's toc (pymdownx.slugs, lower case) follows too."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(markdown):
    anchors, in_code = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def test_readme_is_a_first_screen():
    assert len(README.splitlines()) <= 300
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make app", "make test"]


@pytest.mark.parametrize("target", sorted({m for m in LINK.findall(README) if not m.startswith("http")}))
def test_readme_links_resolve(target):
    path, _, anchor = target.partition("#")
    file = ROOT / path if path else ROOT / "README.md"
    assert file.is_file(), f"README links to {path}, which is not in the repository"
    if anchor:
        assert anchor in _anchors(file.read_text(encoding="utf-8")), f"{path} has no heading #{anchor}"


class _Loader(yaml.SafeLoader):
    """mkdocs.yml names a Python function for the toc's slugs; reading the nav needs none of it."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _nav_pages(nav):
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _nav_pages(value)
        else:
            yield value


def test_every_page_is_in_the_site():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert config["strict"] is True
    pages = set(_nav_pages(config["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == pages, f"pages left out of the nav: {on_disk - pages}; in the nav, missing: {pages - on_disk}"
