"""The time-budget rules on Laravel code: each fixture is cut from the shapes real Laravel
projects use (controllers, Livewire, Artisan, jobs, migrations, route closures), and each has
a quiet twin in the standard's right shape that must stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tenure.doctor import diagnose
from tenure.doctor.rules import RULES

from conftest import write


def budget(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, int | None]]:
    project = {"artisan": "#!/usr/bin/env php\n", "composer.json": "{}\n"}
    write(tmp_path, {**project, **{n: textwrap.dedent(t).lstrip() for n, t in files.items()}})
    report = diagnose(None, str(tmp_path), history=False)
    return sorted(
        (f.rule, str(f.location.path), f.location.line)
        for f in report.findings
        if RULES[f.rule].group == "budget"
    )


CONTROLLER = """
    <?php

    namespace App\\Http\\Controllers;

    use App\\Mail\\InvoiceReminder;
    use App\\Models\\Invoice;
    use Illuminate\\Support\\Facades\\Mail;

    class InvoiceController extends Controller
    {
        public function remind()
        {
            $invoices = Invoice::where('paid', false)->with('customer')->get();
            foreach ($invoices as $invoice) {
                Mail::to($invoice->customer)->send(new InvoiceReminder($invoice));
            }
            return back();
        }

        public function report(Request $request)
        {
            return response()->json(GenerateReport::dispatchSync($request->user()));
        }
    }
"""
CONTROLLER_QUIET = """
    <?php

    namespace App\\Http\\Controllers;

    use App\\Jobs\\SendReminders;
    use App\\Models\\Invoice;

    class InvoiceController extends Controller
    {
        public function remind()
        {
            SendReminders::dispatch(auth()->id());
            return back();
        }

        public function close()
        {
            Invoice::where('due_at', '<', now())->update(['overdue' => true]);
            foreach (['draft', 'sent'] as $state) {
                Invoice::create(['state' => $state]);
            }
            foreach ($request->all() as $key => $value) {
                session()->put($key, $value);
            }
            return back();
        }
    }
"""


def test_controller_action(tmp_path: Path) -> None:
    rel = "app/Http/Controllers/InvoiceController.php"
    assert budget(tmp_path, {rel: CONTROLLER}) == [
        ("request-waits-for-job", rel, 22),
        ("work-in-request", rel, 14),
    ]


def test_controller_quiet_twin(tmp_path: Path) -> None:
    rel = "app/Http/Controllers/InvoiceController.php"
    assert budget(tmp_path, {rel: CONTROLLER_QUIET}) == []


def test_livewire_action_followed_into_model_method(tmp_path: Path) -> None:
    """The standard's own wrong example: the per-row work is inside a model method."""
    found = budget(tmp_path, {
        "app/Livewire/ExportOrders.php": """
            <?php

            namespace App\\Livewire;

            use Livewire\\Component;

            class ExportOrders extends Component
            {
                public Project $project;

                public function export()
                {
                    foreach ($this->project->orders as $order) {
                        $this->project->exportOrder($order);
                    }
                }

                public function start()
                {
                    $this->project->startExport();
                }
            }
        """,
        "app/Models/Project.php": """
            <?php

            namespace App\\Models;

            class Project extends Model
            {
                public function exportOrder(Order $order): void
                {
                    Storage::disk('s3')->put("exports/{$order->id}.json", $order->toJson());
                }

                public function startExport(): void
                {
                    $lo = $this->orders()->min('id');
                    $hi = $this->orders()->max('id');
                    ExportCoordinator::dispatch($this->id, $lo, $hi);
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Livewire/ExportOrders.php", 13)]


def test_route_closure(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "routes/web.php": """
            <?php

            use App\\Models\\User;
            use Illuminate\\Support\\Facades\\Route;

            Route::post('/recount', function () {
                User::query()->each(function (User $user) {
                    $user->update(['posts_count' => $user->posts()->count()]);
                });
                return 'ok';
            });

            Route::get('/health', fn () => 'ok');
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "routes/web.php", 7)]


