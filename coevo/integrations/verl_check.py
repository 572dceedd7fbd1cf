"""``coevo verl check KEY=VALUE ...``: compose verl's own trainer config (``verl/trainer/config/
ppo_trainer.yaml``, with hydra, as ``python -m verl.trainer.main_ppo`` does) from the overrides a
user is about to run, and fail loudly where verl would not call coevo's reward.

verl 0.9.1 reads ``reward.custom_reward_function.*`` and ``reward.reward_manager.*``. The keys of
verl <= 0.8 (``custom_reward_function.*``, ``reward_model.reward_manager``) still compose — the
config keeps them as ``legacy_reward_impl`` — but ``main_ppo`` never reads them
(``migrate_legacy_reward_impl`` runs only in the fully-async entry point), so with them verl
silently falls back to its default scorer (GSM8K: ``\\boxed{72}`` scores 0) and coevo writes no
ledger. This check calls verl's ``get_custom_reward_fn`` and ``resolve_reward_manager_cls`` on the
composed config, exactly what verl's reward workers call.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

__all__ = ["VerlCheckError", "compose", "check"]

COEVO_MODULES = ("coevo.integrations.verl_reward", "coevo.integrations.verl_manager")


class VerlCheckError(Exception):
    """verl would not call coevo's reward with this config (one line)."""


def compose(overrides: Sequence[str], config_name: str = "ppo_trainer"):
    """verl's trainer config with ``overrides``, composed by hydra from verl's installed config dir."""
    try:
        import verl
        from hydra import compose as h_compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
    except ImportError as e:
        raise VerlCheckError(f"verl is not importable here ({e}); run the check where verl is installed") from None
    cdir = Path(verl.__file__).parent / "trainer" / "config"
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(cdir), version_base=None):
            return h_compose(config_name=config_name, overrides=list(overrides))
    except Exception as e:  # hydra's ConfigCompositionException, OverrideParseException ...
        raise VerlCheckError(f"verl's config does not compose with these overrides: {str(e).splitlines()[0]}") from None


def _legacy_set(cfg) -> list[str]:
    out = []
    legacy = cfg.get("custom_reward_function") or {}
    for k in ("path", "name"):
        if legacy.get(k) is not None:
            out.append(f"custom_reward_function.{k}")
    if legacy.get("reward_kwargs") is not None:
        out.append("custom_reward_function.reward_kwargs")
    if (cfg.get("reward_model") or {}).get("reward_manager") is not None:
        out.append("reward_model.reward_manager")
    return out


def check(overrides: Sequence[str]) -> dict:
    """What verl 0.9.1 will load with ``overrides``; ``VerlCheckError`` unless it is coevo's reward."""
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    cfg = compose(overrides)
    legacy = _legacy_set(cfg)
    try:
        fn = get_custom_reward_fn(cfg)
        mgr = resolve_reward_manager_cls(cfg)
    except Exception as e:  # ValueError: Unknown reward manager; ImportError / AttributeError of a path
        raise VerlCheckError(f"verl cannot load the reward: {type(e).__name__}: {e}") from None
    raw = getattr(fn, "args", [None])[0] if fn is not None else None
    fn_mod = getattr(raw, "__module__", "") or ""
    coevo_fn = fn is not None and (fn_mod in COEVO_MODULES or fn_mod.startswith("custom_module")
                                   and getattr(raw, "__name__", "").startswith("compute_"))
    coevo_mgr = mgr.__module__ in COEVO_MODULES
    info = {"reward_function": None if raw is None else f"{fn_mod}:{getattr(raw, '__name__', raw)}",
            "reward_manager": f"{mgr.__module__}:{mgr.__name__}", "ignored_legacy_keys": legacy,
            "reward_kwargs": dict(cfg.reward.custom_reward_function.get("reward_kwargs") or {}),
            "manager_kwargs": dict(cfg.reward.get("reward_kwargs") or {})}
    if not (coevo_fn or coevo_mgr):
        hint = (f"; verl 0.9.1 ignores {', '.join(legacy)}: write reward.custom_reward_function.* and "
                "reward.reward_manager.name instead (docs/verl.md)") if legacy else ""
        raise VerlCheckError(f"verl will not call coevo's reward: reward function {info['reward_function']}, "
                             f"reward manager {info['reward_manager']}{hint}")
    if legacy:
        info["warning"] = f"verl 0.9.1 ignores {', '.join(legacy)} (only reward.* is read)"
    return info
