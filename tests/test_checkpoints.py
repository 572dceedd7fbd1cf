"""Checkpoints are data, not code: safetensors + JSON, PEFT adapters, save_pretrained dirs;
legacy pickles only from a path the user names, with one warning line; `coevo export`."""
import json
import os
import random
import subprocess

import pytest
import torch

from conftest import REPO, coevo_cmd, kill_after_step, need_module, run_coevo, tiny_run_args
from coevo.checkpoint import CheckpointError, atomic_dir, decode, encode, load_tree, save_tree

ASSETS = REPO / "coevo" / "assets"


def test_tree_roundtrip_is_exact(tmp_path):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    rng = random.Random(5)
    rng.random()
    gen = torch.Generator().manual_seed(3)
    torch.rand(7, generator=gen)
    obj = {"opt": opt.state_dict(), "gen": gen.get_state(), "rng": rng.getstate(), 3: "int key",
           "nested": [1, 0.1, 1e-300, -0.0, None, True, (1, (2.5, "x")), {"__tensor__": "not a marker"}],
           "bf16": torch.tensor([1.5, -2.25], dtype=torch.bfloat16), "scalar": torch.tensor(7)}
    save_tree(tmp_path, obj)
    back = load_tree(tmp_path)
    assert set(back) == set(obj) and back[3] == "int key"
    assert back["rng"] == rng.getstate() and isinstance(back["rng"], tuple)
    r2 = random.Random()
    r2.setstate(back["rng"])
    assert r2.random() == rng.random()
    assert torch.equal(back["gen"], gen.get_state()) and back["gen"].dtype == torch.uint8
    assert back["nested"] == obj["nested"] and str(back["nested"][3]) == "-0.0"
    assert back["bf16"].dtype == torch.bfloat16 and torch.equal(back["bf16"], obj["bf16"])
    assert back["scalar"].shape == () and int(back["scalar"]) == 7
    pg = back["opt"]["param_groups"][0]
    assert pg["betas"] == (0.9, 0.99) and isinstance(pg["betas"], tuple) and pg["params"] == [0, 1]
    assert set(back["opt"]["state"]) == {0, 1}
    for k in (0, 1):
        for name, v in opt.state_dict()["state"][k].items():
            assert torch.equal(back["opt"]["state"][k][name], v)
    model2 = torch.nn.Linear(3, 2)
    torch.optim.AdamW(model2.parameters()).load_state_dict(back["opt"])  # loads as an optimizer state
    tree, tensors = encode({"a": (1, 2)})
    assert json.loads(json.dumps(tree)) == tree and tensors == {} and decode(tree, tensors) == {"a": (1, 2)}
    with pytest.raises(CheckpointError, match="set"):
        encode({"bad": {1, 2}})


def test_atomic_dir_keeps_the_previous_content_when_a_write_fails(tmp_path):
    target = tmp_path / "step-3.pt"
    atomic_dir(target, lambda d: save_tree(d, {"v": 1}))

    def crash(d):
        save_tree(d, {"v": 2})
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_dir(target, crash)
    assert load_tree(target) == {"v": 1}
    atomic_dir(target, lambda d: save_tree(d, {"v": 3}))
    assert load_tree(target) == {"v": 3}
    assert sorted(p.name for p in target.iterdir()) == ["state.json", "state.safetensors"]


def test_only_the_legacy_helper_unpickles():
    hits = subprocess.run(["grep", "-rn", "weights_only=False", str(REPO / "coevo")], capture_output=True,
                          text=True).stdout.strip().splitlines()
    hits = [h for h in hits if not h.startswith("Binary")]
    assert len(hits) == 1 and "coevo/checkpoint.py" in hits[0] and "torch.load" in hits[0]


