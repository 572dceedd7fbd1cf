"""Every command with bad input (issue 31 item 3): missing or wrong-kind paths, damaged YAML / JSON, unknown names,
bad --set values, out-of-range numbers, occupied outputs, usage errors.  Each case runs the real CLI in a
subprocess, in a scratch directory holding a file, a directory, damaged YAML / JSON and a run directory with a
damaged config.yaml, and must give exit status 2, exactly one line on stderr (``error: ...``, with the text
below), no traceback, and leave the directory as it was (no half-created run directory or file)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

CASES = [  # (arguments, a piece of the one line)
    ('run --out afile.txt', '--out afile.txt is a file; give a directory'),
    ('run --out adir', 'run directory adir exists and is not empty (use'),
    ('run --out afile.txt/sub', '--out afile.txt/sub: afile.txt is a file, not a'),
    ('run --resume badrun', 'badrun/config.yaml: not valid YAML (while parsing a'),
    ('run --resume afile.txt', 'run directory not found: afile.txt'),
    ('run --resume nope', 'run directory not found: nope'),
    ('run --config nope.yaml', 'config file not found: nope.yaml'),
    ('run --config bad.yaml', 'bad.yaml: not valid YAML (while parsing a flow sequence)'),
    ('run --config adir', 'config file not found: adir'),
    ('run --config list.yaml', 'list.yaml: expected a mapping at the top level'),
    ('run --preset nope', "unknown preset 'nope'; available: cpu, crossfit,"),
    ('run --preset bad.yaml', 'bad.yaml: not valid YAML (while parsing a flow sequence)'),
    ('run --recipe nope', "invalid config: recipe: unknown recipe 'nope';"),
    ('run --budget nope', "unknown budget 'nope'; available: smoke"),
    ('run --set foo', "--set 'foo': expected key=value"),
    ('run --set rzero.rounds=abc', 'invalid config: rzero.rounds: Input should be a valid'),
    ('run --set rzero.rounds=-1', 'invalid config: rzero.rounds: Input should be greater'),
    ('run --set rzero.round=1', 'invalid config: rzero.round: unknown field (did you'),
    ('run --seed abc', "Invalid value for '--seed': Input should be a valid"),
    ('run --executor nope', "invalid config: executor.kind: Input should be 'local'"),
    ('run --nonsense', 'No such option: --nonsense (Possible options: --seed)'),
    ('run extra-arg', 'Got unexpected extra argument(s) (extra-arg)'),
    ('nope', "No such command 'nope'."),
    ('pretrain --role nope', "unknown role 'nope'; expected one of solver,"),
    ('pretrain --out afile.txt --role solver --steps 1', '--out afile.txt is a file; give a directory'),
    ('pretrain --steps 0 --role solver', "Invalid value for '--steps': Input should be greater"),
    ('report nope', 'run directory not found: nope'),
    ('report afile.txt', 'run directory not found: afile.txt'),
    ('report empty', 'empty is not a coevo run directory (no ledger.duckdb)'),
    ('audit nope', 'run directory not found: nope'),
    ('audit afile.txt', 'run directory not found: afile.txt'),
    ('audit empty', 'empty is not a coevo run directory (no ledger.duckdb)'),
    ('audit badrun', 'badrun is not a coevo run directory (no ledger.duckdb)'),
    ('audit empty --stress nope.json', 'stress file not found: nope.json'),
    ('simulate --pool nope', "unknown pool 'nope'; choose one of frontier, bimodal,"),
    ('simulate --k 0', 'k must be an integer >= 2, got 0'),
    ('simulate --n-tasks -1', 'n_tasks must be an integer in [64, 10000000], got -1'),
    ('export nope out', "Missing option '--round'."),
    ('export empty out --round 1 --role solver', 'no checkpoint of round 1 in empty (rounds with'),
    ('export afile.txt out --round 1 --role solver', 'run directory not found: afile.txt'),
    ('certify nope.jsonl', 'tasks file not found: nope.jsonl'),
    ('certify bad.json', 'bad.json:1: not JSON (Expecting property name enclosed'),
    ('certify --arithmetic 2 --world nope', "--world 'nope' with --arithmetic N: generated tasks are"),
    ('certify --arithmetic 2 --k 0', "Invalid value for '--k': Input should be greater than"),
    ('certify --arithmetic 2 --levels L99', '--levels must name arithmetic levels (L1, L2, L3, L4,'),
    ('certify --arithmetic 2 --model tiny --html afile.txt/x.html', '--html afile.txt/x.html: afile.txt is a file, not a'),
    ('compare nope', 'run directory not found: nope'),
    ('compare empty', 'empty is not a coevo run directory (no config.yaml)'),
    ('eval --file nope.jsonl', 'eval file not found: nope.jsonl'),
    ('eval --file bad.json', 'bad.json:1: not JSON (Expecting property name enclosed'),
    ('eval --file adir', 'eval file not found: adir'),
    ('eval --world nope', "--world 'nope': expected math | arithmetic"),
    ('eval --k -1', "Invalid value for '--k': Input should be greater than"),
    ('eval-qa -b nope', "unknown benchmark 'nope'; known: nq, triviaqa, popqa,"),
    ('eval-qa --corpus nope.jsonl', 'corpus file not found: nope.jsonl'),
    ('serve-retriever --corpus nope.jsonl', 'corpus file not found: nope.jsonl'),
    ('serve-retriever --port 99999', "Invalid value for '--port': Input should be less than"),
    ('stress nope.jsonl', 'bank not found: nope.jsonl'),
    ('stress bad.yaml', 'bad.yaml: not valid YAML (while parsing a flow sequence'),
    ('stress --judge nope', "unknown judge 'nope' (known: sim, smollm2, URL (an"),
    ('bench bleu --n -1', "Invalid value for '--n': Input should be greater than"),
    ('bench verify --workers 0', "Invalid value for '--workers': Input should be greater"),
    ('bench retrieval --passages -1', '--passages, --queries and --k must be >= 1'),
    ('bench step --preset nope', "unknown preset 'nope'; available: cpu, crossfit,"),
    ('bench step --run empty', 'empty is not a coevo run directory (no ledger.duckdb)'),
    ('casa predictions nope', 'run directory not found: nope'),
    ('config show --preset nope', "unknown preset 'nope'; available: cpu, crossfit,"),
    ('config show --set foo=1', 'invalid config: foo: unknown field'),
    ('config show --config bad.yaml', 'bad.yaml: not valid YAML (while parsing a flow sequence)'),
    ('criteria validate nope.jsonl', 'nope.jsonl: no such bank file'),
    ('criteria validate bad.json', 'bad.json:1: entry: not valid JSON (Expecting property'),
    ('criteria derive --annotator oracle --out afile.txt/x.jsonl --n 2', '--out afile.txt/x.jsonl: afile.txt is a file, not a'),
    ('criteria derive --annotator oracle --out x.jsonl --split nope', "--split 'nope': expected eval or train"),
    ('experiment rzero-seeds --jobs 0', "Invalid value for '--jobs' / '-j': Input should be"),
    ('experiment rzero-seeds --out afile.txt', '--out afile.txt is a file; give a directory'),
    ('experiment rzero-seeds --design --set rzero.rounds=1', '--set has no effect with --design (it runs nothing'),
    ('experiment rzero-seeds --design --executor ray', '--executor has no effect with --design'),
    ('import verl nope --out out', "nope is not a directory (give verl's"),
    ('import rzero bad.json --out out', 'no readable question in bad.json (1 malformed records;'),
    ('doubt export badrun', 'badrun is not a coevo run directory (no ledger.duckdb)'),
    ('doubt import empty nope.csv', 'no export in empty (run `coevo doubt export empty`'),
    ('verl check foo=bar', '`coevo verl check` needs verl installed here'),
]


def _scratch(d: Path) -> None:
    (d / "afile.txt").write_text("x\n")
    (d / "adir").mkdir()
    (d / "adir" / "f").write_text("x")
    (d / "empty").mkdir()
    (d / "bad.yaml").write_text("a: [1, 2\nb: {\n")
    (d / "bad.json").write_text('{"question": "1+1", ')
    (d / "list.yaml").write_text("- 1\n- 2\n")
    (d / "badrun").mkdir()
    (d / "badrun" / "config.yaml").write_text("recipe: rzero\nseed: [\n")


def _listing(d: Path) -> list:
    return sorted((str(p.relative_to(d)), p.stat().st_size if p.is_file() else -1) for p in d.rglob("*"))


@pytest.mark.parametrize("args,says", CASES, ids=[a for a, _ in CASES])
def test_bad_input_is_one_line(tmp_path, args, says):
    _scratch(tmp_path)
    before = _listing(tmp_path)
    env = dict(os.environ, COLUMNS="80", PYTHONUNBUFFERED="1")  # 80 columns: the line must not wrap either
    p = subprocess.run([sys.executable, "-m", "coevo", *args.split()], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("error: ") and says in p.stderr, p.stderr
    assert _listing(tmp_path) == before, "the command left something behind"
