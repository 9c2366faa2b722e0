"""What a PHP call costs, in the model's terms: a write, a mail, an HTTP call, a file or S3
operation, a dispatch; and whether an expression is a query over rows."""

from __future__ import annotations

from tree_sitter import Node

from tenure.doctor.budget.model import Effect
from tenure.doctor.budget.php_syntax import CALLS, args, call_name, chain, receiver
from tenure.doctor.laravel.php import name_of, string_value, text

ROWS = {"get", "all", "cursor", "lazy", "lazyById", "lazyByIdDesc"}  # a query's every row
EACH = {"each", "eachById"}  # a callback per row
CHUNKS = {"chunk", "chunkById", "chunkByIdDesc", "chunkMap"}  # a callback per chunk of rows
# Collection calls that keep every row: `->get()->toArray()`, `$project->orders->values()`.
KEEPS = {"toArray", "values", "collect", "toBase", "keyBy", "sortBy", "sortByDesc", "filter",
         "reject", "unique", "reverse", "where", "whereNotNull", "all", "lazy"}  # fmt: skip
BUILDER = {"where", "whereIn", "whereNull", "whereNotNull", "whereHas", "whereDate", "orderBy",
           "latest", "oldest", "with", "select", "join", "has", "doesntHave", "query",
           "withTrashed", "orWhere", "whereColumn", "distinct", "groupBy", "newQuery",
           "withCount", "table"}  # fmt: skip
# Only a query builder has these: `$this->targetQuery($request)->lazyById()` is a query
# whatever the chain is rooted at.
BUILDER_ONLY = {"lazyById", "lazyByIdDesc", "chunkById", "chunkByIdDesc", "eachById"}
BOUNDS = {"whereBetween", "forPage", "take", "limit", "find", "findMany", "whereKey"}
# Facades and helpers whose get()/all() are not queries.
NOT_MODELS = {"Cache", "Config", "Session", "Request", "Http", "Storage", "Redis", "Log", "Auth",
              "Arr", "Str", "Carbon", "Validator", "Mail", "Queue", "Bus", "Event", "File",
              "Cookie", "URL", "Route", "View", "Lang", "Gate", "Notification", "Crypt", "Hash",
              "Artisan", "Schema", "Process", "Collection", "Setting", "Settings", "Option",
              "Feature", "Context", "Vite", "App", "Broadcast", "RateLimiter"}  # fmt: skip
NOT_ROWS_VARS = {"$request", "$this", "$data", "$input", "$options", "$attributes", "$config",
                 "$params", "$items", "$array", "$args", "$settings"}  # fmt: skip
WRITES = {"save", "update", "delete", "increment", "decrement", "create", "forceDelete", "touch",
          "restore", "sync", "attach", "detach", "insert", "updateOrCreate",
          "firstOrCreate", "updateQuietly", "saveQuietly", "deleteQuietly", "upsert",
          "statement", "syncWithoutDetaching", "fill_and_save", "forceFill"}  # fmt: skip
FILE_FUNCTIONS = {"file_put_contents", "fopen", "fwrite", "unlink", "copy", "rename", "mkdir",
                  "fputcsv", "move_uploaded_file"}  # fmt: skip
# Storage calls that reach the disk or S3; url(), path() and disk() only compute a name.
STORAGE_IO = {"put", "putFile", "putFileAs", "get", "delete", "copy", "move", "exists",
              "missing", "writeStream", "readStream", "append", "prepend", "download",
              "makeDirectory", "deleteDirectory", "files", "allFiles", "size", "lastModified",
              "json", "response"}  # fmt: skip
HTTP_FUNCTIONS = {"curl_exec", "file_get_contents"}
DISPATCH = {"dispatch", "dispatchIf", "dispatchUnless", "dispatchAfterResponse", "batch",
            "chain"}  # fmt: skip
WAITS = {"dispatchSync", "dispatchNow", "dispatch_sync", "dispatch_now"}


def effect_of(call: Node) -> Effect | None:
    """The cost of one call made for each row, or None when it costs nothing worth naming."""
    name = call_name(call)
    if call.type == "function_call_expression":
        if name in FILE_FUNCTIONS:
            return "file"
        if name in HTTP_FUNCTIONS:
            first = args(call)[:1]
            url = string_value(first[0]) if first else None
            return "http" if name == "curl_exec" or (url or "").startswith("http") else None
        if name == "dispatch":
            return "dispatch"
        if name in ("mail", "notify"):
            return "mail"
        return None
    steps = chain(call)
    root = steps[-1]
    facade = name_of(root) if root.type in ("name", "qualified_name") else ""
    if facade == "Mail" or name in ("notify", "notifyNow") or facade == "Notification":
        return "mail"
    if facade == "Http" or (name in ("request", "get", "post", "put") and _client(call)):
        return "http"
    if (facade == "Storage" and name in STORAGE_IO) or name in ("store", "storeAs"):
        return "file"
    if name in ("addFromString", "addFile") and "zip" in text(root).lower():
        return "file"  # ZipArchive: one entry written per row
    if (
        name in DISPATCH
        and facade not in ("Event", "Livewire")
        and (
            call.type == "scoped_call_expression"
            or facade == "Bus"
            or root.type.startswith("object")
        )
    ):
        return "dispatch"
    if facade == "DB" and name in ("update", "insert", "delete", "statement", "unprepared"):
        return "write"
    if name in WRITES and call.type != "function_call_expression":
        return "write"
    return None


