"""Hooks an application registers on its App: code that runs once in each process that runs
sync jobs (`@app.on_child_start`: open a client, configure Sentry, close connections
inherited from the parent), and around each attempt (`@app.around_attempt`: a Sentry scope,
a tracing span, Django's `close_old_connections()`), wherever the attempt runs (a worker's
child, its event loop for async jobs, `tenure.testing`).

An around-attempt hook is a generator that yields once, as for `contextlib.contextmanager`:
the attempt runs at the `yield`, and the job's exception is raised there (re-raise it, or let
it pass; a hook that swallows it turns the failure into a success returning None). An
exception a hook raises ends the attempt as the job's own would: failed, with that error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tenure.context import JobContext

AttemptHook = Callable[["JobContext"], Iterator[None]]


# What `around` enters when no around-attempt hook is registered (reusable: it holds nothing)
NO_HOOK: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()


class Hooks:
    def __init__(self) -> None:
        self.child_start: list[Callable[[], Any]] = []
        self.attempt: list[Callable[[JobContext], contextlib.AbstractContextManager[None]]] = []

    def on_child_start(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """`@app.on_child_start`: run `fn()` once in each child process, after the app was
        imported and before its first attempt. An error in it ends the child as a failing
        import would: the attempt handed to it crashes (a try used) and the traceback is on
        the worker's stderr."""
        self.child_start.append(fn)
        return fn

    def around_attempt(self, fn: AttemptHook) -> AttemptHook:
        """`@app.around_attempt`: a generator taking the attempt's JobContext and yielding
        once; the attempt runs at the yield (hooks nest in the order registered)."""
        self.attempt.append(contextlib.contextmanager(fn))
        return fn

    def run_child_start(self) -> None:
        for fn in self.child_start:
            fn()

    def around(self, ctx: JobContext) -> contextlib.AbstractContextManager[Any]:
        """Every around-attempt hook entered for `ctx`, outermost first."""
        if not self.attempt:
            return NO_HOOK  # the usual case: no ExitStack built for every attempt
        stack = contextlib.ExitStack()
        try:
            for hook in self.attempt:
                stack.enter_context(hook(ctx))
        except BaseException as exc:  # the hooks already entered see the error, then it ends
            stack.__exit__(type(exc), exc, exc.__traceback__)  # the attempt (not run)
            raise
        return stack
