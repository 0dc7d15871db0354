from django.contrib.auth import views as auth_views
from django.urls import path

from . import dashboard, views

project = "p/<str:project>/"

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(template_name="reviewer/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(project, dashboard.overview, name="overview"),
    path(project + "review/", dashboard.queue, name="queue"),
    path(project + "review/sweep", dashboard.sweep, name="sweep"),
    path(project + "decisions/<uuid:decision_id>/", dashboard.decision, name="decision"),
    path(project + "decisions/<uuid:decision_id>/reaffirm", dashboard.reaffirm, name="reaffirm"),
    path(project + "decisions/<uuid:decision_id>/supersede", dashboard.supersede, name="supersede"),
    path(project + "decisions/<uuid:decision_id>/reject", dashboard.reject, name="reject"),
    path(project + "conflicts/", dashboard.conflicts, name="conflicts"),
    path(project + "tasks/", dashboard.tasks, name="tasks"),
    path(project + "task/", dashboard.task, name="task"),
    path(project + "task/delete", dashboard.delete_task, name="delete_task"),
    path(project + "events/", dashboard.events, name="events"),
    path(project + "events/redact", dashboard.redact, name="redact"),
    path(project + "document/", dashboard.document, name="document"),
    path(project + "activity/", dashboard.activity, name="activity"),
]
