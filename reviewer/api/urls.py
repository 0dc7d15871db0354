from django.urls import path

from .docs import docs
from .views import api

urlpatterns = [
    path("docs", docs, name="api_docs"),
    path("", api.urls),
]
