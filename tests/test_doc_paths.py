"""Every file of this repository that README.md and docs/*.md name exists (a moved module leaves no
stale path behind). Paths of other projects (Search-R1, verl) are listed with their project."""
import re

from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PATH = re.compile(r"(?<![\w/.-])((?:coevo|tests|docs|examples|scripts|\.ci)/[\w./+-]*[\w/])")
# named as files of other projects (the doc says whose), or not a path (a TensorBoard tag)
OUTSIDE = {"scripts/data_process/nq_search.py", "scripts/data_process/qa_search_test_merge.py",  # Search-R1
           "examples/quick_start/dataset/nq/test.jsonl", "examples/quick_start/indexes/sample_data.jsonl",
           "docs/retriever.md",  # Search-R1
           "examples/reward_function/caller_penalty.py", "scripts/main.sh",  # verl / its forks
           "docs/sglang_multiturn/sandbox_fusion.rst",  # verl
           "coevo/logged_step"}  # TensorBoard tag (docs/tracking.md)


def named_paths():
    for doc in DOCS:
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            for m in PATH.finditer(line):
                if line[m.end():m.end() + 1] in "*{<":  # a pattern (`checkpoints/round-N/<role>.pt/`)
                    continue
                yield f"{doc.relative_to(REPO)}:{i}", m.group(1).rstrip(".")


def test_every_named_path_exists():
    missing = [f"{where}: {p}" for where, p in named_paths() if p not in OUTSIDE and not (REPO / p).exists()]
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)
    assert sum(1 for _ in named_paths()) > 200  # the pattern still finds the docs' paths