def _client(call: Node) -> bool:
    """`$client->get()`, `$this->httpClient->post()`, `$guzzle->request()`: a variable or
    property named for an HTTP client, not a builder chain (`Client::where()->get()`)."""
    target = receiver(call)
    if target is None or target.type not in ("variable_name", "member_access_expression"):
        return False
    last = text(target).rsplit("->", 1)[-1].lstrip("$").lower()
    return last.endswith("client") or "guzzle" in last


def is_rows(expr: Node, held: dict[str, Node], depth: int = 0) -> bool:
    """Is `expr` every row of a query (a builder's get()/all()/cursor()/lazy(), Model::all(),
    a relation read as a property such as `$project->orders`, a variable holding one)?"""
    if depth > 4:
        return False
    if expr.type == "variable_name":
        source = held.get(text(expr))
        return source is not None and is_rows(source, held, depth + 1)
    if expr.type in ("member_access_expression", "nullsafe_member_access_expression"):
        return _relation(expr)
    if expr.type in CALLS and call_name(expr) in KEEPS and receiver(expr) is not None:
        inner = receiver(expr)
        assert inner is not None
        read = inner.type in CALLS or inner.type.endswith("member_access_expression")
        if read and is_rows(inner, held, depth + 1):
            return True
    if expr.type not in CALLS or call_name(expr) not in ROWS | CHUNKS | {"pluck"}:
        return False
    return is_query(expr, held, depth)


def is_query(call: Node, held: dict[str, Node], depth: int = 0) -> bool:
    """A builder chain: rooted at a model class (not a facade), DB::table(), a relation call,
    or a variable holding a builder."""
    steps = chain(call)
    root = steps[-1]
    root_text = text(root)
    if root_text in NOT_ROWS_VARS and len(steps) <= 2:
        return False
    names = [call_name(s) for s in steps[:-1] if s.type in CALLS]
    if root.type in ("name", "qualified_name"):
        scope = name_of(root)
        if scope == "DB":
            return "table" in names
        return scope not in NOT_MODELS and scope[:1].isupper() and scope not in ("self", "static")
    if root.type == "relative_scope":
        return text(root) in ("static", "self") and bool(set(names) & BUILDER)
    if root.type == "variable_name" and root_text in held and depth < 4:
        return is_query(held[root_text], held, depth + 1) if held[root_text].type in CALLS else (
            is_rows(held[root_text], held, depth + 1))  # fmt: skip
    if set(names) & BUILDER:
        return root_text not in ("$request",) and "collect" not in names
    if set(names) & BUILDER_ONLY or any(_query_method(s) for s in steps[1:-1]):
        return root_text != "$request"
    # $project->orders()->get(), $this->project->orders()->cursor(): a relation called on a
    # model, anywhere between the root and the call that reads it.
    return root_text != "$request" and any(
        step.type == "member_call_expression"
        and not args(step)
        and call_name(step).endswith("s")
        and call_name(step)[:1].islower()
        for step in steps[1:-1]
    )


def _query_method(step: Node) -> bool:
    """`$this->getSubscribersQuery($campaign)`, `$this->baseQuery()`: a project method named
    for the builder it returns."""
    return step.type == "member_call_expression" and call_name(step).endswith("Query")


def _relation(expr: Node) -> bool:
    """`$project->orders`, `$this->project->orders`: a plural property read on a model."""
    name = text(expr.child_by_field_name("name"))
    target = expr.child_by_field_name("object")
    if target is None or not name.endswith("s") or name in {"items", "attributes", "options",
                                                             "params", "settings", "rules",
                                                             "headers", "values", "fields",
                                                             "casts", "errors", "ids"}:  # fmt: skip
        return False
    written = text(target)
    return written != "$this" and not written.startswith("$request") and name[:1].islower()


def bounded(call: Node, given: set[str]) -> bool:
    """A chain over an id range or ids the unit was given: whereBetween('id', [$this->from,
    ...]), whereIn('id', $this->ids), where('id', '>=', $lo), forPage, take(100)."""
    for step in chain(call):
        if step.type not in CALLS:
            continue
        name = call_name(step)
        if name in BOUNDS:
            return True
        if name in ("whereIn", "whereKey") and any(_literal_list(a) for a in args(step)):
            return True  # whereIn('id', [1, 2, 3]): a fixed list written in the code
        if name in ("whereIn", "where", "whereKey") and any(_uses(a, given) for a in args(step)):
            first = string_value(args(step)[0]) if args(step) else None
            # ids given (whereIn('user_id', $this->ids)) bound the rows; one foreign key
            # (where('project_id', $this->projectId)) does not: a project has every row.
            keys = ("_id", ".id") if name != "where" else (".id",)
            if first is not None and (first == "id" or first.endswith(keys)):
                return True
    return False


def _literal_list(node: Node) -> bool:
    """`[1, 2, 3]`, `['draft', 'sent']`: an array of literals, no variable and no call."""
    written = text(node)
    return node.type == "array_creation_expression" and "$" not in written and "(" not in written


def _uses(node: Node, given: set[str]) -> bool:
    written = text(node)
    return any(g in written for g in given)
