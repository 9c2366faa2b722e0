<?php

namespace App\Livewire;

use App\Jobs\RebuildCourseStats;
use App\Models\Course;
use App\Models\GradeExport;
use Livewire\Component;

class GradeBook extends Component
{
    public Course $course;

    public ?GradeExport $export = null;

    public string $title = '';

    public function exportAll(): void
    {
        $this->authorize('export', $this->course);
        foreach ($this->course->enrollments as $enrollment) {
            $this->course->exportGrade($enrollment);
        }
    }

    public function export(): void
    {
        $this->authorize('export', $this->course);
        $this->export = $this->course->startGradeExport();
    }

    public function rename(): void
    {
        $this->validate(['title' => 'required|max:120']);
        $this->course->update(['title' => $this->title]);
    }

    public function refreshStats(): void
    {
        dispatch_sync(new RebuildCourseStats($this->course->id));
        $this->dispatch('stats-refreshed');
    }

    public function render()
    {
        return view('livewire.grade-book');
    }
}
