from django.urls import include, path

from . import (
    converters,  # noqa: F401  (registers the path converters)
    oidc,
)
from .views import (
    activity,
    auth,
    claims,
    comments,
    decisions,
    documents,
    events,
    health,
    inbox,
    people,
    queue,
    tasks,
    tokens,
)

project = "p/<project:project>/"

urlpatterns = [
    path("", auth.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    path("login/", auth.login, name="login"),
    path("logout/", auth.logout, name="logout"),
    # single sign-on (reviewer/oidc.py); 404 unless REVIEWER_OIDC_CLIENT_ID is set
    path("oidc/login/", oidc.OidcStart.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.OidcCallback.as_view(), name="oidc_authentication_callback"),
    path(project, queue.overview, name="overview"),
    path(project + "review/", queue.queue, name="queue"),
    path(project + "review/sweep", queue.sweep, name="sweep"),
    path(project + "review/group", queue.group, name="group"),
    path(project + "review/<uuid:decision_id>/<str:action>", queue.queue_act, name="queue_act"),
    path(project + "decisions/<uuid:decision_id>/", decisions.decision, name="decision"),
    path(project + "decisions/<uuid:decision_id>/reaffirm", decisions.reaffirm, name="reaffirm"),
    path(project + "decisions/<uuid:decision_id>/supersede", decisions.supersede, name="supersede"),
    path(project + "decisions/<uuid:decision_id>/reject", decisions.reject, name="reject"),
    path(project + "decisions/<uuid:decision_id>/cite-instead", decisions.cite_instead, name="cite_instead"),
    path(project + "decisions/<uuid:decision_id>/text", decisions.decision_text, name="decision_text"),
    path(project + "decisions/<uuid:decision_id>/pick", decisions.decision_pick, name="decision_pick"),
    path(project + "conflicts/", queue.conflicts, name="conflicts"),
    path(project + "tasks/", tasks.tasks, name="tasks"),
    path(project + "task/", tasks.task, name="task"),
    path(project + "task/delete", tasks.delete_task, name="delete_task"),
    path(project + "events/", events.events, name="events"),
    path(project + "events/redact", events.redact, name="redact"),
    path(project + "document/", documents.document, name="document"),
    path(project + "activity/", activity.activity, name="activity"),
    path(project + "tokens/", tokens.tokens, name="tokens"),
    path(project + "people/", people.people, name="people"),
    path(project + "tokens/<int:token_id>/revoke", tokens.revoke_token, name="revoke_token"),
    path(project + "activity/download.csv", activity.download, {"fmt": "csv"}, name="activity_csv"),
    path(project + "activity/download.jsonl", activity.download, {"fmt": "jsonl"}, name="activity_jsonl"),
    path(project + "claims/", claims.take_over, name="claim_target"),
    path(project + "claims/lease", claims.lease, name="claim_lease"),
    path(project + "claims/<str:action>", claims.claim_action, name="claim_action"),
    path("api/v1/", include("reviewer.api.urls")),
    # the person's inbox and "since my last visit" (reviewer/inbox.py)
    path("inbox/", inbox.inbox_page, name="inbox"),
    path("inbox/read", inbox.mark_read, name="inbox_read"),
    path("inbox/read-all", inbox.mark_all_read, name="inbox_read_all"),
    path("inbox/settings", inbox.preferences, name="inbox_preferences"),
    path(project + "seen", queue.mark_seen, name="mark_seen"),
    # the discussion of a decision (issue 32; reviewer/views/comments.py)
    path(project + "decisions/<uuid:decision_id>/comments", comments.post_comment, name="post_comment"),
    path(project + "comments/<uuid:comment_id>/edit", comments.edit_comment, name="edit_comment"),
    path(project + "comments/<uuid:comment_id>/delete", comments.delete_comment, name="delete_comment"),
    path(project + "comments/<uuid:comment_id>/redact", comments.redact_comment, name="redact_comment"),
    path(project + "threads/<uuid:thread_id>/resolve", comments.resolve_thread, name="resolve_thread"),
    path(project + "people/mentions", comments.mention_people, name="mention_people"),
]
