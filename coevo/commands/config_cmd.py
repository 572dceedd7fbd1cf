"""`coevo config show` (the config `coevo run` would run, no run) and `coevo config keys` (every key with its
type, default and help, from the pydantic models); the logic lives in coevo/knobs.py."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import emit_json, fail
from coevo.commands.output import json_option

HELP = {"help_option_names": ["-h", "--help"]}
config_app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings=HELP,
                         help="The run config without a run: the resolved config, every key.")

PRESET_HELP = ("Preset name (cpu, paper, smollm2-cpu, drzero, ...) or a YAML file; default: the preset named after "
               "--recipe, else cpu.")
BUDGET_HELP = ("Run budget: a named set of overrides per recipe (coevo/presets/budgets/NAME.yaml), applied before "
               "--set. smoke = every phase in seconds, for trying things.")
SEED_HELP = "Run seed (shortcut for --set seed=N)."


@config_app.command("show")
def show(
    preset: Optional[str] = typer.Option(None, "--preset", "-p", help=PRESET_HELP),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config merged over the preset."),
    set_: List[str] = typer.Option([], "--set", "-s", help="Override, key=value (dotted keys), repeatable."),
    recipe: Optional[str] = typer.Option(None, "--recipe", help="Shortcut for --set recipe=..."),
    seed: Optional[int] = typer.Option(None, "--seed", help=SEED_HELP),
    budget: Optional[str] = typer.Option(None, "--budget", help=BUDGET_HELP),
    as_json: bool = json_option(),
):
    """The resolved config `coevo run` would run with these options, as it would write RUN/config.yaml.

    YAML (--json: JSON); runs nothing."""
    from coevo.config import ConfigError, dump_config
    from coevo.knobs import KnobError, resolve_run_config, shortcut_overrides

    try:
        cfg = resolve_run_config(preset, config, shortcut_overrides(set_, recipe=recipe, seed=seed), recipe, budget)
    except (ConfigError, KnobError) as e:
        fail(str(e))
    if as_json:
        emit_json(cfg.model_dump(mode="json"))
    else:
        typer.echo(dump_config(cfg), nl=False)


@config_app.command("keys")
def keys(
    recipe: Optional[str] = typer.Option(None, "--recipe", help="Only the core keys and this recipe's sections "
                                                                "(default: every built-in recipe's)."),
    as_json: bool = json_option(),
):
    """Every config key (as --set takes it) with its type, default and help.

    Read from the typed config: coevo/config.py and each recipe's config sections."""
    from coevo.knobs import KnobError, config_keys, print_keys

    try:
        rows = config_keys(recipe)
    except KnobError as e:
        fail(str(e))
    if as_json:
        emit_json({"keys": rows})
    else:
        print_keys(rows)


def register(apps: dict) -> None:
    apps["main"].add_typer(config_app, name="config")
