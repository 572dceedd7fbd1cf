"""One CLI convention (issue 20, items 6 and 10), on the real CLI as a subprocess:

* every command that can print JSON takes ``--json`` (off by default, ``--no-json`` accepted) and
  prints exactly one valid JSON object on stdout with it (tiny inputs, a few seconds each);
* without ``--json`` none of them prints JSON;
* ``coevo eval``, ``coevo certify`` and ``coevo eval-qa`` show the same model-option defaults in
  ``--help``, the defaults of ``coevo.commands.model_options.ModelOptions``;
* a bad model-option value is one line naming the flag and the value;
* ``coevo run --help`` lists every installed recipe (``coevo.core.registry.recipe_names``: entry points).
"""
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, need_module, run_coevo  # noqa: E402

FIX = REPO / "tests" / "fixtures"
SHIPPED_BANK = REPO / "coevo" / "data" / "criteria" / "bank.jsonl"

# Every command that can print JSON (the table in docs/real-models.md, "One CLI convention").
JSON_COMMANDS = [
    ("pretrain",), ("audit",), ("simulate",), ("reanalyze", "synco"), ("bench", "bleu"), ("bench", "verify"),
    ("bench", "retrieval"), ("bench", "step"), ("bench", "ray-verify"), ("doubt", "export"), ("doubt", "import"),
    ("eval",), ("certify",), ("eval-qa",), ("compare",), ("stress",), ("casa", "predictions"),
    ("criteria", "validate"), ("criteria", "derive"), ("import", "verl"), ("import", "rzero"), ("import", "parts"),
    ("verl", "check"),
]


def one_json(p) -> dict:
    """stdout is exactly one JSON object."""
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.mark.parametrize("cmd", JSON_COMMANDS, ids=" ".join)
def test_help_shows_json_off_by_default(cmd):
    out = run_coevo(*cmd, "--help").stdout
    assert "--json" in out and "--no-json" in out, out
    assert "[default: no-json]" in out, out


@pytest.fixture(scope="module")
def imported_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("conv") / "verl_run"
    assert one_json(run_coevo("import", "verl", str(FIX / "verl_dump"), "--out", str(out), "--json", check=False))
    return out


def test_import_audit_compare_json(imported_run, tmp_path):
    rz = tmp_path / "rz"
    assert one_json(run_coevo("import", "rzero", str(FIX / "rzero"), "--out", str(rz), "--json", check=False))
    assert one_json(run_coevo("audit", str(imported_run), "--json", check=False))["runs"]
    assert one_json(run_coevo("compare", str(imported_run), str(rz), "--json", check=False))
    p = run_coevo("audit", str(imported_run), "--no-json")  # the old spelling still works: a table, no JSON
    assert p.returncode == 0 and not p.stdout.lstrip().startswith("{")


def test_small_commands_json(tmp_path):
    assert one_json(run_coevo("reanalyze", "synco", "--json", check=False))["table3"]
    assert one_json(run_coevo("simulate", "--n-tasks", "200", "--json", check=False))["pool"] == "frontier"
    assert one_json(run_coevo("bench", "bleu", "--n", "32", "--sample-pairs", "20", "--json", check=False))["n"] == 32
    assert one_json(run_coevo("bench", "verify", "--n", "20", "--workers", "1", "--json", check=False))
    assert one_json(run_coevo("bench", "retrieval", "--passages", "200", "--queries", "10", "--k", "3", "--json",
                              check=False))
    assert one_json(run_coevo("criteria", "validate", str(SHIPPED_BANK), "--json", check=False))["ok"] is True
    d = one_json(run_coevo("criteria", "derive", "--annotator", "oracle", "--n", "2", "--out", str(tmp_path / "b.jsonl"),
                           "--json", check=False))
    assert d["prompts"] == 2
    bank = tmp_path / "one.jsonl"
    bank.write_text(SHIPPED_BANK.read_text().splitlines()[0] + "\n")
    assert one_json(run_coevo("stress", str(bank), "--json", check=False))["by_kind"]


def test_default_is_not_json():
    for args in (("simulate", "--n-tasks", "200"), ("criteria", "validate", str(SHIPPED_BANK)),
                 ("bench", "bleu", "--n", "32", "--sample-pairs", "20")):
        p = run_coevo(*args)
        assert p.stdout.strip() and not p.stdout.lstrip().startswith("{"), (args, p.stdout[:200])


