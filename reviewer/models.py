"""The only Django models: who may see which project. Graph data (tasks,
events, decisions, documents) lives in the graph store, never here."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProjectGrant(models.Model):
    """A person may open one project (staff may open every project)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_grants")
    project_id = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project_id"], name="one_grant_per_project")]

    def __str__(self) -> str:
        return f"{self.user} → {self.project_id}"
