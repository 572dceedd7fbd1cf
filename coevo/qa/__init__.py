"""Real QA benchmarks for search agents (issue #11 item 8): SQuAD EM / Cover-EM
(``metrics``), FlashRAG-format loaders (``benchmarks``), a Search-R1 style search-agent
world over any Retriever (``agent``) and the evaluation loop (``evaluate``).  See docs/qa.md."""
