<?php

namespace App\Http\Controllers;

use App\Jobs\GenerateTicketJob;
use App\Models\Attendee;

class EventAttendeesController extends Controller
{
    public function showExportTicket($event_id, $attendee_id)
    {
        $attendee = Attendee::scope()->findOrFail($attendee_id);
        $pdf_file = public_path(config('attendize.event_pdf_tickets_path')) . '/' . $attendee->reference . '.pdf';

        $this->dispatchNow(new GenerateTicketJob($attendee));

        return response()->download($pdf_file);
    }

    public function postCancelAttendee($event_id, $attendee_id)
    {
        $attendee = Attendee::scope()->findOrFail($attendee_id);
        $attendee->ticket->decrement('quantity_sold');
        $attendee->is_cancelled = 1;
        $attendee->save();

        return response()->json(['status' => 'success']);
    }
}
