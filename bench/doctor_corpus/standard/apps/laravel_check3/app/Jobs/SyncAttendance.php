<?php

namespace App\Jobs;

use App\Models\Attendance;
use App\Models\Setting;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class SyncAttendance implements ShouldQueue
{
    use Dispatchable, Queueable;

    public int $timeout = 20;

    public function handle(): void
    {
        $since = (int) Setting::where('key', 'attendance_cursor')->value('value');
        $marks = Attendance::where('id', '>', $since)->orderBy('id')->limit(200)->get();
        foreach ($marks as $mark) {
            $mark->enrollment->increment('present_days');
        }
        if ($marks->isNotEmpty()) {
            Setting::where('key', 'attendance_cursor')->update(['value' => $marks->last()->id]);
        }
    }
}
