"""Continue the review until nothing is queued: the one loop over
``DecisionTraces.continue_decision_review`` that the dashboard's sweep, the
``review_sweep`` command and the traces importer run.

Each step is one unit of work of at most ``REVIEW_BATCH_MAX`` decisions, so
the loop is safe beside people using the dashboard, and an interrupted sweep
leaves nothing half done: the next one continues where it stopped.

First it finishes the document writes whose writer stopped half way (a flag
job whose lease expired, ``_flag_jobs``): their citers are flagged before
the review spreads from them. Each unit of such a job is a step.
"""

from __future__ import annotations

from pydantic import BaseModel

from . import _flag_jobs
from .decisions import REVIEW_BATCH_MAX, DecisionTraces


class ReviewSweep(BaseModel):
    """What a sweep did, summed over its steps."""

    moved: int = 0
    flagged: int = 0
    cleared: int = 0
    steps: int = 0
    #: decisions flagged while finishing stopped document writes (their flag jobs)
    sources_flagged: int = 0
    #: True when the last step said nothing more waits; False when a limit stopped it
    done: bool = False


def review_until_done(
    traces: DecisionTraces, *, max_moved: int | None = None, max_steps: int | None = None
) -> ReviewSweep:
    """Call ``continue_decision_review`` until nothing is queued, or until
    ``max_moved`` decisions have moved, or after ``max_steps`` steps."""
    run = ReviewSweep()
    run.steps, run.sources_flagged = _flag_jobs.finish_stale(traces.store, traces.project_id, max_units=max_steps)
    while max_steps is None or run.steps < max_steps:
        if max_moved is not None and run.moved >= max_moved:
            break
        limit = REVIEW_BATCH_MAX if max_moved is None else min(REVIEW_BATCH_MAX, max_moved - run.moved)
        step = traces.continue_decision_review(limit=limit)
        run.steps += 1
        run.moved += step.moved
        run.flagged += len(step.flagged)
        run.cleared += len(step.cleared)
        if not step.moved or not step.more:
            run.done = True
            break
    return run
