"""Shared loop steps: propose, solve + vote, verify against targets, GRPO update."""
