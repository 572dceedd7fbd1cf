"""The math world's default prompt style, ``instruct``: R-Zero's prompts (R-Zero §2.1; word for word
from its code), for instruction-following models: the Challenger's system prompt with its difficulty
line ("fewer than 30 % of advanced high-school students could solve it";
``world.challenger_prompt_line``), its short user message, and the Solver's instruction after the
question.  R-Zero sends the Challenger prompt as a system message plus the user message; the World
contract carries one prompt string, so the math world joins both into the user message by default
(``MathWorld(system_in_prompt=True)``); a backend that takes a system prompt can use
``CHALLENGER_SYSTEM`` / ``CHALLENGER_USER`` directly.  Any recipe may run the math world with these
prompts; the R-Zero recipe registers its own name for them as an alias (``RecipeInfo.prompt_styles``).
"""
from dataclasses import dataclass

INSTRUCT = "instruct"  # the style's name: world.prompt_style's default


@dataclass(frozen=True)
class InstructionPrompts:
    """A prompt style for instruction-following models (the world's ``instruct``, or one a recipe folder
    registers by name, ``RecipeInfo.prompt_styles``): the proposer's system prompt
    (``{difficulty_line}`` in it), its user message, what follows the question in the Solver's prompt,
    the default difficulty line, and the ``world.challenger_prompt_line`` phrase that means that line."""

    version: str  # prompt_version of the style (recorded by the run)
    proposer_system: str
    proposer_user: str
    solver_suffix: str
    difficulty_line: str
    difficulty_phrase: str


DIFFICULTY_PHRASE = "fewer than 30% of advanced high-school students could solve it"
DIFFICULTY_LINE = "Aim for a difficulty such that fewer than 30 % of advanced high-school students could solve it. "
CHALLENGER_SYSTEM_TEMPLATE = (
    "You are an expert competition-math problem setter.\n"
    "FIRST, in your private scratch-pad, think step-by-step to design a brand-new, non-trivial problem. "
    "The problem could come from any field of mathematics, including but not limited to algebra, geometry, "
    "number theory, combinatorics, prealgebra, probability, statistics, and calculus. "
    "{difficulty_line}"
    "Avoid re-using textbook clichés or famous contest problems.\n"
    "THEN, without revealing any of your private thoughts, output **exactly** the following two blocks:\n\n"
    "<question>\n"
    "{{The full problem statement on one or more lines}}\n"
    "</question>\n\n"
    "\\boxed{{final_answer}}\n\n"
    "Do NOT output anything else—no explanations, no extra markup."
)
CHALLENGER_SYSTEM = CHALLENGER_SYSTEM_TEMPLATE.format(difficulty_line=DIFFICULTY_LINE)
CHALLENGER_USER = "Generate one new, challenging reasoning question now. Remember to format the output exactly as instructed."
SOLVER_SUFFIX = "Please reason step by step, and put your final answer within \\boxed{}."

INSTRUCT_PROMPTS = InstructionPrompts(version="math-rzero-v1", proposer_system=CHALLENGER_SYSTEM_TEMPLATE,
                                      proposer_user=CHALLENGER_USER, solver_suffix=SOLVER_SUFFIX,
                                      difficulty_line=DIFFICULTY_LINE, difficulty_phrase=DIFFICULTY_PHRASE)
