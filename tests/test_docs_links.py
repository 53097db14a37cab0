"""The repository describes itself: no file refers to documents outside it, and the
README's and docs/'s links and file paths point at files that exist."""
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# References to documents that are not in the repository. (Spelled in pieces so that this
# file does not match itself.)
OUTSIDE = [
    ("../" + "shared", re.compile(re.escape("../" + "shared"))),
    ("SEED" + "_NOTES", re.compile("SEED" + "_NOTES")),
    ("LOWERING" + ".md", re.compile(re.escape("LOWERING" + ".md"))),
    ("ARCHITECTURE" + ".md", re.compile(re.escape("ARCHITECTURE" + ".md"))),
    ("founding " + "chapter", re.compile("founding" + r"\s+" + "chapter", re.I)),
    ("founding " + "essay", re.compile("founding" + r"\s+" + "essay", re.I)),
]

_SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "__pycache__", ".hypothesis",
              ".pytest_cache", "node_modules"}


def _tracked_files():
    """The repository's files: git's list in a checkout, else a walk of the tree."""
    if (ROOT / ".git").exists():
        try:
            out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                 check=True, timeout=60).stdout
            return [ROOT / p for p in out.decode().split("\0") if p]
        except (OSError, subprocess.SubprocessError):
            pass
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames
                       if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
        files += [pathlib.Path(dirpath) / f for f in filenames]
    return files


def _text(path):
    try:
        data = path.read_bytes()
    except OSError:     # listed by git but deleted in the work tree
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_no_reference_to_files_outside_the_repository():
    found = []
    for path in _tracked_files():
        text = _text(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, pattern in OUTSIDE:
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{lineno}: {what}")
    assert not found, "references to documents outside the repository:\n" + "\n".join(found)


# ----------------------------------------------------------------- links in the docs

DOC_FILES = [ROOT / "README.md", ROOT / "HACKING.md"] + sorted((ROOT / "docs").glob("*.md"))


def _prose(text):
    """``text`` without fenced code blocks (links are not links there)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _slug(heading):
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(path):
    text = _prose(path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M)}


def test_doc_files_exist():
    assert (ROOT / "README.md").is_file() and len(DOC_FILES) > 3


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(doc):
    text = _prose(doc.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)          # inline code is not a link
    bad = []
    for m in re.finditer(r"\[[^\]\n]*\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):     # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    assert not bad, f"{doc.relative_to(ROOT)}: broken links:\n" + "\n".join(bad)


_TOP = ("xform", "interpreters", "primitives", "lowering", "tests", "benchmarks",
        "notebooks", "docs")
_PATH = re.compile(r"^(?:%s)/[\w./-]*$" % "|".join(_TOP))


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_file_paths_named_in_the_docs_exist(doc):
    """A repository path written as code (`lowering/mlir.py`,
    `tests/test_foo.py::test_bar`) names a file or folder that exists."""
    text = doc.read_text(encoding="utf-8")
    bad = []
    for m in re.finditer(r"`([^`\n]+)`", text):
        token = m.group(1).split("::")[0]
        if _PATH.match(token) and not (ROOT / token).exists():
            bad.append(token)
    assert not bad, f"{doc.relative_to(ROOT)} names missing paths: {sorted(set(bad))}"
