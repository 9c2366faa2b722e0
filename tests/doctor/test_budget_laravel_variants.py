"""The everyday variants of the standard's shapes in Laravel (issue 28's third pass): each
fixture is rewritten from a shape a real project uses, each with its bounded twin."""

from __future__ import annotations

from pathlib import Path

from test_budget_laravel import budget


def test_a_higher_order_each_over_rows_is_a_loop(tmp_path: Path) -> None:
    """A police-stations app empties its table row by row before an import
    (`Comisaria::get()->each->delete()` in a controller action); the twin is one set
    statement."""
    found = budget(tmp_path, {
        "app/Http/Controllers/ComisariaController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Models\\Comisaria;
            use Illuminate\\Http\\Request;

            class ComisariaController extends Controller
            {
                public function importExcel(Request $request)
                {
                    Comisaria::get()->each->delete();
                    return back();
                }

                public function truncate(Request $request)
                {
                    Comisaria::query()->delete();
                    return back();
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Http/Controllers/ComisariaController.php", 12)]


def test_each_proxy_inside_a_chunk_callback(tmp_path: Path) -> None:
    """`->chunkById(100, fn ($rows) => $rows->each->delete())` in a command: every chunk's
    rows are deleted one by one; a model method reached through the proxy is followed too."""
    found = budget(tmp_path, {
        "app/Console/Commands/PurgeDrafts.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\Draft;
            use Illuminate\\Console\\Command;

            class PurgeDrafts extends Command
            {
                protected $signature = 'drafts:purge';

                public function handle(): void
                {
                    Draft::where('stale', true)->chunkById(100, function ($drafts) {
                        $drafts->each->archive();
                    });
                }
            }
        """,
        "app/Console/Commands/PurgeOneDraft.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\Draft;
            use Illuminate\\Console\\Command;

            class PurgeOneDraft extends Command
            {
                protected $signature = 'drafts:purge-one {id}';

                public function handle(): void
                {
                    Draft::whereKey($this->argument('id'))->get()->each->archive();
                }
            }
        """,
        "app/Models/Draft.php": """
            <?php

            namespace App\\Models;

            use Illuminate\\Database\\Eloquent\\Model;
            use Illuminate\\Support\\Facades\\Storage;

            class Draft extends Model
            {
                public function archive(): void
                {
                    Storage::move("drafts/{$this->id}", "archive/{$this->id}");
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/PurgeDrafts.php", 15)]


def test_rows_turned_into_an_array_are_still_every_row(tmp_path: Path) -> None:
    """An SSL module's cron walks `$certificatesQuery->get()->toArray()` and asks the
    provider's API about each certificate; the twin walks a fixed list of statuses."""
    found = budget(tmp_path, {
        "app/Console/Commands/SyncCertificates.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Models\\Service;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Http;

            class SyncCertificates extends Command
            {
                protected $signature = 'ssl:sync';

                public function handle(): void
                {
                    $certificatesQuery = Service::where('domainstatus', 'Active');
                    foreach ($certificatesQuery->get()->toArray() as $certificate) {
                        $order = Http::timeout(3)->get("https://ssl.example/{$certificate['remoteid']}");
                        Service::whereKey($certificate['id'])->update(['status' => $order['s']]);
                    }
                    foreach (Service::whereIn('id', [1, 2, 3])->get()->toArray() as $pinned) {
                        Service::where('id', $pinned['id'])->update(['pinned' => true]);
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "app/Console/Commands/SyncCertificates.php", 16)]


def test_a_cursor_written_inside_the_loop(tmp_path: Path) -> None:
    """A job reads its last id from the cache and moves it after every row; the twin is the
    batch member over the range it was given."""
    found = budget(tmp_path, {
        "app/Jobs/PushContacts.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Contact;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;
            use Illuminate\\Support\\Facades\\Cache;

            class PushContacts implements ShouldQueue
            {
                public function handle(): void
                {
                    $last = Cache::get('contacts_last_id', 0);
                    $contacts = Contact::where('id', '>', $last)->orderBy('id')->limit(500)->get();
                    foreach ($contacts as $contact) {
                        $contact->push();
                        Cache::put('contacts_last_id', $contact->id);
                    }
                }
            }
        """,
        "app/Jobs/PushContactRange.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\Contact;
            use Illuminate\\Bus\\Batchable;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            class PushContactRange implements ShouldQueue
            {
                use Batchable;

                public function __construct(public int $from, public int $to) {}

                public function handle(): void
                {
                    $contacts = Contact::whereBetween('id', [$this->from, $this->to])->get();
                    foreach ($contacts as $contact) {
                        $contact->push();
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("job-resumes-from-cursor", "app/Jobs/PushContacts.php", 13)]


def test_jobs_mapped_from_rows_into_a_batch_are_split_outside_a_coordinator(
    tmp_path: Path,
) -> None:
    """A daily command maps every pending user to a job and batches them all
    (`$jobs = $users->map(fn ($user) => new SendAdminVerificationEmail($user))->toArray();
    Bus::batch($jobs)->dispatch()`): the split happens in the command, row by row, onto the
    shared queue. The twin dispatches a batch of one coordinator; a route closure passing the
    mapped rows straight to `Bus::batch(...)` is the request's version. (The same batch on a
    queue of its own is the corpus's vanguard trap: the standard's spread-out dispatch.)"""
    found = budget(tmp_path, {
        "app/Console/Commands/SendVerificationEmails.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Jobs\\PlanVerificationEmails;
            use App\\Jobs\\SendAdminVerificationEmail;
            use App\\Models\\User;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Bus;

            class SendVerificationEmails extends Command
            {
                protected $signature = 'emails:send-daily-admin-verifications';

                public function handle()
                {
                    $users = User::whereNull('email_verified_at')->get();
                    $jobs = $users->map(fn ($u) => new SendAdminVerificationEmail($u))->toArray();
                    Bus::batch($jobs)->dispatch();
                }
            }
        """,
        "app/Console/Commands/PlanVerificationEmailsCommand.php": """
            <?php

            namespace App\\Console\\Commands;

            use App\\Jobs\\PlanVerificationEmails;
            use Illuminate\\Console\\Command;
            use Illuminate\\Support\\Facades\\Bus;

            class PlanVerificationEmailsCommand extends Command
            {
                protected $signature = 'emails:plan';

                public function handle()
                {
                    Bus::batch([new PlanVerificationEmails()])->onQueue('emails')->dispatch();
                }
            }
        """,
        "routes/web.php": """
            <?php

            use App\\Jobs\\SendAdminVerificationEmail;
            use App\\Models\\User;
            use Illuminate\\Support\\Facades\\Bus;
            use Illuminate\\Support\\Facades\\Route;

            Route::post('/admin/verify-all', function () {
                Bus::batch(User::whereNull('email_verified_at')->get()
                    ->map(fn ($user) => new SendAdminVerificationEmail($user)))->dispatch();
                return back();
            });
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-command", "app/Console/Commands/SendVerificationEmails.php", 18),
        ("work-in-request", "routes/web.php", 9),
    ]


def test_a_job_sending_itself_on_through_a_local_offset(tmp_path: Path) -> None:
    """A statements archive's delete job computes `$next_min = $this->min + $this->chunk + 1`
    and dispatches itself with it (the offset + N shape, held in a local first); the twin
    splits its range in half by dispatching itself: a member dispatching, but no cursor."""
    found = budget(tmp_path, {
        "app/Jobs/DeleteChunk.php": """
            <?php

            namespace App\\Jobs;

            use Illuminate\\Contracts\\Queue\\ShouldQueue;
            use Illuminate\\Foundation\\Bus\\Dispatchable;
            use Illuminate\\Support\\Facades\\DB;

            class DeleteChunk implements ShouldQueue
            {
                use Dispatchable;

                public function __construct(public int $min, public int $max, public int $chunk) {}

                public function handle(): void
                {
                    $end = min($this->min + $this->chunk, $this->max);
                    if ($end < $this->max) {
                        $next_min = $this->min + $this->chunk + 1;
                        self::dispatch($next_min, $this->max, $this->chunk);
                    }
                    DB::table('statements')->whereBetween('id', [$this->min, $end])->delete();
                }
            }
        """,
        "app/Jobs/SplitRange.php": """
            <?php

            namespace App\\Jobs;

            use Illuminate\\Contracts\\Queue\\ShouldQueue;
            use Illuminate\\Foundation\\Bus\\Dispatchable;

            class SplitRange implements ShouldQueue
            {
                use Dispatchable;

                public function __construct(public int $max, public int $min) {}

                public function handle(): void
                {
                    $half = $this->max - intdiv($this->max - $this->min, 2);
                    self::dispatch($this->max, $half);
                    self::dispatch($half - 1, $this->min);
                }
            }
        """,
    })  # fmt: skip
    assert found == [
        ("job-resumes-from-cursor", "app/Jobs/DeleteChunk.php", 20),
        ("member-dispatches", "app/Jobs/DeleteChunk.php", 20),
        ("member-dispatches", "app/Jobs/SplitRange.php", 17),
    ]


def test_rows_of_a_method_returning_a_relation_in_a_plain_job(tmp_path: Path) -> None:
    """laravel.io's job only calls `$this->user->deleteThreads()`, which walks
    `$this->threads()`, i.e. `$this->threadsRelation()->get()` where `threadsRelation()`
    returns `$this->hasMany(...)`: every thread, deleted one by one, whatever the relation
    method is called (and the job file names no loop itself). The twin deletes them with one
    set statement."""
    found = budget(tmp_path, {
        "app/Jobs/DeleteUserThreads.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\User;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            final class DeleteUserThreads implements ShouldQueue
            {
                public function __construct(private User $user) {}

                public function handle(): void
                {
                    $this->user->deleteThreads();
                }
            }
        """,
        "app/Jobs/PurgeUserThreads.php": """
            <?php

            namespace App\\Jobs;

            use App\\Models\\User;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;

            final class PurgeUserThreads implements ShouldQueue
            {
                public function __construct(private User $user) {}

                public function handle(): void
                {
                    $this->user->threadsRelation()->delete();
                }
            }
        """,
        "app/Models/User.php": """
            <?php

            namespace App\\Models;

            use Illuminate\\Database\\Eloquent\\Relations\\HasMany;
            use Illuminate\\Foundation\\Auth\\User as Authenticatable;

            final class User extends Authenticatable
            {
                public function deleteThreads()
                {
                    foreach ($this->threads() as $thread) {
                        $thread->delete();
                    }
                }

                public function threads()
                {
                    return $this->threadsRelation()->get();
                }

                public function threadsRelation(): HasMany
                {
                    return $this->hasMany(Thread::class, 'author_id');
                }
            }
        """,
    })  # fmt: skip
    assert found == [("job-not-batched", "app/Jobs/DeleteUserThreads.php", 14)]


def test_a_dispatch_on_the_sync_connection_waits_for_the_job(tmp_path: Path) -> None:
    """An events admin finishes an event and sends the winners' mails "at once":
    `EventoFinalizadoNotificationJob::dispatch($evento)->onConnection('sync')` runs the job
    (a mail per inscription) inside the request, as dispatchSync does. The twin queues it."""
    found = budget(tmp_path, {
        "app/Http/Controllers/EventoController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Jobs\\EventoFinalizadoNotificationJob;
            use App\\Models\\Evento;

            class EventoController extends Controller
            {
                public function finalizar(Evento $evento)
                {
                    $evento->update(['estado' => 'finalizado']);
                    EventoFinalizadoNotificationJob::dispatch($evento)->onConnection('sync');
                    return redirect()->route('admin.eventos.show', $evento);
                }

                public function finalizarEnCola(Evento $evento)
                {
                    $evento->update(['estado' => 'finalizado']);
                    EventoFinalizadoNotificationJob::dispatch($evento);
                    return redirect()->route('admin.eventos.show', $evento);
                }
            }
        """,
        "app/Jobs/EventoFinalizadoNotificationJob.php": """
            <?php

            namespace App\\Jobs;

            use App\\Mail\\EventoFinalizado;
            use App\\Models\\Evento;
            use Illuminate\\Bus\\Batchable;
            use Illuminate\\Contracts\\Queue\\ShouldQueue;
            use Illuminate\\Support\\Facades\\Mail;

            class EventoFinalizadoNotificationJob implements ShouldQueue
            {
                use Batchable;

                public function __construct(public Evento $evento) {}

                public function handle(): void
                {
                    foreach ($this->evento->inscripciones as $inscripcion) {
                        Mail::to($inscripcion->email)->send(new EventoFinalizado($inscripcion));
                    }
                }
            }
        """,
    })  # fmt: skip
    assert found == [("request-waits-for-job", "app/Http/Controllers/EventoController.php", 13)]


def test_a_notification_sent_to_every_row_at_once(tmp_path: Path) -> None:
    """A site's contact form saves the request and notifies every staff user:
    `Notification::send(User::where('type', 1)->get(), new ContactRequest($contact))` is a
    notification per row, as the foreach form is. The twin notifies the one admin
    (`->first()`), a pattern just as common."""
    found = budget(tmp_path, {
        "app/Http/Controllers/ContactController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use App\\Models\\Contact;
            use App\\Models\\User;
            use App\\Notifications\\ContactRequest;
            use Illuminate\\Http\\Request;
            use Illuminate\\Support\\Facades\\Notification;

            class ContactController extends Controller
            {
                public function store(Request $request)
                {
                    $contact = Contact::create($request->only('name', 'email', 'content'));
                    Notification::send(User::where('type', 1)->get(), new ContactRequest($contact));
                    return redirect(route('contact'));
                }

                public function storeForAdmin(Request $request)
                {
                    $contact = Contact::create($request->only('name', 'email', 'content'));
                    $admin = User::where('user_type', 'admin')->first();
                    Notification::send($admin, new ContactRequest($contact));
                    return redirect(route('contact'));
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Http/Controllers/ContactController.php", 16)]


def test_a_guzzle_timeout_option_past_the_budget(tmp_path: Path) -> None:
    """Guzzle's own option, `$client->get($url, ['timeout' => 30])`, defines a timeout but
    not within the 5-second budget a request must answer in; `['timeout' => 3]` does."""
    found = budget(tmp_path, {
        "app/Http/Controllers/WeatherController.php": """
            <?php

            namespace App\\Http\\Controllers;

            use GuzzleHttp\\Client;

            class WeatherController extends Controller
            {
                public function show(Client $client)
                {
                    return $client->get('https://wx.example/now', ['timeout' => 30])->getBody();
                }

                public function quick(Client $client)
                {
                    return $client->get('https://wx.example/now', ['timeout' => 3])->getBody();
                }
            }
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "app/Http/Controllers/WeatherController.php", 11)]
