"""The one error for "this recipe / world / backend combination cannot run".

Raised wherever a combination is refused (a recipe on a world it does not support, a backend
without a capability the recipe needs, a missing asset); the CLI turns it into one line and
exit status 2, like a config error.  ``RunError`` in ``coevo.runner`` is a subclass, so code that
catches either catches both.
"""


class CannotRun(Exception):
    """This recipe / world / backend combination cannot run (the message says why)."""
