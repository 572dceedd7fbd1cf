"""README's run-directory table is what a run writes: a smoke run through the real CLI, its directory
listed, compared with the table both ways (an entry whose text starts with "only" is optional)."""
import re

from conftest import REPO, run_coevo


def table_entries() -> list[tuple[str, bool]]:
    """(path pattern, optional) of each row of README's `| file | what |` table."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index("| file | what |")
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cell, what = [c.strip() for c in line.strip("|").split("|", 1)]
        out.append((cell.strip("`"), what.startswith("only")))
    return out


def pattern(entry: str) -> re.Pattern:
    """`checkpoints/round-N/<role>.pt/` -> a regex matching that path and everything under it."""
    rx = re.escape(entry)
    rx = re.sub(r"-N\b", r"-\\d+", rx)
    rx = re.sub(r"<[a-z]+>", "[^/]+", rx)
    return re.compile(rx if entry.endswith("/") else rx + "$")


def written(run_dir) -> set[str]:
    return {str(p.relative_to(run_dir)) + ("/" if p.is_dir() else "") for p in run_dir.rglob("*")}


def test_table_lists_what_a_run_writes(tmp_path):
    run = tmp_path / "run"
    run_coevo("run", "--budget", "smoke", "--out", str(run), "-q")
    paths = written(run)
    entries = table_entries()
    assert {"config.yaml", "ledger.duckdb", "tensorboard/", "adapters/<role>-v<k>/"} <= {e for e, _ in entries}
    covered = set()
    for entry, optional in entries:
        hits = {p for p in paths if pattern(entry).match(p)}
        assert hits or optional, f"README lists {entry!r}, the run wrote nothing that matches it"
        for h in hits:  # the entry's own paths and the folders that hold them
            parts = h.rstrip("/").split("/")
            covered |= {h} | {"/".join(parts[:i]) + "/" for i in range(1, len(parts))}
    assert sorted(paths - covered) == [], "the run wrote paths README's table does not list"
    assert [e for e, optional in entries if optional] == ["adapters/<role>-v<k>/", "run.lock", "resumes.jsonl"]
