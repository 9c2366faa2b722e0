<?php

use App\Models\Student;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Str;

return new class extends Migration
{
    public function up(): void
    {
        Student::query()->whereNull('slug')->lazyById(500)->each(function (Student $student) {
            $student->update(['slug' => Str::slug($student->name.'-'.$student->id)]);
        });
    }

    public function down(): void
    {
    }
};
