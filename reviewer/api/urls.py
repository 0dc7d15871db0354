from django.urls import path

from . import comments
from .docs import docs
from .views import api

api.add_router("", comments.router)  # the discussion's endpoints (issue 32)

urlpatterns = [
    path("docs", docs, name="api_docs"),
    path("", api.urls),
]
