<?php

namespace App\Http\Controllers;

use App\Jobs\GenerateTranscript;
use App\Models\Course;
use App\Models\Enrollment;
use App\Models\Student;
use App\Notifications\CourseStartsSoon;
use App\Services\RosterClient;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Http;

class EnrollmentController extends Controller
{
    public function __construct(private RosterClient $roster)
    {
    }

    public function store(Request $request, Course $course)
    {
        $enrollment = $course->enrollments()->create([
            'student_id' => $request->integer('student_id'),
        ]);

        return redirect()->route('enrollments.show', $enrollment);
    }

    public function remindAll(Course $course)
    {
        Enrollment::where('course_id', $course->id)
            ->with('student')
            ->lazy()
            ->each(function (Enrollment $enrollment) {
                $enrollment->student->notify(new CourseStartsSoon($enrollment->course));
            });

        return back()->with('status', 'Reminders sent');
    }

    public function archive(Course $course)
    {
        Enrollment::where('course_id', $course->id)
            ->where('finished_at', '<', now()->subYear())
            ->update(['archived' => true]);

        return back();
    }

    public function verifyIban(Request $request)
    {
        $answer = Http::timeout(3)->post('https://iban.example/validate', [
            'iban' => $request->input('iban'),
        ]);

        return response()->json(['valid' => $answer->json('valid')]);
    }

    public function syncRoster(Course $course)
    {
        $response = Http::timeout(30)->get('https://roster.example/api/courses/'.$course->code);
        $course->update(['roster' => $response->json('students')]);

        return back();
    }

    public function pushRoster(Course $course)
    {
        $students = $course->enrollments()->with('student')->get()->pluck('student');
        foreach ($students as $student) {
            $this->roster->pushStudent($student->id, $student->only(['name', 'email']));
        }

        return back();
    }

    public function transcript(Student $student)
    {
        GenerateTranscript::dispatchSync($student->id);

        return response()->download(storage_path("transcripts/{$student->id}.pdf"));
    }

    public function requestTranscript(Student $student)
    {
        GenerateTranscript::dispatch($student->id)->onQueue('transcripts');

        return response()->json(['status' => 'started'], 202);
    }

    public function openTerms(Course $course)
    {
        foreach (['autumn', 'spring', 'summer'] as $term) {
            $course->terms()->create(['name' => $term]);
        }

        return back();
    }
}
