"""The World contract's capability protocols (coevo.core.world): which shipped world offers what."""
from coevo.core.world import HasCriteria, HasSources, HasTools, SynthesizesTasks
from coevo.worlds.arithmetic import ArithmeticWorld
from coevo.worlds.math import MathWorld
from coevo.worlds.scripted import ScriptedToolWorld


def test_capabilities_of_the_shipped_worlds():
    arith, math, tools = ArithmeticWorld(eval_per_level=2), MathWorld(), ScriptedToolWorld()
    assert isinstance(arith, SynthesizesTasks) and isinstance(math, SynthesizesTasks)
    assert not isinstance(tools, SynthesizesTasks)
    assert isinstance(tools, HasTools) and not isinstance(arith, HasTools)
    assert not any(isinstance(w, (HasSources, HasCriteria)) for w in (arith, math, tools))