def _digest(tensors: dict) -> str:
    import hashlib

    h = hashlib.sha256()
    for k, v in sorted(tensors.items()):
        h.update(k.encode())
        h.update(v.float().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("role", ["solver", "challenger", "synthesizer", "shared"])
def test_shipped_tiny_checkpoints_load_with_safetensors_and_json(role):
    from safetensors.torch import load_file

    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    d = ASSETS / f"{role}.pt"
    assert d.is_dir() and sorted(p.name for p in d.iterdir()) == ["config.json", "model.safetensors"]
    weights = load_file(str(d / "model.safetensors"))
    cfg = json.loads((d / "config.json").read_text())
    assert cfg["format"] == "coevo-tiny" and cfg["base_tag"] == f"pretrained-{role}"
    assert _digest(weights) == info[role]["sha256_state"]
    assert sum(v.numel() for v in weights.values()) == info[role]["params"]


def test_tiny_save_is_servable_and_legacy_files_need_an_explicit_name(tmp_path, capsys):
    from safetensors.torch import load_file

    from coevo.core.policy import SamplingParams
    from coevo.backends.tiny import TinyConfig, TinyGPT, TinyPolicy

    a = TinyPolicy("solver", seed=4)
    a.sample(["<solve>1+2="], 2, SamplingParams(max_new_tokens=4))
    a.save(tmp_path / "a.pt")
    cfg = json.loads((tmp_path / "a.pt" / "config.json").read_text())
    model = TinyGPT(TinyConfig(**cfg["config"]))
    model.load_state_dict(load_file(str(tmp_path / "a.pt" / "model.safetensors")))
    idx = torch.tensor([a.tok.encode("<solve>12+7=")])
    assert torch.equal(model(idx), a.model(idx))
    assert cfg["tokenizer"]["itos"] == a.tok.itos
    # a legacy pickle: refused unless named explicitly, then loaded with one warning line
    torch.save(a.state(), tmp_path / "old.pt")
    with pytest.raises(CheckpointError, match="legacy pickle"):
        TinyPolicy.from_checkpoint("solver", tmp_path / "old.pt")
    capsys.readouterr()
    b = TinyPolicy.from_checkpoint("solver", tmp_path / "old.pt", allow_legacy=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning:") and "legacy pickle" in err[0]
    assert torch.equal(b.model(idx), a.model(idx))


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    """A run directory's round checkpoints as the runner writes them (``policy.save``)."""
    need_module("peft")
    from coevo.core.policy import LossConfig, SamplingParams
    from coevo.backends.roles import make_role_policies

    run = tmp_path_factory.mktemp("hfrun")
    pols = {}
    for mode in ("lora", "full"):
        roles = make_role_policies({"model": "tiny-llama", "mode": mode, "lr": 5e-2, "lora": {"r": 4, "alpha": 8},
                                    "roles": ["solver", "challenger"]})
        so = roles["solver"]
        out = so.sample(["abc"], 4, SamplingParams(max_new_tokens=6))
        so.forward_backward(out[0], [1.0, -1.0, 0.5, -0.5], LossConfig())
        so.optim_step()
        ck = run / mode / "checkpoints" / "round-1"
        for role, p in roles.items():
            p.save(ck / f"{role}.pt")
        pols[mode] = roles
    return run, pols


def _export(*args):
    from typer.testing import CliRunner

    from coevo.cli import app

    return CliRunner().invoke(app, ["export", *map(str, args)])


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits


def test_export_hf_lora_role_is_a_peft_adapter(hf_run, tmp_path):
    from peft import PeftModel

    from coevo.backends.roles import load_base

    run, pols = hf_run
    so = pols["lora"]["solver"]
    res = _export(run / "lora", tmp_path / "adapter", "--round", "1", "--role", "solver")
    assert res.exit_code == 0, res.output
    out = tmp_path / "adapter"
    assert sorted(p.name for p in out.iterdir() if p.suffix != ".md") == ["adapter_config.json",
                                                                          "adapter_model.safetensors"]
    base, _ = load_base({"model": "tiny-llama", "seed": 0, "device": "cpu", "dtype": "fp32"})
    ids = so.format_prompt("What is 2+3?")
    untrained = _logits(base.eval(), ids)
    peft_model = PeftModel.from_pretrained(base, str(out)).eval()
    so.model.eval()
    so.model.set_adapter("solver")  # the run policy, its own adapter active
    want = _logits(so.model, ids)
    got = _logits(peft_model, ids)
    assert float((got - want).abs().max()) <= 1e-5
    assert float((want - untrained).abs().max()) > 1e-3  # the adapter carries the training


def test_export_hf_full_model_is_save_pretrained(hf_run, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run, pols = hf_run
    so = pols["full"]["solver"]
    res = _export(run / "full", tmp_path / "model", "--round", "1", "--role", "solver")
    assert res.exit_code == 0, res.output
    out = tmp_path / "model"
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    assert not (out / "trainer_state.json").exists()
    model = AutoModelForCausalLM.from_pretrained(str(out)).eval()
    tok = AutoTokenizer.from_pretrained(str(out))
    ids = so.format_prompt("What is 2+3?")
    assert tok.decode(ids) == so.tokenizer.decode(ids)
    so.model.eval()
    assert float((_logits(model, ids) - _logits(so.model, ids)).abs().max()) <= 1e-5


@pytest.mark.parametrize("mode", ["lora", "full"])
def test_hf_checkpoint_load_restores_parameters_and_counters(hf_run, mode):
    run, pols = hf_run
    so = pols[mode]["solver"]
    ck = run / mode / "checkpoints" / "round-1" / "solver.pt"
    saved = {k: p.detach().clone() for k, p in so.trainable_params().items()}
    ver = so.version
    with torch.no_grad():
        for p in so.trainable_params().values():
            p.add_(1.0)
    so.updates += 3
    so.load(ck)
    assert so.version == ver and ver.endswith("+1")
    assert all(torch.equal(saved[k], p) for k, p in so.trainable_params().items())
    # a full model's weights are stored once (its save_pretrained files), a LoRA role's in trainer_state too
    assert ("params" in load_tree(ck, "trainer_state")) == (mode == "lora")


def test_export_errors_are_one_line(hf_run, tmp_path):
    run, _ = hf_run
    for args, needle in (((run / "lora", tmp_path / "o", "--round", "2", "--role", "solver"), "round 2"),
                         ((run / "lora", tmp_path / "o", "--round", "1", "--role", "critic"), "critic"),
                         ((tmp_path / "nope", tmp_path / "o", "--round", "1", "--role", "solver"), "not found")):
        p = run_coevo("export", *map(str, args), check=False)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    p = run_coevo("export", str(run / "lora"), str(tmp_path / "full"), "--round", "1", "--role", "solver",
                  check=False)
    assert p.returncode == 2 and "not empty" in p.stderr


def test_legacy_pickle_state_resumes_with_one_warning_and_tiny_export(tiny_ckpts, tmp_path):
    """A run killed mid-way whose state is an old pickle resumes (named by --resume) with one
    warning line and ends equal to the uninterrupted run; its round checkpoint exports."""
    from safetensors.torch import load_file

    args = tiny_run_args(tiny_ckpts, "--set", "verify.workers=0", "--set", "rzero.solver_steps=3")
    ref = tmp_path / "ref"
    run_coevo("run", "--out", str(ref), *args)
    killed = tmp_path / "killed"
    p = subprocess.Popen(coevo_cmd("run", "--out", str(killed), *args), cwd=REPO,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after_step(p, killed)
    assert not (killed / "summary.json").exists(), "run finished before it could be killed"
    states = sorted((killed / "state").glob("step-*.pt"))
    for d in states:  # rewrite the run's states as an older coevo wrote them
        if d.is_dir():
            st = load_tree(d)
            for f in d.iterdir():
                f.unlink()
            d.rmdir()
            torch.save(st, d)
    assert states and all(d.is_file() for d in states)
    res = run_coevo("run", "--resume", str(killed), "-q")
    warnings = [ln for ln in res.stderr.splitlines() if "legacy pickle" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("warning:")
    a, b = (json.loads((d / "summary.json").read_text()) for d in (killed, ref))
    a.pop("wall_seconds"), b.pop("wall_seconds")
    assert a == b
    assert all(d.is_dir() for d in (killed / "state").glob("step-*.pt"))  # new states are data again
    res = _export(ref, tmp_path / "solver", "--round", "1", "--role", "solver")
    assert res.exit_code == 0, res.output
    out = tmp_path / "solver"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    w = load_file(str(out / "model.safetensors"))
    assert all(torch.equal(w[k], v) for k, v in load_file(str(ref / "checkpoints" / "round-1" / "solver.pt" /
                                                                 "model.safetensors")).items())
    assert json.loads((out / "config.json").read_text())["format"] == "coevo-tiny"


@pytest.mark.slow
def test_export_smollm2_lora_role_reproduces_the_run_policy(tmp_path):
    """A SmolLM2-135M LoRA role after one update, saved as the runner saves round checkpoints,
    exported by `coevo export`, loads with PeftModel.from_pretrained and gives the run policy's
    logits to 1e-5 (CI: COEVO_REQUIRE_SMOLLM2=1 makes a missing GGUF a failure)."""
    from peft import PeftModel

    from conftest import require_smollm2

    from coevo.core.policy import LossConfig, SamplingParams
    from coevo.backends.roles import load_base, make_role_policies

    require_smollm2()
    cfg = {"model": "smollm2", "mode": "lora", "lr": 1e-3, "lora": {"r": 8, "alpha": 16}, "micro_batch": 4,
           "roles": ["solver", "challenger"]}
    so = make_role_policies(cfg)["solver"]
    out = so.sample(["What is 2+3?"], 2, SamplingParams(temperature=1.0, max_new_tokens=8))
    so.forward_backward(out[0], [1.0, -1.0], LossConfig())
    so.optim_step()
    run = tmp_path / "run"
    so.save(run / "checkpoints" / "round-1" / "solver.pt")
    res = _export(run, tmp_path / "adapter", "--round", "1", "--role", "solver")
    assert res.exit_code == 0, res.output
    ids = so.format_prompt("What is 2+3?")
    so.model.eval()
    so.model.set_adapter("solver")
    want = _logits(so.model, ids)
    base, _ = load_base({"model": "smollm2", "seed": 0, "device": "cpu", "dtype": "fp32"})
    untrained = _logits(base.eval(), ids)
    got = _logits(PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval(), ids)
    assert float((got - want).abs().max()) <= 1e-5
    assert float((want - untrained).abs().max()) > 1e-4  # the adapter carries the update
