<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\Schema;
use ProcessMaker\Models\User;

return new class extends Migration
{
    public function up()
    {
        Schema::create('request_user_permissions', function (Blueprint $table) {
            $table->unsignedInteger('request_id');
            $table->unsignedInteger('user_id');
            $table->boolean('can_view');
            $table->timestamps();
            $table->primary(['request_id', 'user_id']);
        });
        foreach (User::all() as $user) {
            $user->updatePermissionsToRequests();
        }
    }

    public function down()
    {
        Schema::dropIfExists('request_user_permissions');
    }
};
