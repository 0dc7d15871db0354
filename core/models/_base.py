from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Values as recorded: frozen, no unknown fields, JSON is the seed's names."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)
