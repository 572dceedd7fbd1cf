"""A stand-in Solver for tests/test_openrlhf.py's Challenger (``COEVO_SOLVER_FN=openrlhf_stub_solver:solve``):
10 outputs per question, fixed by the question's first word, so p_hat is known by hand."""

OUTPUTS = {
    "Split": ["\\boxed{1}"] * 5 + ["\\boxed{2}"] * 5,  # p_hat 0.5: r_unc 1
    "Easy": ["\\boxed{4}"] * 10,  # p_hat 1: r_unc 0
    "Mostly": ["\\boxed{3}"] * 7 + ["\\boxed{8}"] * 3,  # p_hat 0.7: r_unc 0.6
}


def solve(questions):
    return [list(OUTPUTS.get(q.split()[0], [])) for q in questions]  # other questions: no answers (abstain)
