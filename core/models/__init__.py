"""Pydantic models of the history, decision and retention layers (seed 001)."""

from .claims import *  # noqa: F403
from .comments import *  # noqa: F403
from .decision import *  # noqa: F403
from .retention import *  # noqa: F403
from .task import *  # noqa: F403
from .write_result import *  # noqa: F403
