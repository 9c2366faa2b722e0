<?php

namespace App\Http\Controllers;

use App\Exports\AttendeesExport;
use App\Jobs\SendAttendeeInviteJob;
use App\Models\Attendee;
use App\Models\Event;
use Illuminate\Http\Request;

class EventAttendeesController extends Controller
{
    public function showExportAttendees($event_id, $export_as = 'xls')
    {
        $event = Event::scope()->findOrFail($event_id);
        $date = date('d-m-Y-g.i.a');

        return (new AttendeesExport($event->id))->download("attendees-as-of-{$date}.{$export_as}");
    }

    public function postInviteAttendee(Request $request, $event_id)
    {
        $attendee = new Attendee();
        $attendee->first_name = $request->get('first_name');
        $attendee->email = $request->get('email');
        $attendee->event_id = $event_id;
        $attendee->ticket_id = $request->get('ticket_id');
        $attendee->save();

        if ($request->get('email_ticket') == '1') {
            SendAttendeeInviteJob::dispatch($attendee);
        }

        return response()->json(['status' => 'success']);
    }
}
