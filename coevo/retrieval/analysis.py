"""The text analysis of Search-R1's BM25 index, in Python: pyserini's default English analyzer.

Search-R1 builds its BM25 index with ``python -m pyserini.index.lucene --collection JsonCollection
--generator DefaultLuceneDocumentGenerator`` (PeterGriffinJin/Search-R1 @ a14dc3a,
``search_r1/search/index_builder.py::build_bm25_index``) and searches it with pyserini's
``LuceneSearcher`` defaults (BM25 k1 0.9, b 0.4). Both sides go through Anserini's
``DefaultEnglishAnalyzer`` (porter): StandardTokenizer -> EnglishPossessiveFilter ->
LowerCaseFilter -> StopFilter (Lucene's 33 English stop words) -> PorterStemFilter.

* Stemming is :func:`porter_stem`, Martin Porter's reference algorithm (Release 3: ``bli -> ble``,
  ``logi -> log``, words under 3 letters left alone) step for step as Lucene's
  ``org.apache.lucene.analysis.en.PorterStemmer`` runs it. On the 17,612 distinct tokens of coevo's
  shipped corpus, NQ sample and GSM8K sample it gives Lucene's stem (that class compiled and run)
  for every one; so does NLTK's ``PorterStemmer(mode=MARTIN_EXTENSIONS)``, but importing NLTK
  pulls in scipy.stats (seconds); PyStemmer's (Snowball's) ``porter`` differs on 34 (``analogy`` ->
  ``analogi``, ``as`` -> ``a``), NLTK's default mode on 280. ``tests/fixtures/lucene/porter.tsv``
  pins 400 of them, those 314 included.
* Tokens approximate UAX#29 word breaks as StandardTokenizer applies them for English text: runs of
  word characters, joined across an apostrophe or a period between them (``don't``, ``u.s``,
  ``3.14``) and a comma between digits (``1,000``); a trailing ``'s`` is dropped (possessive).
"""
from __future__ import annotations

import re
from functools import lru_cache

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET; bm25s's STOPWORDS_EN is the same 33 words.
LUCENE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split())

LUCENE_TOKEN_RE = re.compile(r"\w+(?:(?:['\u2019.]|(?<=\d),(?=\d))\w+)*", re.U)
_POSSESSIVE = ("'s", "\u2019s", "'S", "\u2019S")


_STEP3 = {  # Porter's step 2 (Lucene's step3), keyed by the next-to-last letter; first matching suffix wins
    "a": (("ational", "ate"), ("tional", "tion")), "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),), "g": (("logi", "log"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"))}
_STEP4 = {  # Porter's step 3 (Lucene's step4), keyed by the last letter
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")), "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")), "s": (("ness", ""),)}
_STEP5 = {  # Porter's step 4 (Lucene's step5), keyed by the next-to-last letter; "ion" is handled apart
    "a": ("al",), "c": ("ance", "ence"), "e": ("er",), "i": ("ic",), "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"), "o": ("ou",), "s": ("ism",), "t": ("ate", "iti"), "u": ("ous",),
    "v": ("ive",), "z": ("ize",)}


class _Porter:
    """One word through Porter's algorithm, Martin Porter's Release 3 as Lucene's PorterStemmer runs
    it: ``b[0..k]`` is the word so far, ``j`` the end of the stem before the last matched suffix."""

    def __init__(self, word: str):
        self.b, self.k, self.j = list(word), len(word) - 1, 0

    def cons(self, i: int) -> bool:
        c = self.b[i]
        if c in "aeiou":
            return False
        return c != "y" or i == 0 or not self.cons(i - 1)

    def m(self) -> int:
        """The number of vowel-consonant sequences in ``b[0..j]``."""
        n, prev_vowel = 0, False
        for i in range(self.j + 1):
            vowel = not self.cons(i)
            if prev_vowel and not vowel:
                n += 1
            prev_vowel = vowel
        return n

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def double_cons(self, i: int) -> bool:
        return i >= 1 and self.b[i] == self.b[i - 1] and self.cons(i)

    def cvc(self, i: int) -> bool:
        return (i >= 2 and self.cons(i) and not self.cons(i - 1) and self.cons(i - 2)
                and self.b[i] not in "wxy")

    def ends(self, s: str) -> bool:
        o = self.k - len(s) + 1
        if o < 0 or "".join(self.b[o:self.k + 1]) != s:
            return False
        self.j = self.k - len(s)
        return True

    def set_to(self, s: str) -> None:
        self.b[self.j + 1:] = s
        self.k = self.j + len(s)

    def replace(self, s: str) -> None:
        if self.m() > 0:
            self.set_to(s)

    def step1(self) -> None:  # plurals, -ed, -ing
        b = self.b
        if b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.set_to("i")
            elif b[self.k - 1] != "s":
                self.k -= 1
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowel_in_stem():
            self.k = self.j
            if self.ends("at"):
                self.set_to("ate")
            elif self.ends("bl"):
                self.set_to("ble")
            elif self.ends("iz"):
                self.set_to("ize")
            elif self.double_cons(self.k):
                if b[self.k] not in "lsz":
                    self.k -= 1
            elif self.m() == 1 and self.cvc(self.k):
                self.set_to("e")

    def suffixes(self) -> None:  # Lucene's step2 .. step5
        if self.ends("y") and self.vowel_in_stem():
            self.b[self.k] = "i"
        for table, at in ((_STEP3, 1), (_STEP4, 0)):
            if self.k == 0 and at:
                continue
            for suffix, repl in table.get(self.b[self.k - at], ()):
                if self.ends(suffix):
                    self.replace(repl)
                    break
        if self.k == 0:
            return
        c = self.b[self.k - 1]
        hit = (c == "o" and self.ends("ion") and self.j >= 0 and self.b[self.j] in "st") or \
            any(self.ends(suffix) for suffix in _STEP5.get(c, ()))
        if hit and self.m() > 1:
            self.k = self.j

    def step6(self) -> None:  # a final -e, a final -ll
        self.j = self.k
        if self.b[self.k] == "e":
            a = self.m()
            if a > 1 or a == 1 and not self.cvc(self.k - 1):
                self.k -= 1
        if self.b[self.k] == "l" and self.double_cons(self.k) and self.m() > 1:
            self.k -= 1


@lru_cache(maxsize=1 << 18)
def porter_stem(word: str) -> str:
    """Lucene's PorterStemFilter on one lower-cased token: M. F. Porter, "An algorithm for suffix
    stripping" (Program 14(3), 1980), as his reference Release 3 and Lucene run it (see the module
    docstring); words under 3 characters are left alone."""
    if len(word) < 3:
        return word
    p = _Porter(word)
    p.step1()
    p.suffixes()
    p.step6()
    return "".join(p.b[:p.k + 1])


def lucene_english_tokens(text: str) -> list[str]:
    """Index / query terms of ``text`` as pyserini's default English analyzer makes them:
    tokens, possessive ``'s`` dropped, lower-cased, Lucene's stop words removed, Porter-stemmed."""
    out = []
    for tok in LUCENE_TOKEN_RE.findall(text):
        if tok.endswith(_POSSESSIVE):
            tok = tok[:-2]
        tok = tok.lower()
        if tok and tok not in LUCENE_STOPWORDS:
            out.append(porter_stem(tok))
    return out
