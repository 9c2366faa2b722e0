"""Everyday Laravel shapes the budget rules read (issue 28's fourth pass): a progress bar
over rows, a query returned by the controller's own method, a service handed to a command.
Each fixture is rewritten from real code found through the code search index (which names
the text, not the repository), each with its bounded twin that must stay quiet."""

from __future__ import annotations

from pathlib import Path

from test_budget_laravel import budget


def test_a_progress_bar_over_rows_is_a_loop(tmp_path: Path) -> None:
    """An image importer's command: `$this->withProgressBar($images, function ($image) {
    Http::...->get(); Storage::put(); })` over `$query->get()` (code index, find_string
    "->withProgressBar("). The twin's bar walks a page of 50 (`->take(50)`)."""
    found = budget(tmp_path, {
        "app/Console/Commands/DownloadImages.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\ProductImage;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Http;
            use Illuminate\\Support\\Facades\\Storage;

            class DownloadImages extends Command
            {
                protected $signature = 'images:download';

                public function handle(): int
                {
                    $images = ProductImage::query()->whereNull('path')->get();
                    $this->withProgressBar($images, function (ProductImage $image) {
                        $response = Http::timeout(30)->get((string) $image->source_url);
                        Storage::disk('public')->put($image->name, $response->body());
                    });
                    return self::SUCCESS;
                }
            }
        """,
        "app/Console/Commands/DownloadFirstImages.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\ProductImage;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Storage;

            class DownloadFirstImages extends Command
            {
                protected $signature = 'images:first';

                public function handle(): int
                {
                    $images = ProductImage::query()->take(50)->get();
                    $this->withProgressBar($images, function (ProductImage $image) {
                        Storage::disk('public')->delete($image->name);
                    });
                    return self::SUCCESS;
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/DownloadImages.php", 17)]


def test_prompts_progress_over_a_lazy_query(tmp_path: Path) -> None:
    """A mapper's purge command: Laravel Prompts' `progress('Purging ...',
    $query->lazyById(), fn ($system) => $system->update([...]))` (code index, find_string
    "->lazyById("); its twin is one set statement."""
    found = budget(tmp_path, {
        "app/Console/Commands/PurgeNotes.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\MapSolarsystem;
            use Illuminate\\Console\\Command;

            use function Laravel\\Prompts\\progress;

            class PurgeNotes extends Command
            {
                protected $signature = 'notes:purge';

                public function handle(): int
                {
                    $query = MapSolarsystem::query()->whereNotNull('notes');
                    progress('Purging', $query->lazyById(), function (MapSolarsystem $s) {
                        $s->update(['notes' => null]);
                    });
                    return self::SUCCESS;
                }

                public function purgeAtOnce(): int
                {
                    MapSolarsystem::query()->whereNotNull('notes')->update(['notes' => null]);
                    return self::SUCCESS;
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/PurgeNotes.php", 17)]


def test_a_query_from_the_controllers_own_method(tmp_path: Path) -> None:
    """A workspace app's mass delete: `$this->targetQuery($request, $workspace)->lazyById()
    ->each(fn ($category) => $category->delete())` in a controller action (code index,
    find_string "->lazyById("). lazyById is a builder's alone, and a method named
    `...Query` returns one. The twin deletes them with one statement."""
    found = budget(tmp_path, {
        "app/Http/Controllers/CategoryController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Models\\Category;
            use Illuminate\\Http\\Request;

            class CategoryController extends Controller
            {
                public function bulkDestroy(Request $request)
                {
                    $this->targetQuery($request)->lazyById()->each(function (Category $c): void {
                        $c->delete();
                    });
                    return back();
                }

                public function export(Request $request)
                {
                    foreach ($this->baseQuery($request)->cursor() as $category) {
                        $category->touch();
                    }
                    return back();
                }

                public function bulkDestroyAtOnce(Request $request)
                {
                    $this->targetQuery($request)->delete();
                    return back();
                }

                private function targetQuery(Request $request)
                {
                    return Category::query()->where('workspace_id', $request->user()->workspace_id);
                }

                private function baseQuery(Request $request)
                {
                    return Category::query()->where('workspace_id', $request->user()->workspace_id);
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "app/Http/Controllers/CategoryController.php", 12),
        ("work-in-request", "app/Http/Controllers/CategoryController.php", 20),
    ]


def test_a_service_handed_to_a_command_is_followed(tmp_path: Path) -> None:
    """A game's milestone command: `handle(MilestoneWatcher $watcher)` calls
    `$watcher->awardReached()`, whose body walks `User::query()->lazyById()->each(...)` and
    writes a row per player (code index, find_string "->lazyById("). The twin's service
    only counts."""
    service = """
        <?php

        namespace App\\Services;

        use App\\Models\\PlayerMilestone;
        use App\\Models\\User;

        class MilestoneWatcher
        {
            public function awardReached(): int
            {
                User::query()->lazyById()->each(function (User $player): void {
                    PlayerMilestone::create(['user_id' => $player->id]);
                });
                return 1;
            }

            public function countReached(): int
            {
                return PlayerMilestone::query()->count();
            }
        }
    """
    command = """
        <?php

        namespace App\\Console\\Commands;

        use App\\Services\\MilestoneWatcher;
        use Illuminate\\Console\\Command;

        class {name} extends Command
        {{
            protected $signature = 'milestones:{name}';

            public function handle(MilestoneWatcher $watcher): int
            {{
                $watcher->{method}();
                return 0;
            }}
        }}
    """
    found = budget(tmp_path, {
        "app/Services/MilestoneWatcher.php": service,
        "app/Console/Commands/Award.php": command.format(name="Award", method="awardReached"),
        "app/Console/Commands/Count.php": command.format(name="Count", method="countReached"),
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/Award.php", 14)]


def test_a_cursor_kept_in_the_settings_table(tmp_path: Path) -> None:
    """A dating-sync app reads where it stopped from its settings table
    (`User::where('id', '>', Setting::where('key', 'last_user_id')->value('value'))
    ->limit(30)->get()`, code index, find_string "Setting::where('key', 'last_"); as a job
    that writes the key back, a retry skips a range. The twin is handed its range."""
    found = budget(tmp_path, {
        "app/Jobs/SaveUserInformation.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Setting;
            use App\\Models\\User;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class SaveUserInformation implements ShouldQueue
            {
                public function handle(): void
                {
                    $lastId = Setting::where('key', 'last_user_id')->value('value');
                    $users = User::where('id', '>', $lastId)->limit(30)->get();
                    foreach ($users as $user) {
                        $user->update(['liked' => true]);
                        Setting::where('key', 'last_user_id')->update(['value' => $user->id]);
                    }
                }
            }
        """,
        "app/Jobs/SaveUserRange.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\User;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class SaveUserRange implements ShouldQueue
            {
                public function __construct(public int $from, public int $until) {}

                public function handle(): void
                {
                    $users = User::whereBetween('id', [$this->from, $this->until])->get();
                    foreach ($users as $user) {
                        $user->update(['liked' => true]);
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("job-resumes-from-cursor", "app/Jobs/SaveUserInformation.php", 13)]


def test_a_request_that_polls_its_batch_waits_for_it(tmp_path: Path) -> None:
    """A research agent dispatches a batch and then loops `while (!$batch->fresh()->
    finished() && $elapsed < $timeout) { sleep(2); }` (code index, find_string
    "->fresh()->finished()"); in a controller action the request waits for every job.
    The twin reads the batch's state once and answers."""
    found = budget(tmp_path, {
        "app/Http/Controllers/ResearchController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Jobs\\RunSubagent;
            use Illuminate\\Support\\Facades\\Bus;

            class ResearchController extends Controller
            {
                public function store()
                {
                    $batch = Bus::batch([new RunSubagent(1), new RunSubagent(2)])->dispatch();
                    $elapsed = 0;
                    while (!$batch->fresh()->finished() && $elapsed < 120) {
                        sleep(2);
                        $elapsed += 2;
                    }
                    return back();
                }

                public function show(string $id)
                {
                    $batch = Bus::findBatch($id);
                    return response()->json(['done' => $batch->finished()]);
                }
            }
        """,
    })  # fmt: skip
    assert found == [("request-waits-for-job", "app/Http/Controllers/ResearchController.php", 14)]


def test_a_project_helper_function_handed_the_row_is_followed(tmp_path: Path) -> None:
    """laravelcm/laravel.cm, app/Console/Commands/UpdateUserRepliesPoints.php: `foreach
    (Reply::all() as $reply) { givePoint(new ReplyCreated($reply->replyAble)); }`. There
    `givePoint()` comes from a gamification package; here it is the project's own helper in
    app/helpers.php (inside `if (! function_exists(...))`), writing a reputation row, as
    projects write their helpers. The twin's helper only formats."""
    helpers = """
        <?php

        if (! function_exists('givePoint')) {
            function givePoint($point, $user = null)
            {
                $user->reputations()->create(['point' => $point->getPoints()]);
            }
        }

        if (! function_exists('pointLabel')) {
            function pointLabel($point)
            {
                return sprintf('%d points', $point->getPoints());
            }
        }
    """
    command = """
        <?php

        namespace App\\Console\\Commands;

        use App\\Gamify\\Points\\ReplyCreated;
        use App\\Models\\Reply;
        use Illuminate\\Console\\Command;

        class {name} extends Command
        {{
            protected $signature = 'lcm:{name}';

            public function handle()
            {{
                foreach (Reply::all() as $reply) {{
                    {helper}(new ReplyCreated($reply->replyAble));
                }}
            }}
        }}
    """
    found = budget(tmp_path, {
        "app/helpers.php": helpers,
        "app/Console/Commands/Points.php": command.format(name="Points", helper="givePoint"),
        "app/Console/Commands/Labels.php": command.format(name="Labels", helper="pointLabel"),
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/Points.php", 15)]


SERVICE = """
    <?php

    namespace App\\Services;

    use App\\Models\\Invoice;

    class InvoiceReminder
    {
        public function remindAll(): int
        {
            Invoice::where('paid', false)->get()->each(function (Invoice $invoice) {
                $invoice->update(['reminded_at' => now()]);
            });
            return 1;
        }

        public static function remindOne(int $id): int
        {
            Invoice::whereKey($id)->update(['reminded_at' => now()]);
            return 1;
        }
    }
"""

CONTROLLER = """
    <?php

    namespace App\\Http\\Controllers;

    use App\\Services\\InvoiceReminder;

    class InvoiceController extends Controller
    {{
        public function remind()
        {{
            {call}
            return back();
        }}
    }}
"""


def test_a_service_the_action_makes_is_followed(tmp_path: Path) -> None:
    """The everyday ways a Laravel controller reaches a service (`app(X::class)->run()`, as
    the workspace app in the code index calls `app(ModuleRegistry::class)->featureEnabled()`;
    `(new X)->run()`; a local `$x = new X`): the service's method walks every unpaid invoice
    and writes per row. The twin calls its static method that updates one invoice by key."""
    calls = {
        "app": "app(InvoiceReminder::class)->remindAll();",
        "new": "(new InvoiceReminder())->remindAll();",
        "local": "$reminder = new InvoiceReminder();\n            $reminder->remindAll();",
        "static": "InvoiceReminder::remindOne(1);",
    }
    for form, call in calls.items():
        found = budget(tmp_path / form, {
            "app/Services/InvoiceReminder.php": SERVICE,
            "app/Http/Controllers/InvoiceController.php": CONTROLLER.format(call=call),
        })  # fmt: skip
        at = 12 if form == "local" else 11
        expected = [] if form == "static" else [
            ("work-in-request", "app/Http/Controllers/InvoiceController.php", at)]  # fmt: skip
        assert found == expected, form
