import requests
from django.conf import settings
from django.core.cache import cache
from rest_framework.response import Response
from rest_framework.views import APIView


class EmbedAPI(APIView):
    def _download_page_content(self, url):
        cache_key = f"embed-api-{url}"
        cached_response = cache.get(cache_key)
        if cached_response:
            return cached_response

        response = requests.get(url, timeout=settings.RTD_EMBED_API_DEFAULT_REQUEST_TIMEOUT)
        if response.ok:
            cache.set(cache_key, response.content, timeout=settings.RTD_EMBED_API_PAGE_CACHE_TIMEOUT)
            return response.content
        return None

    def get(self, request):
        content = self._download_page_content(request.GET.get("url"))
        return Response({"content": content and content.decode()})
