<?php

namespace Pterodactyl\Http\Controllers\Api\Remote\Servers;

use Illuminate\Database\ConnectionInterface;
use Illuminate\Http\JsonResponse;
use Pterodactyl\Http\Controllers\Controller;
use Pterodactyl\Models\Allocation;
use Pterodactyl\Repositories\Eloquent\ServerRepository;

class ServerTransferController extends Controller
{
    public function __construct(private ConnectionInterface $connection, private ServerRepository $repository)
    {
    }

    public function success(string $uuid): JsonResponse
    {
        $server = $this->repository->getByUuid($uuid);
        $transfer = $server->transfer;

        $this->connection->transaction(function () use ($server, $transfer) {
            $allocations = array_merge([$transfer->old_allocation], $transfer->old_additional_allocations);
            Allocation::query()->whereIn('id', $allocations)->update(['server_id' => null]);
            $server->update(['allocation_id' => $transfer->new_allocation, 'node_id' => $transfer->new_node]);
            $server->transfer->update(['successful' => true]);
        });

        return new JsonResponse([], JsonResponse::HTTP_NO_CONTENT);
    }
}
