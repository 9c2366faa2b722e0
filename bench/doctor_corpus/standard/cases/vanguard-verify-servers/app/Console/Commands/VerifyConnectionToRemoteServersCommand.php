<?php

namespace App\Console\Commands;

use App\Jobs\CheckRemoteServerConnectionJob;
use App\Models\RemoteServer;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;

class VerifyConnectionToRemoteServersCommand extends Command
{
    protected $signature = 'vanguard:verify-connection-to-remote-servers';

    public function handle(): void
    {
        $remoteServers = RemoteServer::all();

        if ($remoteServers->isEmpty()) {
            return;
        }

        Bus::batch(
            $remoteServers->map(fn (RemoteServer $server) => new CheckRemoteServerConnectionJob($server->id))->toArray()
        )->name('Check connection to remote servers')
            ->onQueue('connectivity-checks')
            ->dispatch();
    }
}
