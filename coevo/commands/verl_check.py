"""``coevo verl check KEY=VALUE ...``: does verl's own config composition, with these overrides,
load coevo's reward? (coevo/integrations/verl_check.py; docs/verl.md). Exit 2 with one line if not."""
from __future__ import annotations

from typing import List

import typer

from coevo.cli_common import fail
from coevo.commands.output import emit, json_option

verl_app = typer.Typer(help="Checks against the verl installed here (docs/verl.md).", no_args_is_help=True)


@verl_app.command("check", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def check(overrides: List[str] = typer.Argument(..., help="The hydra overrides given to verl.trainer.main_ppo."),
          as_json: bool = json_option()):
    """Compose verl's ppo_trainer config with OVERRIDES and fail unless verl would call coevo's reward."""
    from coevo.integrations.verl_check import VerlCheckError, check as run_check

    try:
        res = run_check(overrides)
    except VerlCheckError as e:
        fail(str(e))
    except ImportError as e:  # verl (or a part it needs) is not installed here
        fail(f"`coevo verl check` needs verl installed here (docs/verl.md): {e}")
    emit(res, as_json)


def register(apps: dict) -> None:
    apps["main"].add_typer(verl_app, name="verl")
