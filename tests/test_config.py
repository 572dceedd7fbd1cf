import pytest

from coevo.config import ConfigError, available_presets, load_config


def test_presets_load():
    assert {"cpu", "paper"} <= set(available_presets())
    cfg = load_config("cpu")
    assert cfg.recipe == "rzero" and cfg.rzero.m == 10 and cfg.rzero.delta == 0.25
    paper = load_config("paper")
    assert paper.rzero.n_candidates == 8000 and paper.loss.kl_coef == 0.01 and paper.backend.lr_solver == 1e-6


def test_override_types_and_nesting():
    cfg = load_config("cpu", None, ["rzero.rounds=2", "loss.aggregation=dapo", "sampling.temperature=0.7"])
    assert cfg.rzero.rounds == 2 and cfg.loss.aggregation == "dapo" and cfg.sampling.temperature == 0.7


@pytest.mark.parametrize("override,field", [
    ("rzero.delta=0.9", "rzero.delta"),
    ("rzero.rounds=zero", "rzero.rounds"),
    ("rzero.bogus=1", "rzero.bogus"),
    ("loss.aggregation=mean", "loss.aggregation"),
])
def test_bad_value_names_the_field(override, field):
    with pytest.raises(ConfigError) as e:
        load_config("cpu", None, [override])
    assert field in str(e.value) and "\n" not in str(e.value)


def test_unknown_preset_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown preset"):
        load_config("nope")
    with pytest.raises(ConfigError, match="not found"):
        load_config("cpu", tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("rzero: [1, 2")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config("cpu", bad)


def test_unknown_backend_option_is_a_load_error_naming_it():
    """backend.options is checked against the hf/openai option keys: a typo is an error at load,
    not a silent fall-back to the default (issue: typed config end to end)."""
    with pytest.raises(ConfigError, match=r"unknown option 'devcie' \(did you mean 'device'\?\)"):
        load_config("cpu", None, ["backend.kind=hf", "backend.options={devcie: cpu}"])
    cfg = load_config("cpu", None, ["backend.kind=hf", "backend.options={model: smollm2, device: cpu}"])
    assert cfg.backend.options == {"model": "smollm2", "device": "cpu"}
