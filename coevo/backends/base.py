"""Old path of the contract types (they live in ``coevo.core.policy``); kept so existing imports work."""
from coevo.core.policy import (  # noqa: F401
    SamplingParams, STREAMS, Segment, Completion, BackendError, full_text, SAMPLER_KEYS, sampler_info, LossConfig, Policy,
)
