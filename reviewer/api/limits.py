"""The API's limits: requests per token per minute (429 with Retry-After) and
the size of a request body (413). Counted in Django's cache: by default a
directory every worker process of the host shares, counted under a lock
(``reviewer.cache.SharedFileCache``), so several workers count as one."""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many requests: try again in {retry_after} s")
        self.retry_after = retry_after


class BodyTooLarge(Exception):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the request body has {size} bytes; the limit is {limit}")
        self.size, self.limit = size, limit


def check_rate(token_pk: int) -> None:
    """Raise RateLimited once a token has made REVIEWER_API_RATE requests in
    the current minute."""
    rate = settings.REVIEWER_API_RATE
    now = time.time()
    key = f"reviewer-api-rate:{token_pk}:{int(now // 60)}"
    if hasattr(cache, "count"):  # reviewer.cache.SharedFileCache: one locked step for every worker
        count = cache.count(key, 90)
    else:
        cache.add(key, 0, 90)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, 90)
            count = 1
    if count > rate:
        raise RateLimited(max(1, math.ceil(60 - now % 60)))


def check_body(request: HttpRequest) -> None:
    """Raise BodyTooLarge before the body is read when it says it is too large."""
    limit = settings.REVIEWER_API_MAX_BODY
    try:
        size = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = 0
    if size > limit:
        raise BodyTooLarge(size, limit)
