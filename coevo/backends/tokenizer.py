"""Character tokenizer with a few special tokens, for the tiny CPU policies."""
from __future__ import annotations

import re

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>", "<propose>", "<synth>", "<solve>",
            "<question>", "</question>", "<solution>", "</solution>", "<answer>", "</answer>"]
CHARS = list("0123456789+-*=() ;")


class CharTokenizer:
    def __init__(self) -> None:
        self.itos = SPECIALS + CHARS
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        alt = "|".join(re.escape(s) for s in SPECIALS)
        self._split = re.compile(f"({alt})")

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in self._split.split(text):
            if not part:
                continue
            if part in self.stoi and part in SPECIALS:
                ids.append(self.stoi[part])
            else:
                ids.extend(self.stoi.get(ch, self.unk_id) for ch in part)
        return ids

    def decode(self, ids: list[int], skip_eos: bool = True) -> str:
        out = []
        for i in ids:
            if skip_eos and i in (self.eos_id, self.pad_id):
                continue
            out.append(self.itos[i] if 0 <= i < len(self.itos) else "<unk>")
        return "".join(out)