def test_doubt_and_pretrain_json(tmp_path):
    from test_doubt import label, make_run

    rd = tmp_path / "run"
    truth = make_run(rd)
    assert one_json(run_coevo("doubt", "export", str(rd), "--json", check=False))["exported"] == 16
    label(rd, truth, tmp_path / "labels.csv")
    assert "gate_passed" in one_json(run_coevo("doubt", "import", str(rd), str(tmp_path / "labels.csv"), "--json",
                                               check=False))
    res = one_json(run_coevo("pretrain", "--role", "solver", "--steps", "1", "--out", str(tmp_path / "p"), "-q",
                             "--json", check=False))
    assert "solver" in res


def test_eval_and_certify_json_with_the_tiny_solver(tmp_path):
    f = tmp_path / "ar.jsonl"
    f.write_text('{"question": "2+3", "answer": "5"}\n{"question": "7-4", "answer": "3"}\n')
    res = one_json(run_coevo("eval", "--model", "tiny", "--world", "arithmetic", "--file", str(f),
                             "--max-new-tokens", "8", "--json", check=False))
    assert res["n"] == 2 and res["world"] == "arithmetic"
    cert = one_json(run_coevo("certify", "--arithmetic", "8", "--model", "tiny", "--k", "2", "--batch", "4",
                              "--max-new-tokens", "16", "--json", check=False))
    assert cert["n_tasks"] == 8 and cert["k"] == 2
    p = run_coevo("certify", "--arithmetic", "8", "--model", "tiny", "--k", "2", "--batch", "4",
                  "--max-new-tokens", "16", "--no-json")
    assert p.stdout.startswith("kappa-bar")


def test_eval_qa_json(tmp_path):
    need_module("transformers")
    need_module("peft")
    res = one_json(run_coevo("eval-qa", "--benchmark", "nq", "--limit", "1", "--model", "tiny-llama",
                             "--max-new-tokens", "4", "--max-turns", "1", "--json", check=False))
    assert res["model"] == "tiny-llama"


def _shared_defaults(cmd: str) -> dict:
    """``{flag: shown default}`` of the options whose help says ``(shared default: X)``."""
    rows: dict = {}
    flag = None
    for line in run_coevo(cmd, "--help").stdout.splitlines():
        m = re.match(r"^\W*(--[a-z][a-z-]*)\s", line)
        if m:
            flag = m.group(1)
            rows[flag] = ""
        if flag:
            rows[flag] += " " + line.strip("│ ")
    out = {}
    for f, text in rows.items():
        m = re.search(r"\(shared default:\s+([^)]*)\)", re.sub(r"\s+", " ", text))
        if m:
            out[f] = m.group(1).strip()
    return out


def test_eval_certify_eval_qa_show_the_same_defaults():
    from coevo.commands.model_options import DEFAULTS, FLAGS

    want = {}
    for name, flags in FLAGS.items():
        v = getattr(DEFAULTS, name)
        want[flags[0]] = "none" if v in (None, []) else str(v)
    assert want["--model"] == "smollm2" and want["--temperature"] == "1.0" and want["--prompt-style"] == "fewshot"
    ev, ce, qa = (_shared_defaults(c) for c in ("eval", "certify", "eval-qa"))
    assert ev == want and ce == want, (ev, ce)
    assert qa == {f: v for f, v in want.items() if f not in ("--prompt-style", "--answer-extraction")}, qa


@pytest.mark.parametrize("args,flag", [
    (("eval", "--prompt-style", "chatty"), "--prompt-style 'chatty'"),
    (("certify", "--arithmetic", "4", "--answer-extraction", "loose"), "--answer-extraction 'loose'"),
    (("eval-qa", "--model", "no-such-model"), "--model 'no-such-model'"),
    (("certify", "--arithmetic", "4", "--device", "gpu"), "--device 'gpu'"),
])
def test_bad_model_option_is_one_line_naming_it(args, flag):
    p = run_coevo(*args, check=False)
    assert p.returncode == 2 and flag in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_run_help_lists_the_builtin_recipes():
    from coevo.core.registry import recipe_names

    out = re.sub(r"\s+", " ", " ".join(line.strip("│ ") for line in run_coevo("run", "--help").stdout.splitlines()))
    assert " | ".join(recipe_names()) in out and "rzero" in recipe_names()
