<?php

namespace App\Http\Controllers;

use App\Models\Beatmapset;
use Illuminate\Support\Facades\Auth;

class BeatmapsetWatchesController extends Controller
{
    public function destroy($beatmapsetId)
    {
        $beatmapset = Beatmapset::findOrFail($beatmapsetId);

        $beatmapset->watches()->where('user_id', '=', Auth::user()->getKey())->delete();

        return response()->noContent();
    }
}
