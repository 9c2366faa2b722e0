<?php

namespace App\Http\Controllers;

use Illuminate\Http\Request;
use Illuminate\Support\Facades\DB;

class SortableController extends Controller
{
    public function index()
    {
        $divisions = DB::table('sortables')->orderBy('position')->get();

        return view('sortable.index', compact('divisions'));
    }

    public function sorted(Request $request)
    {
        foreach ($request->positions as $position) {
            $index = $position[0];
            $newPosition = $position[1];

            DB::table('sortables')->where('id', $index)->update(['position' => $newPosition]);
        }

        return 'Sorted Successfully';
    }
}
