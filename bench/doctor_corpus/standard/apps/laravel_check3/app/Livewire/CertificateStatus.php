<?php

namespace App\Livewire;

use App\Models\GradeExport;
use App\Models\Student;
use Livewire\Attributes\Computed;
use Livewire\Component;

class CertificateStatus extends Component
{
    public ?GradeExport $export = null;

    #[Computed]
    public function exportProgress(): ?int
    {
        return $this->export?->progress();
    }

    public function remindGuardians(): void
    {
        Student::where('course_id', $this->export->course_id)
            ->each(fn (Student $student) => $student->mailTermReport());
    }

    public function render()
    {
        return view('livewire.certificate-status');
    }
}
