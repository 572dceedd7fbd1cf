"""The result convention of every command (``--json/--no-json``, off by default; a readable summary
otherwise); defined in ``coevo.cli_common`` so recipe folders' commands use it too."""
from coevo.cli_common import JSON_HELP, emit, json_option, print_summary  # noqa: F401
