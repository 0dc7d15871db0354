"""The only Django models: who may see which project, and each person's own
marks (what they read, when they last looked, whether they get e-mail). Graph data (tasks,
events, decisions, documents) lives in the graph store, never here."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProjectGrant(models.Model):
    """A person's role in one project: ``viewer`` reads, ``reviewer`` also
    reaffirms, supersedes and rejects, ``steward`` also redacts, deletes
    tasks, runs the sweep and manages tokens and grants. Each project's role
    is independent of every other's. Staff and superusers need no grant: they
    are stewards in every project."""

    VIEWER, REVIEWER, STEWARD = "viewer", "reviewer", "steward"
    ROLES = [(VIEWER, "viewer"), (REVIEWER, "reviewer"), (STEWARD, "steward")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_grants")
    project_id = models.CharField(max_length=200)
    role = models.CharField(max_length=20, choices=ROLES, default=VIEWER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project_id"], name="one_grant_per_project")]

    def __str__(self) -> str:
        return f"{self.user} → {self.project_id} ({self.role})"


class ApiToken(models.Model):
    """An agent's key to one project's JSON API (reviewer.api). Only a hash is
    kept: the token itself is shown once, when a steward creates it. The
    agent id is the author of what the token writes and the actor the
    activity log names; it is unique in its project, so it names the token."""

    AGENT, AUTOMATION = "agent", "automation"
    ROLES = [(AGENT, "agent: records its work"), (AUTOMATION, "automation: reads and reviews")]

    name = models.CharField(max_length=100)
    project_id = models.CharField(max_length=200)
    agent_id = models.CharField(max_length=100)
    role = models.CharField(max_length=20, choices=ROLES, default=AGENT)
    prefix = models.CharField(max_length=16)  # the token's start, shown so a person can tell tokens apart
    digest = models.CharField(max_length=64, unique=True)  # sha256 of the token
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id", "agent_id"], name="one_token_per_agent")]
        ordering = ["project_id", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent_id}) → {self.project_id}"


class OidcIdentity(models.Model):
    """A person who signs in with single sign-on (reviewer.oidc): the provider's
    (issuer, subject) pair, never matched to a password account by name or
    email. Their grants are written from the provider's groups at each sign-in."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_oidc_subject")]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"


class NoticePrefs(models.Model):
    """A person's notification preferences (reviewer.notice_mail): whether
    mentions and assignments also come by e-mail, and up to when the
    sender has looked at their notices (the next e-mail holds only what
    came after; the sender moves it with a conditional update, so two
    processes never send the same notice twice)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notice_prefs")
    email = models.BooleanField(default=False)
    mailed_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} e-mail {'on' if self.email else 'off'}"


class ProjectMarks(models.Model):
    """One person's marks in one project: every notice up to ``read_until``
    is read ("mark all read"), and ``looked_at`` is when they last looked
    (a verdict, "mark all seen"; reviewer.inbox.looked): the overview says
    what changed after it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_marks")
    project_id = models.CharField(max_length=200)
    read_until = models.DateTimeField(null=True, blank=True)
    looked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project_id"], name="one_mark_per_project")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project_id}"


class NoticeRead(models.Model):
    """One notice a person marked read, after their ``read_until``; ``at``
    is the notice's time, so a count after ``read_until`` can take these
    away without asking the graph (and "mark all read" drops them)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project_id = models.CharField(max_length=200)
    entry_id = models.CharField(max_length=64)
    at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project_id", "entry_id"], name="one_read_per_notice")]
        indexes = [models.Index(fields=["user", "project_id", "at"], name="notice_read_by_time")]
