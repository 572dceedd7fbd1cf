"""JSON records files read record by record, every malformed record located: a JSON array
(``indent=4`` files such as R-Zero's results and FlashRAG's ``.json`` splits) or JSON lines.
Shared by the importers of outside runs and the QA benchmark readers."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

__all__ = ["RecordError", "json_records", "jsonl_records", "read_text"]


class RecordError(Exception):
    """An input that cannot be read at all (one line)."""


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise RecordError(f"cannot read {path}: {e.strerror or e}") from None


def jsonl_records(text: str) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, object, None) or (line number, None, reason) per non-blank line."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line), None
        except json.JSONDecodeError as e:
            yield n, None, f"invalid JSON: {e.msg} (column {e.colno})"


def _array(text: str) -> Iterator[tuple[int, Any, str | None]]:
    """The items of a top-level JSON array with the line each starts on; a syntax error ends
    the reading (reported at its line: the rest of the file cannot be delimited)."""
    dec, pos, line, counted = json.JSONDecoder(), text.index("[") + 1, 1, 0
    ws = re.compile(r"\s*")
    while True:
        pos = ws.match(text, pos).end()
        if pos >= len(text):
            yield text.count("\n") + 1, None, "file ends inside the JSON array (truncated?)"
            return
        if text[pos] == "]":
            return
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            yield e.lineno, None, f"JSON syntax error: {e.msg}; nothing after line {e.lineno} is readable"
            return
        yield line, obj, None
        pos = ws.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] != "]":
            ln = line + text.count("\n", counted, pos)
            yield ln, None, f"expected ',' or ']' at line {ln}; nothing after it is readable"
            return


def json_records(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """A JSON array file or a JSON-lines file, record by record (see ``_array`` / ``_jsonl``)."""
    text = read_text(path)
    return _array(text) if text.lstrip().startswith("[") else jsonl_records(text)
