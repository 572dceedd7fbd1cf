"""The model options `coevo eval`, `coevo certify` and `coevo eval-qa` share: one pydantic model,
one set of defaults, one set of typer options built from it (same flags, same help, same
defaults in every command's ``--help``), one way to turn them into a policy and a math world.

The defaults, and why:

* ``model = "smollm2"`` (SmolLM2-135M-Instruct, from the GGUF on PyPI): the one model every
  world of the three commands can use (math, arithmetic, QA).  ``tiny``, the shipped
  arithmetic char-level solver, stays one flag away (``--model tiny --world arithmetic``);
  it cannot read a math or QA prompt, so it cannot be the shared default.
* ``temperature = 1.0``, ``top_p = 1.0``: the policy's own distribution, the same as the run
  config's ``sampling`` defaults.  `coevo certify` estimates the pass rates a training run would
  see, so it must sample as training does; `coevo eval`'s mean@k then measures the same
  distribution.  R-Zero's reporting convention (mean@32 at T = 0.6, top-p 0.95) is
  ``--temperature 0.6 --top-p 0.95``.  Greedy accuracy (eval, eval-qa) does not use them.
* ``prompt_style = fewshot``, ``answer_extraction = "lenient"`` (math world): the default
  model is a 135M model, which under R-Zero's prompt never writes ``\\boxed{}`` (accuracy 0.00,
  no answer on 20/20, docs/real-models.md); a default that scores every answer of the default
  model as a format failure measures nothing.  ``lenient`` takes the last ``\\boxed{}`` when
  there is one, so a model that does box its answers scores the same.  R-Zero's protocol:
  ``--prompt-style rzero --answer-extraction boxed``.
* ``device = "cpu"``, ``server = []``, ``api_key_env = "OPENAI_API_KEY"``, ``checkpoint = None``.

Length limits (``--max-new-tokens``) stay per command: they belong to the task (an arithmetic
answer, a math solution, one search-agent turn), not to the model.

A bad value is a ``UserError`` of one line naming the flag and the value (``from_cli``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Literal, Optional

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from coevo.cli_common import API_KEY_ENV_HELP, UserError, solver_policy
from coevo.worlds.math import FEWSHOT, prompt_style_names

HF_MODELS = ("smollm2", "tiny-llama", "tiny-qwen2")
TINY = "tiny"  # the shipped arithmetic solver (coevo/assets/solver.pt)
PROMPT_STYLES = prompt_style_names()  # the world's instruct, the styles recipe folders register, fewshot
INSTRUCTION_STYLES = tuple(p for p in PROMPT_STYLES if p != FEWSHOT)
EXTRACTIONS = ("boxed", "lenient")


class ModelOptions(BaseModel):
    """What model the evaluation commands sample from, and how (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field("smollm2", description=f"{' | '.join(HF_MODELS)} | {TINY} (shipped arithmetic solver, "
                                              "--world arithmetic) | a local HF directory")
    checkpoint: Optional[Path] = Field(None, description="A role checkpoint to load (hf: LoRA weights saved by a "
                                                         "run; tiny: a tiny role checkpoint)")
    device: str = Field("cpu", description="cpu | cuda | cuda:N")
    server: List[str] = Field(default_factory=list, description="Sample from OpenAI-compatible server(s) instead "
                                                                "(repeatable)")
    api_key_env: str = Field("OPENAI_API_KEY", description=API_KEY_ENV_HELP.rstrip("."))
    server_timeout: float = Field(300.0, gt=0, description="With --server: seconds a request may take before it "
                                                          "counts as failed and is retried")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (not used by greedy decoding)")
    top_p: float = Field(1.0, gt=0, le=1, description="Top-p (not used by greedy decoding)")
    prompt_style: str = Field(FEWSHOT, description="math world: fewshot (small models) | "
                                                   f"{' | '.join(INSTRUCTION_STYLES)} (R-Zero's prompts)")
    answer_extraction: Literal["boxed", "lenient"] = Field("lenient", description="math world: lenient (last "
                                                           "\\boxed{}, else 'answer is N') | boxed (R-Zero)")

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        if v in HF_MODELS or v == TINY or Path(v).is_dir():
            return v
        raise ValueError(f"not {', '.join(HF_MODELS)}, {TINY} or a local HF directory")

    @field_validator("prompt_style")
    @classmethod
    def _style(cls, v: str) -> str:
        if v in PROMPT_STYLES:
            return v
        raise ValueError("expected " + " | ".join(PROMPT_STYLES))

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if re.fullmatch(r"cpu|cuda(:\d+)?", v):
            return v
        raise ValueError("expected cpu, cuda or cuda:N")

    def policy(self, command: str, world_name: str, seed: int = 0):
        """The frozen solver policy these options name (``UserError`` on bad input)."""
        if self.model == TINY:
            if world_name != "arithmetic":
                raise UserError(f"--model {TINY} is the shipped arithmetic solver: use --world arithmetic")
            if self.server:
                raise UserError(f"--model {TINY} samples in-process: drop --server")
            from coevo.backends.tiny import TinyPolicy
            from coevo.runner import ASSETS

            path = self.checkpoint or ASSETS / "solver.pt"
            if not Path(path).exists():
                raise UserError(f"checkpoint not found: {path}")
            return TinyPolicy.from_checkpoint("solver", path, lr=1e-4, seed=seed)
        return solver_policy(self.model, self.device, self.server, self.checkpoint, command=command,
                             api_key_env=self.api_key_env, timeout_s=self.server_timeout)

    def math_world(self):
        from coevo.worlds.math import MathWorld

        try:
            return MathWorld(prompt_style=self.prompt_style, answer_extraction=self.answer_extraction)
        except ValueError as e:
            raise UserError(str(e)) from None


DEFAULTS = ModelOptions()
FLAGS = {"model": ("--model", "-m"), "checkpoint": ("--checkpoint",), "device": ("--device",),
         "server": ("--server",), "api_key_env": ("--api-key-env",), "server_timeout": ("--server-timeout",), "temperature": ("--temperature",),
         "top_p": ("--top-p",), "prompt_style": ("--prompt-style",), "answer_extraction": ("--answer-extraction",)}


def _flag(name: str) -> str:
    return FLAGS[name][0]


def option(name: str):
    """The typer option of field ``name``: its flag(s), the model's default and description."""
    f = ModelOptions.model_fields[name]
    default = getattr(DEFAULTS, name)
    shown = "none" if default is None else (", ".join(default) or "none") if isinstance(default, list) else default
    help_ = f"{f.description} (shared default: {shown})."
    return typer.Option(default if not isinstance(default, list) else [], *FLAGS[name], help=help_,
                        show_default=False)


def from_cli(**values) -> ModelOptions:
    """``ModelOptions`` from the commands' keyword arguments; a bad value -> one-line ``UserError``
    naming the flag and the value."""
    try:
        return ModelOptions(**values)
    except ValidationError as e:
        err = e.errors()[0]
        name = str(err["loc"][0]) if err.get("loc") else "?"
        flag = _flag(name) if name in FLAGS else name
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        if err.get("type") == "literal_error":
            msg = "expected " + " | ".join(PROMPT_STYLES if name == "prompt_style" else EXTRACTIONS)
        raise UserError(f"{flag} {err.get('input')!r}: {msg}") from None
