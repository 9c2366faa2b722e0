<?php

namespace App\Http\Controllers;

use App\Models\Event;
use App\Models\ReservedTickets;
use Illuminate\Http\Request;

class EventCheckoutController extends Controller
{
    public function postValidateTickets(Request $request, $event_id)
    {
        $event = Event::findOrFail($event_id);

        if (! $request->has('tickets')) {
            return response()->json(['status' => 'error', 'message' => 'No tickets selected']);
        }

        ReservedTickets::where('session_id', '=', session()->getId())->delete();

        return response()->json(['status' => 'success', 'event' => $event->id]);
    }
}
