<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

class ChangePriorityInLoansTable extends Migration
{
    public function up()
    {
        $loans = DB::table('loans')->get();

        $i = 0;

        foreach ($loans as $loan) {
            DB::table('loans')
                ->where('id', $loan->id)
                ->update([
                    'priority' => $i++,
                ]);
        }
    }

    public function down()
    {
        //
    }
}
