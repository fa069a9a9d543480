"""Seeded samples from a `vllm.LLM`, each checked: a finished output in its language, a cut one a viable prefix."""

from __future__ import annotations

from typing import Any, Callable

import pda


def sample_and_check(llm: Any, label: str, check: Callable[[str], Any], grammar: pda.Grammar, samples: int,
                     **sampling: Any) -> int:
    """`samples` outputs at temperature 1 (seeds 0..samples-1) with `sampling`'s parameters; the finished count."""
    from vllm import SamplingParams

    params = [SamplingParams(temperature=1.0, seed=seed, **sampling) for seed in range(samples)]
    outputs = llm.generate([f"Sample {label} #{i}:" for i in range(samples)], params, use_tqdm=False)
    finished = 0
    for output in outputs:
        done = output.outputs[0]
        assert done.finish_reason in ("stop", "length"), done
        if done.finish_reason == "stop":
            assert check(done.text), done.text
            finished += 1
        else:
            assert grammar.accepts_prefix(done.text), done.text
    return finished
