"""Character tokenizers: ``CharTokenizer`` (a few special tokens, for the tiny CPU policies)
and ``make_char_tokenizer`` (a transformers fast tokenizer over printable characters with a
ChatML template, for the offline HF tests and gpu_check)."""
from __future__ import annotations

import re
import string
from typing import Sequence

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>", "<propose>", "<synth>", "<solve>",
            "<question>", "</question>", "<solution>", "</solution>", "<answer>", "</answer>"]
CHARS = list("0123456789+-*=() ;")
# appended after the original 31 ids (append-only: existing checkpoints keep their ids and
# vocabulary size; a tokenizer built for a 31-token model never emits these): the facts
# world's search-agent tags and lower-case letters (coevo/worlds/facts.py, codes surface)
NEW_SPECIALS = ["<search>", "</search>", "<information>", "</information>"]
NEW_CHARS = list("abcdefghijklmnopqrstuvwxyz")
BASE_VOCAB = len(SPECIALS) + len(CHARS)  # 31: the arithmetic policies
FULL_VOCAB = BASE_VOCAB + len(NEW_SPECIALS) + len(NEW_CHARS)  # 61: the facts policies


class CharTokenizer:
    """``vocab_size``: the first ``vocab_size`` entries of SPECIALS + CHARS + NEW_SPECIALS +
    NEW_CHARS (default: the original 31); characters outside it encode as ``<unk>``."""

    def __init__(self, vocab_size: int | None = None) -> None:
        n = BASE_VOCAB if vocab_size is None else int(vocab_size)
        full = SPECIALS + CHARS + NEW_SPECIALS + NEW_CHARS
        if not BASE_VOCAB <= n <= len(full):
            raise ValueError(f"CharTokenizer vocab_size must be in [{BASE_VOCAB}, {len(full)}], got {n}")
        self.itos = full[:n]
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        self.specials = [s for s in SPECIALS + NEW_SPECIALS if s in self.stoi]
        alt = "|".join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True))
        self._split = re.compile(f"({alt})")

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in self._split.split(text):
            if not part:
                continue
            if part in self.stoi and part in self.specials:
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


CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_char_tokenizer(vocab_size: int | None = None):
    """An offline character-level tokenizer with a ChatML template (tests, gpu_check).

    ``vocab_size`` pads the vocabulary with filler tokens ``<t123>`` so a model with a
    real-sized vocabulary (Qwen: 151,936) can sample any id and still decode.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = ["<pad>", "<|im_start|>", "<|im_end|>", "<unk>"]
    words = special + list(string.printable)
    if vocab_size is not None:
        words += [f"<t{i}>" for i in range(len(words), vocab_size)]
    vocab = {w: i for i, w in enumerate(words)}
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    t.decoder = decoders.Fuse()
    t.add_special_tokens(special[:3])
    tok = PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>")
    tok.chat_template = CHAT_TEMPLATE
    return tok


class StopOnNewText:
    """Stopping criterion on the *generated* text only (transformers' ``stop_strings``
    also matches across the prompt boundary, e.g. a prompt ending in a newline)."""

    def __init__(self, tokenizer, stops: Sequence[str], prompt_len: int) -> None:
        self.tok, self.stops, self.P = tokenizer, [s for s in stops if s], prompt_len
        self.window = max(len(s) for s in self.stops) + 4

    def __call__(self, input_ids: "torch.Tensor", scores, **kwargs) -> "torch.Tensor":
        import torch

        tails = input_ids[:, self.P:][:, -self.window:].tolist()
        texts = self.tok.batch_decode(tails, skip_special_tokens=True)
        return torch.tensor([any(s in t for s in self.stops) for t in texts], dtype=torch.bool,
                            device=input_ids.device)


def cut_at_stop(tok, toks: list[int], text: str, stops: Sequence[str]) -> tuple[int, str, str | None]:
    """Earliest stop string in ``text``: (#tokens needed to produce it, text before it, the stop)."""
    best, hit = None, None
    for s in stops:
        if not s:
            continue
        i = text.find(s)
        if i >= 0 and (best is None or i < best):
            best, hit = i, s
    if hit is None:
        return len(toks), text, None
    need = best + len(hit)
    lo, hi = 1, len(toks)
    while lo < hi:  # smallest prefix whose decoded text contains the stop string
        mid = (lo + hi) // 2
        if len(tok.decode(toks[:mid], skip_special_tokens=True)) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo, text[:best], hit
