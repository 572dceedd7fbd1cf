"""Issue 31 item 6 (knobs), through the real CLI: ``coevo config show`` prints the config ``coevo run`` would run
(preset, --config, --budget, --set, --seed) and runs nothing; ``coevo config keys`` lists every key of the typed
config with its type, default and help; ``--seed`` against ``--set seed`` and an unknown budget are one line, exit 2."""
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_coevo  # noqa: E402


def one_line_error(p, text):
    assert p.returncode == 2 and text in p.stderr, (p.returncode, p.stderr[-800:])
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_show_is_what_run_would_write(tmp_path):
    from coevo.config import dump_config, load_config
    from coevo.knobs import budget_overrides

    extra = tmp_path / "extra.yaml"
    extra.write_text("rzero:\n  delta: 0.3\n")
    p = run_coevo("config", "show", "--config", str(extra), "--set", "rzero.rounds=2", "--seed", "7")
    cfg = load_config("cpu", extra, ["rzero.rounds=2", "seed=7"])
    assert p.stdout == dump_config(cfg) and not list(tmp_path.glob("runs*"))
    assert yaml.safe_load(p.stdout)["rzero"]["delta"] == 0.3
    # a budget: its overrides after the preset, --set wins, named in the note; --json is the same config
    p = run_coevo("config", "show", "--budget", "smoke", "--set", "rzero.rounds=2", "--json")
    got = json.loads(p.stdout)
    smoke = dict(item.split("=", 1) for item in budget_overrides("smoke", "rzero"))
    assert got["rzero"]["rounds"] == 2 and str(got["world"]["eval_per_level"]) == smoke["world.eval_per_level"]
    assert str(got["rzero"]["n_candidates"]) == smoke["rzero.n_candidates"] and "budget smoke:" in got["note"]
    assert run_coevo("config", "show", "--seed", "3", "--set", "seed=3").returncode == 0  # the same value: fine


def test_smoke_budget_of_every_builtin_recipe_validates():
    """Each built-in recipe's smoke overrides resolve against the preset `coevo run --recipe R` picks."""
    from coevo.core.registry import recipe_names
    from coevo.knobs import resolve_run_config

    for name in recipe_names():
        cfg = resolve_run_config(None, None, [f"recipe={name}"], name, "smoke")
        assert cfg.recipe == name and "budget smoke:" in cfg.note and cfg.backend.threads == 1


def test_show_errors_are_one_line():
    one_line_error(run_coevo("config", "show", "--seed", "3", "--set", "seed=4", check=False),
                   "--seed 3 and --set seed=4 disagree")
    one_line_error(run_coevo("config", "show", "--budget", "nope", check=False), "unknown budget 'nope'; available: smoke")
    one_line_error(run_coevo("config", "show", "--budget", "smoke", "--preset", "examples/toy_recipe.yaml", check=False),
                   "budget 'smoke' has no settings for recipe 'examples.toy_recipe'")
    one_line_error(run_coevo("config", "show", "--set", "rzero.round=1", check=False), "did you mean 'rounds'")
    one_line_error(run_coevo("config", "keys", "--recipe", "nope", check=False), "unknown recipe 'nope'")
    # the same checks in `coevo run`, before any run directory exists
    one_line_error(run_coevo("run", "--seed", "3", "--set", "seed=4", check=False), "disagree")


def _leaves(model, prefix=""):
    from coevo.knobs import _model_in

    for name, f in model.model_fields.items():
        sub = _model_in(f.annotation)
        if sub is not None:
            yield from _leaves(sub, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_keys_lists_every_key_with_type_default_help():
    from coevo.config import RunConfig
    from coevo.core.registry import get_recipe, recipe_names

    rows = json.loads(run_coevo("config", "keys", "--json").stdout)["keys"]
    keys = {r["key"]: r for r in rows}
    want = set(_leaves(RunConfig))
    for name in recipe_names():
        for sec, model in get_recipe(name).sections.items():
            want |= set(_leaves(model, f"{sec}."))
    assert want <= set(keys), sorted(want - set(keys))[:5]
    assert keys["rzero.rounds"]["type"] == "int (>= 1)" and keys["rzero.rounds"]["default"] == "3"
    assert keys["loss.aggregation"]["type"] == "grpo|dr_grpo|dapo|bnpo" and keys["loss.aggregation"]["default"] == "grpo"
    assert keys["truth.judge.base_url"]["default"] == "required" and keys["truth.judge"]["default"] == "null"
    core = [r for r in rows if r["key"].split(".")[0] in RunConfig.model_fields]
    assert all(r["help"] for r in core), [r["key"] for r in core if not r["help"]]  # every core key says what it is
    # --recipe: the core keys and that recipe's sections only; text: one key a line
    text = run_coevo("config", "keys", "--recipe", "rzero").stdout.splitlines()
    assert any(line.startswith("rzero.rounds ") and "int (>= 1) = 3" in line for line in text)
    assert not any(line.startswith(("drzero.", "synco.", "vgopd.")) for line in text)
    assert any(line.startswith("seed ") and "# run seed" in line for line in text)
