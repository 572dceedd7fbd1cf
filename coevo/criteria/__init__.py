"""Criteria banks (VG-OPD; CASA proposal): the bank format, the criterion verifier and scoring
through the run verifier, derive-then-verify construction.

Public API:
- ``coevo.criteria.bank``: ``Criterion``, ``BankEntry``, ``load_bank``, ``write_bank``,
  ``BankError``, ``bank_summary`` (format: docs/criteria.md)
- ``coevo.criteria.verifier``: ``locate(answer, where)``, ``Channels`` (abstention channel
  rates), ``CriterionVerifier`` (one criterion on a whole answer, any kind), ``reference_of``
- ``coevo.criteria.scoring``: ``CriteriaScorer`` (verdicts through ``RunVerifier``: pool,
  cache, criterion ids), ``criterion_pairs``
- ``coevo.commands.criteria_derive``: ``derive_bank`` (derive-then-verify; rejections with reasons)
"""
from coevo.criteria.bank import BankEntry, BankError, Criterion, bank_summary, load_bank, write_bank

__all__ = ["BankEntry", "BankError", "Criterion", "bank_summary", "load_bank", "write_bank"]
