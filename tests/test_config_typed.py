"""Typed config end to end: each recipe's sections are typed fields of the loaded config, and an
unknown key anywhere -- top level, a recipe section, world.options, backend.options (per backend
kind, nested mappings too) -- is a load error of one line naming its dotted path."""
import pickle

import pytest

from coevo.config import ConfigError, load_config, preset_files
from coevo.core.registry import get_recipe, recipe_names


def _preset(recipe: str) -> list:
    """A shipped preset of the recipe (its own by name, else cpu with recipe=NAME)."""
    return [recipe, []] if recipe in preset_files() else ["cpu", [f"recipe={recipe}"]]


SECTIONS = sorted({(name, sec) for name in recipe_names() for sec in get_recipe(name).sections})


@pytest.mark.parametrize("recipe,section", SECTIONS)
def test_unknown_key_in_every_recipe_section_names_it(recipe, section):
    preset, sets = _preset(recipe)
    cfg = load_config(preset, None, sets)
    assert isinstance(getattr(cfg, section), get_recipe(recipe).sections[section])  # a typed field, not an extra
    assert section in type(cfg).model_fields and not cfg.model_extra
    with pytest.raises(ConfigError) as e:
        load_config(preset, None, [*sets, f"{section}.stepz_typo=3"])
    assert str(e.value) == f"invalid config: {section}.stepz_typo: unknown field"


def test_unknown_top_level_key_and_section_of_no_recipe():
    with pytest.raises(ConfigError, match=r"^invalid config: solver_stepz: unknown field$"):
        load_config("cpu", None, ["solver_stepz=3"])
    with pytest.raises(ConfigError, match=r"rzero\.solver_stepz: unknown field"):
        load_config("cpu", None, ["rzero.solver_stepz=3"])


@pytest.mark.parametrize("sets,message", [
    (["backend.options.device=cpu"], "backend.options: backend 'tiny' takes no options (got 'device')"),
    (["backend.kind=hf", "backend.options.servers=[http://x]"], "backend.options: unknown option 'servers'"),
    (["backend.kind=openai", "backend.options.retires=2"], "unknown option 'retires' (did you mean 'retries'?)"),
    (["backend.kind=hf", "backend.options.lora={r: 4, alpah: 8}"], "unknown option 'lora.alpah' (did you mean 'alpha'?)"),
    (["backend.kind=hf", "backend.options.tiny={hiden: 8}"], "unknown option 'tiny.hiden' (did you mean 'hidden'?)"),
    (["backend.kind=hf", "backend.options.lora=8"], "lora: expected a mapping"),
])
def test_backend_options_are_checked_per_kind_and_nested(sets, message):
    with pytest.raises(ConfigError) as e:
        load_config("cpu", None, sets)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_backend_options_every_kind_accepts_its_keys():
    from coevo.backends.roles import DEFAULTS, KIND_OPTION_KEYS, OPENAI_KEYS, OPTION_KEYS

    assert set(KIND_OPTION_KEYS) == {"tiny", "hf", "openai"}  # every backend kind of BackendConfig.kind
    assert KIND_OPTION_KEYS["openai"] == OPTION_KEYS and not KIND_OPTION_KEYS["tiny"]
    assert KIND_OPTION_KEYS["hf"] == OPTION_KEYS - OPENAI_KEYS and OPENAI_KEYS <= OPTION_KEYS
    cfg = load_config("cpu", None, ["backend.kind=openai", "backend.options.retries=2",
                                    "backend.options.lora={r: 4, alpha: 8, dropout: 0.1, target_modules: null}"])
    assert cfg.backend.options == {"retries": 2, "lora": {"r": 4, "alpha": 8, "dropout": 0.1, "target_modules": None}}
    assert set(DEFAULTS["lora"]) == {"r", "alpha", "dropout", "target_modules"}
    for p in ("smollm2-cpu", "qwen-1gpu"):  # the shipped presets that set options
        assert load_config(p).backend.options


@pytest.mark.parametrize("sets,message", [
    (["world.options.eval_per_levl=3"], "world.options.eval_per_levl: unknown option of world 'arithmetic'"),
    (["recipe=drzero", "world.name=facts", "world.options.misred_rate=0.3"],
     "world.options.misred_rate: unknown option of world 'facts' (did you mean 'misread_rate'?)"),
    (["recipe=vgopd", "world.name=criteria", "world.options.timout_rate=0.1"],
     "world.options.timout_rate: unknown option of world 'criteria' (did you mean 'timeout_rate'?)"),
    (["world.name=math", "world.options.prompt_style=fewshot"], "world.options.prompt_style: unknown option of world 'math'"),
])
def test_unknown_world_option_is_a_load_error(sets, message):
    with pytest.raises(ConfigError) as e:
        load_config("cpu", None, sets)
    assert message in str(e.value)


def test_every_preset_loads_typed_and_pickles():
    for name in sorted(preset_files()):
        cfg = load_config(name)
        assert not cfg.model_extra, name
        back = pickle.loads(pickle.dumps(cfg))
        assert type(back) is type(cfg) and back == cfg, name
    paper = load_config("paper")  # a preset carrying several recipes' sections keeps their order in config.yaml
    assert [k for k in type(paper).model_fields][-3:] == ["rzero", "synco", "rgbc"]


def test_prompt_style_of_the_world_and_the_alias_the_recipe_folder_registers():
    from coevo.recipes.rzero.prompts import MATH_PROMPTS
    from coevo.worlds.math import MathWorld, prompt_style_names
    from coevo.worlds.math_prompts import INSTRUCT_PROMPTS

    assert prompt_style_names() == ("instruct", "rzero", "fewshot")  # the world's, R-Zero's alias, the world's
    cfg = load_config("cpu", None, ["world.name=math"])
    assert cfg.world.prompt_style == "instruct" and MATH_PROMPTS is INSTRUCT_PROMPTS
    w = MathWorld.from_config(cfg)
    assert w.prompt_version == MATH_PROMPTS.version == "math-rzero-v1"
    assert w.proposer_prompts(1)[0].endswith(MATH_PROMPTS.proposer_user)
    alias = MathWorld.from_config(load_config("cpu", None, ["world.name=math", "world.prompt_style=rzero"]))
    assert alias.prompt_version == "math-rzero-v1" and alias.proposer_prompts(1) == w.proposer_prompts(1)
    with pytest.raises(ConfigError, match=r"world.prompt_style: unknown prompt style 'chatty'; known: instruct, rzero, "
                                          r"fewshot"):
        load_config("cpu", None, ["world.name=math", "world.prompt_style=chatty"])