def test_artisan_command(tmp_path: Path) -> None:
    rel = "app/Console/Commands/PruneAvatars.php"
    found = budget(tmp_path, {
        rel: """
            <?php

            namespace App\\Console\\Commands;

            use Illuminate\\Console\\Command;

            class PruneAvatars extends Command
            {
                protected $signature = 'avatars:prune';

                public function handle(): int
                {
                    User::whereNotNull('avatar')->chunk(200, function ($users) {
                        foreach ($users as $user) {
                            Storage::delete($user->avatar);
                        }
                    });
                    return 0;
                }
            }
        """,
        "app/Console/Commands/StartPrune.php": """
            <?php

            namespace App\\Console\\Commands;

            use Illuminate\\Console\\Command;

            class StartPrune extends Command
            {
                public function handle(): int
                {
                    PruneCoordinator::dispatch(User::min('id'), User::max('id'));
                    return 0;
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", rel, 14)]


def test_migration_and_its_static_closures_twin(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "database/migrations/2024_01_01_000000_backfill_slugs.php": """
            <?php

            return new class extends Migration {
                public function up(): void
                {
                    foreach (Post::cursor() as $post) {
                        $post->update(['slug' => Str::slug($post->title)]);
                    }
                    RebuildSearchIndex::dispatch();
                }
            };
        """,
        "database/migrations/2024_01_02_000000_backfill_totals.php": """
            <?php

            return new class extends Migration {
                public function up(): void
                {
                    DB::table('orders')->select('id')->chunkById(1000, function ($rows) {
                        $ids = $rows->pluck('id')->all();
                        dispatch(static function () use ($ids) {
                            DB::table('orders')->whereIn('id', $ids)->update(['total' => 0]);
                        });
                    });
                }
            };
        """,
    })  # fmt: skip
    rel = "database/migrations/2024_01_01_000000_backfill_slugs.php"
    assert found == [("work-in-migration", rel, 6), ("work-in-migration", rel, 9)]


JOBS = {
    "app/Jobs/RecalculateStock.php": """
        <?php

        class RecalculateStock implements ShouldQueue
        {
            public function handle(): void
            {
                foreach (Product::all() as $product) {
                    $product->recalculate();
                    $product->save();
                }
            }
        }
    """,
    "app/Jobs/ExportCoordinator.php": """
        <?php

        class ExportCoordinator implements ShouldQueue
        {
            use Batchable;

            public function handle(): void
            {
                $ids = Order::where('project_id', 7)->pluck('id');
                foreach ($ids->chunk(500) as $chunk) {
                    $this->batch()->add(new ExportSlice($chunk->all()));
                }
            }
        }
    """,
    "app/Jobs/ExportSlice.php": """
        <?php

        class ExportSlice implements ShouldQueue
        {
            use Batchable;

            public function handle(): void
            {
                Notify::dispatch($this->ids);
            }
        }
    """,
    "app/Jobs/SyncContacts.php": """
        <?php

        class SyncContacts implements ShouldQueue
        {
            public function __construct(public int $offset = 0) {}

            public function handle(): void
            {
                $last = Cache::get('contacts:last_id', 0);
                $rows = Contact::where('id', '>', $last)->orderBy('id')->limit(100)->get();
                Cache::put('contacts:last_id', $rows->last()->id);
                self::dispatch($this->offset + 100);
            }
        }
    """,
    "app/Http/Controllers/ExportController.php": """
        <?php

        class ExportController extends Controller
        {
            public function show(string $id)
            {
                return ['progress' => Bus::findBatch($id)->progress()];
            }
        }
    """,
}
JOBS_QUIET = {
    "app/Jobs/StartExport.php": """
        <?php

        class StartExport implements ShouldQueue
        {
            use Batchable;

            public function handle(): void
            {
                $lo = Order::min('id');
                $hi = Order::max('id');
                for ($from = $lo; $from <= $hi; $from += 1000) {
                    $this->batch()->add(new ExportRange($from, $from + 999));
                }
            }
        }
    """,
    "app/Jobs/ExportRange.php": """
        <?php

        class ExportRange implements ShouldQueue
        {
            use Batchable;

            public function __construct(public int $from, public int $to) {}

            public function handle(): void
            {
                $orders = Order::whereBetween('id', [$this->from, $this->to])->get();
                foreach ($orders as $order) {
                    $order->update(['exported' => true]);
                }
            }
        }
    """,
    "app/Http/Controllers/ExportController.php": """
        <?php

        class ExportController extends Controller
        {
            public function show(Export $export)
            {
                return ['progress' => $export->processed_rows / $export->total_rows];
            }
        }
    """,
}


def test_job_rules(tmp_path: Path) -> None:
    assert budget(tmp_path, JOBS) == [
        ("batch-floods-queue", "app/Jobs/ExportCoordinator.php", 11),
        ("coordinator-walks-rows", "app/Jobs/ExportCoordinator.php", 9),
        ("job-not-batched", "app/Jobs/RecalculateStock.php", 7),
        ("job-resumes-from-cursor", "app/Jobs/SyncContacts.php", 12),
        ("member-dispatches", "app/Jobs/ExportSlice.php", 9),
        ("member-dispatches", "app/Jobs/SyncContacts.php", 12),  # it sends itself on, too
        ("progress-total-regresses", "app/Http/Controllers/ExportController.php", 7),
    ]


def test_job_rules_quiet_twin(tmp_path: Path) -> None:
    """The standard's right shape: min/max once, ranges added, members over their range."""
    assert budget(tmp_path, JOBS_QUIET) == []


def test_dispatch_sync_of_a_small_command_object_is_quiet(tmp_path: Path) -> None:
    """Some projects use jobs as synchronous command objects (laravel.io): running a small one
    inline is not waiting for a job; running a queued job or one that walks rows is."""
    found = budget(tmp_path, {
        "app/Jobs/LockThread.php": """
            <?php

            final class LockThread
            {
                public function __construct(private Thread $thread) {}

                public function handle(): void
                {
                    $this->thread->update(['locked_at' => now()]);
                }
            }
        """,
        "app/Jobs/CloseStaleThreads.php": """
            <?php

            final class CloseStaleThreads
            {
                public function handle(): void
                {
                    foreach (Thread::where('updated_at', '<', now()->subYear())->get() as $t) {
                        $t->update(['closed' => true]);
                    }
                }
            }
        """,
        "app/Http/Controllers/ThreadsController.php": """
            <?php

            class ThreadsController extends Controller
            {
                public function lock(Thread $thread)
                {
                    $this->dispatchSync(new LockThread($thread));
                    return back();
                }

                public function closeStale()
                {
                    $this->dispatchSync(new CloseStaleThreads());
                    return back();
                }
            }
        """,
    })  # fmt: skip
    assert found == [("request-waits-for-job", "app/Http/Controllers/ThreadsController.php", 13)]


STANDARD_RIGHT = {
    "app/Livewire/OrderExportButton.php": """
        <?php

        namespace App\\Livewire;

        use Livewire\\Attributes\\Computed;
        use Livewire\\Component;

        class OrderExportButton extends Component
        {
            public Project $project;
            public ?OrderExport $export = null;

            public function export(): void
            {
                $this->authorize('export', $this->project);
                $this->export = $this->project->startOrderExport();
            }

            #[Computed]
            public function exportState(): ?string
            {
                return $this->export?->state();
            }

            #[Computed]
            public function exportProgress(): ?int
            {
                return $this->export?->progress();
            }
        }
    """,
    "app/Models/Project.php": """
        <?php

        namespace App\\Models;

        class Project extends Model
        {
            public function startOrderExport(): OrderExport
            {
                $export = $this->orderExports()->create();
                $exportId = $export->id;

                $batch = Bus::batch([new PlanOrderExport($this->id, $exportId, null)])
                    ->then(static function (Batch $batch) use ($exportId) {
                        OrderExport::find($exportId)?->finish();
                    })
                    ->catch(static function (Batch $batch, Throwable $error) use ($exportId) {
                        OrderExport::find($exportId)?->markFailed($error->getMessage());
                    })
                    ->onQueue('exports')
                    ->dispatch();

                $export->update(['batch_id' => $batch->id]);

                return $export;
            }
        }
    """,
    "app/Jobs/PlanOrderExport.php": """
        <?php

        namespace App\\Jobs;

        class PlanOrderExport implements ShouldQueue
        {
            use Batchable, Dispatchable, InteractsWithQueue, Queueable;

            public function __construct(public int $projectId, public int $exportId,
                                        public ?int $from) {}

            public function handle(): void
            {
                $orders = Order::query()->where('project_id', $this->projectId);
                $last = $orders->clone()->max('id');
                if ($last === null) {
                    return;
                }

                $from = $this->from ?? $orders->clone()->min('id');
                $until = min($from + 50 * 200 - 1, $last);
                $jobs = collect(range($from, $until, 50))->map(function (int $start) use ($until) {
                    return new ExportOrders($this->projectId, $this->exportId, $start,
                                            min($start + 49, $until));
                });
                $this->batch()->add($jobs->all());

                if ($until < $last) {
                    $this->batch()->add([new PlanOrderExport($this->projectId, $this->exportId,
                                                             $until + 1)]);
                }
            }
        }
    """,
    "app/Jobs/ExportOrders.php": """
        <?php

        namespace App\\Jobs;

        class ExportOrders implements ShouldQueue
        {
            use Batchable, Dispatchable, InteractsWithQueue, Queueable;

            public $timeout = 30;

            public function __construct(public int $projectId, public int $exportId,
                                        public int $from, public int $to) {}

            public function handle(): void
            {
                $orders = Order::where('project_id', $this->projectId)
                    ->whereBetween('id', [$this->from, $this->to])->get();
                foreach ($orders as $order) {
                    Storage::disk('s3')->put("exports/{$this->exportId}/{$order->id}.json",
                                             $order->toJson());
                }
            }
        }
    """,
}


def test_the_standards_own_right_shapes_are_quiet(tmp_path: Path) -> None:
    """The standard's right example, whole: the action starts the export through the model,
    the model starts a batch, the coordinator reads min/max once and adds ranges, each small
    job works over its range, the screen reads the export record's own progress."""
    assert budget(tmp_path, STANDARD_RIGHT) == []


def test_request_calling_out_with_no_timeout(tmp_path: Path) -> None:
    rel = "app/Http/Controllers/WeatherController.php"
    found = budget(tmp_path, {
        rel: """
            <?php

            class WeatherController extends Controller
            {
                public function show(string $city)
                {
                    return Http::retry(3, 200)->get("https://api.example/weather/{$city}")->json();
                }

                public function quick(string $city)
                {
                    return Http::timeout(3)->get("https://api.example/weather/{$city}")->json();
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", rel, 7)]


def test_a_method_is_followed_into_the_receivers_class_not_a_namesake(tmp_path: Path) -> None:
    """Cut from snipe-it: Asset::checkedOutToUser() only compares; a factory's and another
    model's methods of the same name write. The loop's row is an asset: quiet."""
    found = budget(tmp_path, {
        "app/Models/Asset.php": """
            <?php

            class Asset extends Model
            {
                public function checkedOutToUser(): bool
                {
                    return $this->assigned_type === User::class;
                }
            }
        """,
        "app/Models/Accessory.php": """
            <?php

            class Accessory extends Model
            {
                public function checkedOutToUser(User $user): void
                {
                    $this->checkouts()->create(['assigned_to' => $user->id]);
                }
            }
        """,
        "database/factories/AssetFactory.php": """
            <?php

            class AssetFactory extends Factory
            {
                public function checkedOutToUser(User $user = null)
                {
                    return $this->state(fn () => ['assigned_to' => $user->id])->create();
                }
            }
        """,
        "app/Http/Controllers/ReportsController.php": """
            <?php

            class ReportsController extends Controller
            {
                public function assigned()
                {
                    $rows = [];
                    foreach (Asset::with('assignedTo')->get() as $asset) {
                        $rows[] = $asset->checkedOutToUser() ? 'user' : 'location';
                    }
                    return response()->json($rows);
                }
            }
        """,
    })  # fmt: skip
    assert found == []


def test_broken_and_odd_code_does_not_stop_the_doctor(tmp_path: Path) -> None:
    """Half-written PHP, recursion through the project's own methods, a variable that holds
    itself, and a broken Python file: read as far as they go, never a crash."""
    found = budget(tmp_path, {
        "app/Http/Controllers/BrokenController.php": """
            <?php
            class BrokenController extends Controller {
                public function index() { foreach (User::all() as $u) { $u->save(
        """,
        "app/Http/Controllers/LoopController.php": """
            <?php
            class LoopController extends Controller
            {
                public function run()
                {
                    $q = User::query();
                    $q = $q->where('a', 1);
                    foreach ($q->get() as $user) {
                        $this->again($user);
                    }
                }

                private function again($user) { $this->again($user); }
            }
        """,
        "app/broken.py": "def view(request:\n    for x in\n",
    })  # fmt: skip
    assert found == []


def test_firing_an_event_is_not_dispatching_a_job(tmp_path: Path) -> None:
    """Cut from speedtest-tracker: a batch member fires `SpeedtestCompleted::dispatch()`, an
    event (app/Events), and then dispatches a real job."""
    found = budget(tmp_path, {
        "app/Events/SpeedtestCompleted.php": """
            <?php

            class SpeedtestCompleted
            {
                use Dispatchable, SerializesModels;

                public function __construct(public Result $result) {}
            }
        """,
        "app/Jobs/CompleteSpeedtestJob.php": """
            <?php

            class CompleteSpeedtestJob implements ShouldQueue
            {
                use Batchable, Queueable;

                public function handle(): void
                {
                    $this->result->update(['status' => 'completed']);
                    SpeedtestCompleted::dispatch($this->result);
                }
            }
        """,
        "app/Jobs/NotifySpeedtestJob.php": """
            <?php

            class NotifySpeedtestJob implements ShouldQueue
            {
                use Batchable, Queueable;

                public function handle(): void
                {
                    SendSpeedtestMail::dispatch($this->result);
                }
            }
        """,
    })  # fmt: skip
    assert found == [("member-dispatches", "app/Jobs/NotifySpeedtestJob.php", 9)]


def test_naming_a_file_is_not_reading_it(tmp_path: Path) -> None:
    """Cut from freescout: a thread's attachments listed with Storage::url(), which only
    builds a name; the twin copies each file on the disk."""
    found = budget(tmp_path, {
        "app/Attachment.php": """
            <?php

            class Attachment extends Model
            {
                public function url()
                {
                    return Storage::disk('private')->url($this->file_dir . $this->file_name);
                }

                public function duplicate()
                {
                    Storage::disk('private')->copy($this->path(), $this->path() . '.copy');
                }
            }
        """,
        "app/Http/Controllers/ThreadsController.php": """
            <?php

            class ThreadsController extends Controller
            {
                public function show(Thread $thread)
                {
                    $links = [];
                    foreach ($thread->attachments as $attachment) {
                        $links[] = $attachment->url();
                    }
                    return $links;
                }

                public function copy(Thread $thread)
                {
                    foreach ($thread->attachments as $attachment) {
                        $attachment->duplicate();
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Http/Controllers/ThreadsController.php", 16)]
