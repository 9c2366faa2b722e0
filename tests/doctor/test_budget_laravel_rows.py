"""What a loop over rows costs, in Laravel: the shapes issue 28's second pass taught the
doctor. Each fixture is rewritten from a shape real Laravel projects use (not copied), each
with its quiet twin in the standard's right shape."""

from __future__ import annotations

from pathlib import Path

from test_budget_laravel import budget


def test_migration_walking_every_user_and_the_static_closure_twin(tmp_path: Path) -> None:
    """A permissions migration gives every user a role (`foreach (User::all() as $user)
    $user->assignRole(...)`, a shape many seeders and migrations share); the twin selects only
    the ids and dispatches one static closure per chunk on its own queue."""
    found = budget(tmp_path, {
        "database/migrations/2024_02_01_000000_grant_roles.php": """
            <?php

            use App\\Models\\User;
            use Illuminate\\Database\\Migrations\\Migration;

            return new class extends Migration
            {
                public function up(): void
                {
                    foreach (User::all() as $user) {
                        $user->assignRole('member');
                    }
                }
            };
        """,
        "database/migrations/2024_02_02_000000_grant_roles_chunked.php": """
            <?php

            use Illuminate\\Database\\Migrations\\Migration;
            use Illuminate\\Support\\Facades\\DB;

            return new class extends Migration
            {
                public function up(): void
                {
                    DB::table('users')->select('id')->chunkById(200, function ($rows) {
                        $ids = $rows->pluck('id')->all();
                        dispatch(static function () use ($ids) {
                            foreach ($ids as $id) {
                                DB::table('role_user')->insert(['user_id' => $id]);
                            }
                        })->onQueue('migrations');
                    });
                }
            };
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-migration", "database/migrations/2024_02_01_000000_grant_roles.php", 10)
    ]


def test_collection_of_rows_walked_with_each_and_map(tmp_path: Path) -> None:
    """A command mails every user a query returned (`$users->each(...)`), a controller walks
    a relation read as a property (`$project->orders->each(...)`), a migration maps over
    `Order::all()` attaching rows. The twin maps rows to an array for a response."""
    found = budget(tmp_path, {
        "app/Console/Commands/RemindUsers.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Mail\\Reminder;
            use App\\Models\\User;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Mail;

            class RemindUsers extends Command
            {
                public function handle(): void
                {
                    $users = User::where('reminded', false)->get();
                    $users->each(function (User $user) {
                        Mail::to($user)->queue(new Reminder($user));
                    });
                }
            }
        """,
        "app/Http/Controllers/ProjectController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Models\\Project;

            class ProjectController extends Controller
            {
                public function close(Project $project)
                {
                    $project->orders->each(fn ($order) => $order->update(['closed' => true]));
                    return back();
                }

                public function show(Project $project)
                {
                    return response()->json($project->orders->map(fn ($o) => ['id' => $o->id]));
                }
            }
        """,
        "database/migrations/2019_01_01_000000_attach_tickets.php": """
            <?php

            use App\\Models\\Order;
            use Illuminate\\Database\\Migrations\\Migration;

            class AttachTickets extends Migration
            {
                public function up()
                {
                    Order::all()->map(function ($order) {
                        $order->tickets()->attach($order->ticket_id);
                    });
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-command", "app/Console/Commands/RemindUsers.php", 15),
        ("work-in-migration", "database/migrations/2019_01_01_000000_attach_tickets.php", 10),
        ("work-in-request", "app/Http/Controllers/ProjectController.php", 11),
    ]


def test_job_walking_a_relation_cursor_and_its_ranged_twin(tmp_path: Path) -> None:
    """A stats job walks `$this->project->orders()->cursor()` summing each order's lines (a
    query per row); scoping by one foreign key does not bound it. The twin is a batch member
    over the id range it was given."""
    found = budget(tmp_path, {
        "app/Jobs/ComputeStats.php": """
            <?php

            namespace App\\Jobs;

            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class ComputeStats implements ShouldQueue
            {
                public function handle(): void
                {
                    foreach ($this->project->orders()->cursor() as $order) {
                        $this->totals[$order->id] = $order->lines()->sum('amount');
                    }
                }
            }
        """,
        "app/Jobs/ComputeStatsSlice.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Order;
            use Illuminate\\Bus\\Batchable;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class ComputeStatsSlice implements ShouldQueue
            {
                use Batchable;

                public function handle(): void
                {
                    $orders = Order::whereBetween('id', [$this->from, $this->to])->cursor();
                    foreach ($orders as $order) {
                        $order->update(['total' => $order->lines()->sum('amount')]);
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("job-not-batched", "app/Jobs/ComputeStats.php", 11)]


def test_coordinator_building_a_job_per_row_then_adding_them(tmp_path: Path) -> None:
    """A coordinator walks a cursor to build one job per invoice, then adds them all at once
    to a shared queue: it walks rows and floods the queue."""
    found = budget(tmp_path, {
        "app/Jobs/PlanExport.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Invoice;
            use Illuminate\\Bus\\Batchable;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class PlanExport implements ShouldQueue
            {
                use Batchable;

                public function handle(): void
                {
                    $jobs = [];
                    foreach (Invoice::where('project_id', $this->projectId)->cursor() as $invoice) {
                        $jobs[] = new ExportInvoice($invoice->id);
                    }
                    $this->batch()->add($jobs);
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("batch-floods-queue", "app/Jobs/PlanExport.php", 19),
        ("coordinator-walks-rows", "app/Jobs/PlanExport.php", 16),
    ]


def test_http_timeout_past_the_budget_in_a_request(tmp_path: Path) -> None:
    """`Http::timeout(20)` defines a timeout, but past the 5 seconds a request has; the twin's
    `Http::timeout(3)` answer is one the person needs to go on."""
    found = budget(tmp_path, {
        "app/Http/Controllers/Api/ProfileController.php": """
            <?php

            namespace App\\Http\\Controllers\\Api;

            use Illuminate\\Support\\Facades\\Http;

            class ProfileController extends Controller
            {
                public function lookup()
                {
                    $response = Http::timeout(20)->get(config('services.lookup.url'));
                    return response()->json($response->json());
                }

                public function quote()
                {
                    $response = Http::timeout(3)->get(config('services.quote.url'));
                    return response()->json($response->json());
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Http/Controllers/Api/ProfileController.php", 11)]


def test_filament_action_waiting_for_a_heavy_job(tmp_path: Path) -> None:
    """A Filament table action runs in the admin's request: one that `dispatchSync`s a job
    walking rows waits for it; the twin's action dispatches it and answers."""
    found = budget(tmp_path, {
        "app/Filament/Resources/Posts/Tables/PostsTable.php": """
            <?php

            namespace App\\Filament\\Resources\\Posts\\Tables;

            use App\\Jobs\\PurgeComments;
            use Filament\\Actions\\Action;
            use Filament\\Tables\\Table;

            class PostsTable
            {
                public static function configure(Table $table): Table
                {
                    return $table->recordActions([
                        Action::make('purge_now')
                            ->action(function ($post) {
                                PurgeComments::dispatchSync($post);
                            }),
                        Action::make('purge_later')
                            ->action(function ($post) {
                                PurgeComments::dispatch($post);
                            }),
                    ]);
                }
            }
        """,
        "app/Jobs/PurgeComments.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Comment;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class PurgeComments implements ShouldQueue
            {
                public function handle(): void
                {
                    foreach (Comment::where('spam', true)->cursor() as $comment) {
                        $comment->delete();
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("job-not-batched", "app/Jobs/PurgeComments.php", 12),
        ("request-waits-for-job", "app/Filament/Resources/Posts/Tables/PostsTable.php", 16),
    ]


def test_zip_of_every_attachment_in_a_livewire_action(tmp_path: Path) -> None:
    """A Livewire action zips every attachment of a project (one ZipArchive entry per row);
    the twin zips the one attachment asked for."""
    found = budget(tmp_path, {
        "app/Livewire/ProjectFiles.php": """
            <?php

            namespace App\\Livewire;

            use Livewire\\Component;

            class ProjectFiles extends Component
            {
                public function downloadAll()
                {
                    $zip = new \\ZipArchive();
                    $zip->open(storage_path('app/all.zip'), \\ZipArchive::CREATE);
                    foreach ($this->project->attachments()->get() as $attachment) {
                        $zip->addFile($attachment->path, $attachment->name);
                    }
                    $zip->close();
                }

                public function downloadOne(int $id)
                {
                    $zip = new \\ZipArchive();
                    $zip->open(storage_path('app/one.zip'), \\ZipArchive::CREATE);
                    $attachment = $this->project->attachments()->findOrFail($id);
                    $zip->addFile($attachment->path, $attachment->name);
                    $zip->close();
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Livewire/ProjectFiles.php", 13)]


def test_loop_in_the_private_method_a_command_hands_its_rows(tmp_path: Path) -> None:
    """A command reads a query's rows and hands them to a private method that mails each
    (`$this->notifyUsers($users)`); the twin's method only counts them."""
    found = budget(tmp_path, {
        "app/Console/Commands/NotifyStaleTokens.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Mail\\StaleToken;
            use App\\Models\\User;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Collection;
            use Illuminate\\Support\\Facades\\Mail;

            class NotifyStaleTokens extends Command
            {
                public function handle(): void
                {
                    $users = User::withStaleTokens()->get();
                    $this->notifyUsers($users);
                    $this->info($this->countUsers($users));
                }

                private function notifyUsers(Collection $users): void
                {
                    $users->each(function (User $user) {
                        Mail::to($user)->queue(new StaleToken($user));
                    });
                }

                private function countUsers(Collection $users): int
                {
                    $count = 0;
                    $users->each(function (User $user) use (&$count) {
                        $count++;
                    });
                    return $count;
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/NotifyStaleTokens.php", 16)]


def test_laravel_excel_export_built_in_the_request(tmp_path: Path) -> None:
    """`(new MembersExport($club->id))->download(...)` and `Excel::download(...)` build the
    whole file while the request waits; the twin queues the export and answers."""
    found = budget(tmp_path, {
        "app/Http/Controllers/MembersController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Exports\\MembersExport;
            use Maatwebsite\\Excel\\Facades\\Excel;

            class MembersController extends Controller
            {
                public function export($clubId)
                {
                    return (new MembersExport($clubId))->download('members.xlsx');
                }

                public function exportCsv($clubId)
                {
                    return Excel::download(new MembersExport($clubId), 'members.csv');
                }

                public function exportLater($clubId)
                {
                    (new MembersExport($clubId))->queue("exports/{$clubId}.xlsx");
                    return back()->with('status', 'The export is on its way.');
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "app/Http/Controllers/MembersController.php", 12),
        ("work-in-request", "app/Http/Controllers/MembersController.php", 17),
    ]
