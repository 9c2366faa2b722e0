<?php

use App\Http\Controllers\EnrollmentController;
use App\Livewire\GradeBook;
use App\Models\Course;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Route;

Route::get('/courses/{course}', GradeBook::class);
Route::post('/courses/{course}/enrollments', [EnrollmentController::class, 'store']);
Route::post('/courses/{course}/remind', [EnrollmentController::class, 'remindAll']);
Route::post('/courses/{course}/archive', [EnrollmentController::class, 'archive']);
Route::post('/iban', [EnrollmentController::class, 'verifyIban']);
Route::post('/courses/{course}/roster', [EnrollmentController::class, 'syncRoster']);
Route::post('/courses/{course}/roster/push', [EnrollmentController::class, 'pushRoster']);
Route::get('/students/{student}/transcript', [EnrollmentController::class, 'transcript']);
Route::post('/students/{student}/transcript', [EnrollmentController::class, 'requestTranscript']);
Route::post('/courses/{course}/terms', [EnrollmentController::class, 'openTerms']);
Route::get('/exports/{export}/progress', [\App\Http\Controllers\Api\ExportProgressController::class, 'show']);
Route::get('/exports/{export}/steady', [\App\Http\Controllers\Api\ExportProgressController::class, 'steady']);

Route::post('/courses/{course}/averages', function (Course $course) {
    foreach ($course->enrollments()->cursor() as $enrollment) {
        $enrollment->recalculateAverage();
    }

    return back();
});

Route::post('/courses/{course}/export', fn (Course $course) => $course->startGradeExport());

Route::get('/holidays', function () {
    $holidays = Http::get('https://calendar.example/api/holidays')->json();

    return view('holidays', ['holidays' => $holidays]);
});
