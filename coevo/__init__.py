"""coevo: self-evolving proposer-solver training of LLMs with honest reward accounting."""

__version__ = "0.1.0"
