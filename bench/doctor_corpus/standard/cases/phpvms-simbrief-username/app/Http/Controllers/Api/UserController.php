<?php

namespace App\Http\Controllers\Api;

use App\Http\Controllers\Controller;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Auth;
use Illuminate\Support\Facades\Http;

class UserController extends Controller
{
    public function simbrief_username(Request $request): JsonResponse
    {
        $validated = $request->validate(['simbrief_username' => 'required|string']);

        $response = Http::timeout(20)->get(config('phpvms.simbrief_ofp_url'), [
            'username' => $validated['simbrief_username'],
            'json'     => 'v2',
        ]);

        if ($response->serverError()) {
            return response()->json(['success' => false], 422);
        }

        Auth::user()->update(['simbrief_username' => $validated['simbrief_username']]);

        return response()->json(['success' => true]);
    }
}
