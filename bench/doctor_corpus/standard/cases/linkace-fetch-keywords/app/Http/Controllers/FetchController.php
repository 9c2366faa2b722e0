<?php

namespace App\Http\Controllers;

use App\Models\Tag;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Http;

class FetchController extends Controller
{
    public function getTags(Request $request): JsonResponse
    {
        $tags = Tag::byUser()
            ->where('name', 'like', '%' . $request->input('query') . '%')
            ->orderBy('name')
            ->get();

        $tags = $tags->map(function ($item) {
            return ['value' => $item->name, 'text' => $item->name];
        });

        return response()->json($tags);
    }

    public function htmlKeywordsFromUrl(Request $request): JsonResponse
    {
        $request->validate(['url' => ['url']]);

        $response = Http::timeout(3)->get($request->input('url'));
        if (! $response->successful()) {
            return response()->json(['keywords' => null]);
        }

        return response()->json(['keywords' => $this->keywords($response->body())]);
    }

    private function keywords(string $html): array
    {
        preg_match('/<meta name="keywords" content="([^"]*)"/i', $html, $match);

        return array_map('trim', explode(',', $match[1] ?? ''));
    }
}
