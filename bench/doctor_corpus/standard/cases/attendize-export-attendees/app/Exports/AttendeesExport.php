<?php

namespace App\Exports;

use App\Models\Attendee;
use Maatwebsite\Excel\Concerns\Exportable;
use Maatwebsite\Excel\Concerns\FromQuery;

class AttendeesExport implements FromQuery
{
    use Exportable;

    public function __construct(private int $event_id)
    {
    }

    public function query()
    {
        return Attendee::query()
            ->join('orders', 'orders.id', '=', 'attendees.order_id')
            ->join('tickets', 'tickets.id', '=', 'attendees.ticket_id')
            ->where('attendees.event_id', $this->event_id)
            ->where('attendees.is_cancelled', false);
    }
}
