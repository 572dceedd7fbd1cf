"""The bottom of coevo: the types every layer shares and the contracts between them.

``policy`` (SamplingParams, Completion, Segment, LossConfig, the Policy contract, BackendError),
``world`` (Task, ParseResult, ResponseFormat, the World contract and its capability protocols),
``verdict`` (Verdict and the abstention reasons; and failing closed on a model server, judge or
retriever that is down: ``EndpointDown``, failed calls counted as errors, ``--max-error-rate``),
``plan`` (StepSpec, round plans), ``registry`` (RecipeInfo, RoleSpec and the lookup of recipes by
name), ``errors`` (the one "cannot run" error).  Nothing here imports another coevo package.
"""
