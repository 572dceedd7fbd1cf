"""Citations a reader can look up: no pointer to documents the repository does not ship.

The code and docs cite sources by the short names of docs/references.md ("R-Zero §2.2",
"RGBC proposal §method step 3", "False Frontiers §2.3"), never by the internal seed numbers
("seed 000") or the private digest ("SPEC §2").
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "docs" / "references.md"
FORBIDDEN = re.compile(r"seed[ -]00\d|SPEC §", re.IGNORECASE)
# "<Name> §...": one or more capitalised words, optionally followed by "proposal" (RGBC proposal)
# Files another part of issue 20 is rewording at the same time; drop an entry once it is clean.
PENDING: set[str] = set()
CITED = re.compile(r"\b((?:[A-Z][A-Za-z0-9.\-]*[A-Za-z0-9])(?: [A-Z][A-Za-z0-9.\-]*[A-Za-z0-9])*(?: proposal)?) §")


def _code():
    return [p for p in sorted((ROOT / "coevo").rglob("*.py"))
            if "__pycache__" not in p.parts and str(p.relative_to(ROOT)) not in PENDING]


def _scanned():
    return _code() + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def test_no_seed_or_spec_citations():
    hits = []
    for path in _scanned():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert not hits, "cite the short names of docs/references.md instead:\n" + "\n".join(hits)


def test_cited_short_names_are_defined():
    refs = REFERENCES.read_text(encoding="utf-8")
    missing = {}
    for path in _code():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in CITED.findall(line):
                if name not in refs:
                    missing.setdefault(name, f"{path.relative_to(ROOT)}:{i}")
    assert not missing, "short names cited but not in docs/references.md:\n" + "\n".join(
        f"{name} (first at {where})" for name, where in sorted(missing.items()))


def test_references_names_the_sources():
    refs = REFERENCES.read_text(encoding="utf-8")
    for name in ("R-Zero", "SynCo", "RGBC proposal", "VG-OPD", "CASA proposal", "Dr. Zero", "False Frontiers",
                 "Search-R1", "FlashRAG", "verl", "arXiv:2610.11345", "arXiv:2609.15404", "arXiv:2508.05004"):
        assert name in refs, name
