"""CASA (CASA proposal): criterion-set accounting with abstention-aware scoring.

``scoring`` (S(y), A(y), r, r~, phi per axis), ``gating`` (failure set, licensing, gate
weights of the arms A/B/C, gated-KL token advantages), ``selfcheck`` (zero-abstention
self-check), ``probes``, ``rows`` (ledger rows), ``views`` (ledger reads), ``config``
(the ``casa`` config section).  See docs/casa.md.
"""
