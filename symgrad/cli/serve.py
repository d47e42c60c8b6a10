"""``symgrad serve``: a playground on 127.0.0.1, the HTML page of ``explain`` with a form above it.

A query names what the command line does, with the command line's own names, so that a derivation has one URL
that can be shared: ``/?expr=torch.tanh(W @ x).sum()&shape=W=k,n&shape=x=n&wrt=W`` (also ``value=``,
``grad_tensor=``, ``lang=`` and ``order=2``). The page asks ``/jobs`` for the explanation, shows the progress
lines of long work, and can cancel it.

Each derivation runs ``symgrad explain --format html`` in a process of its own, forked from the server: what the
user types goes through the same safe reader and the same one-line errors as on the command line, the same time
limit bounds it, and cancelling it ends that process. Only the options below reach the command line; a value is
passed as ``--option=VALUE`` and the expression after ``--``, so nothing the user types is read as an option.

Starlette routes the requests and uvicorn serves them (well-kept, small, pure-Python ASGI libraries).

>>> explain_argv({"expr": ["x.sum()"], "shape": ["x=n"], "wrt": ["x"]}, time_limit=30)[3:]
['--time-limit=30', '--in-playground', '--shape=x=n', '--wrt=x', '--', 'x.sum()']
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import ipaddress
import itertools
import multiprocessing
import os
import re
import signal
import socket
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import SymgradError
from ..emit.templates import page_environment
from ..report.html import WORDS, page
from .errors import say
from .limits import seconds

QUERY_OPTIONS = {"shape": "--shape", "value": "--value", "wrt": "--wrt", "grad_tensor": "--grad-tensor"}
"""The query's names for the command line's options: the only ones a request can give."""

MAX_RUNNING = 2  # derivations at once; more wait for a free one (each is a process with torch in it)
MAX_KEPT = 64  # finished jobs kept for their pages to fetch
MAX_QUERY_CHARS = 4000
ABANDONED_AFTER = 10.0  # seconds without a poll from its page (which asks four times a second) end a derivation

PLAYGROUND_WORDS = {
    "en": {
        "title": "symgrad playground",
        "intro": "Type a torch expression and its tensors, as on the command line: symgrad derives what backward() "
        "computes, as formulas, and checks them against torch.autograd.",
        "expr": "expression",
        "shape": "shapes",
        "shape_hint": "W=k,n x=n",
        "value": "values",
        "value_hint": "w=[[1.0, 2.0]]; x=[[1, 1], [2, 2]]",
        "wrt": "wrt",
        "grad_tensor": "grad_tensor",
        "grad_tensor_hint": "ones, v, or values",
        "lang": "language",
        "order": "order",
        "first": "first (the gradient)",
        "second": "second (the Hessian)",
        "skip": "skip the proofs and checks",
        "go": "Explain",
        "cancel": "Cancel",
        "working": "working…",
        "cancelled": "cancelled",
    },
    "zh": {
        "title": "symgrad 在线推导",
        "intro": "像在命令行里一样输入 torch 表达式和其中的张量：symgrad 用公式推导出 backward() 算了什么，"
        "并与 torch.autograd 核对。",
        "expr": "表达式",
        "shape": "形状",
        "shape_hint": "W=k,n x=n",
        "value": "数值",
        "value_hint": "w=[[1.0, 2.0]]; x=[[1, 1], [2, 2]]",
        "wrt": "求导对象",
        "grad_tensor": "grad_tensor",
        "grad_tensor_hint": "ones、v 或数值",
        "lang": "语言",
        "order": "阶",
        "first": "一阶（梯度）",
        "second": "二阶（Hessian）",
        "skip": "跳过证明与核对",
        "go": "推导",
        "cancel": "取消",
        "working": "计算中…",
        "cancelled": "已取消",
    },
}


def add_parser(verbs: Any) -> None:
    """The ``serve`` verb's options."""
    serve = verbs.add_parser("serve", help="a local playground in the browser: the explain page with a form")
    serve.add_argument("--port", type=int, default=8000, help="the port to listen on (default: 8000)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; anything else lets others in)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="with --host other than this machine's loopback: a further name requests may address the playground "
        "by (its own names and addresses are allowed)",
    )
    serve.add_argument(
        "--time-limit",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="the work budget of one derivation (default: 30)",
    )


def explain_argv(query: Mapping[str, Sequence[str]], *, time_limit: float) -> list[str]:
    """The command line a query stands for; refuses (one line) what the command line would not be asked."""
    unknown = sorted(set(query) - {"expr", "lang", "order", "check", *QUERY_OPTIONS})
    if unknown:
        raise SymgradError(
            f"unknown query name {unknown[0]!r}: use expr, {', '.join(QUERY_OPTIONS)}, lang, order or check"
        )
    if sum(len(v) for values in query.values() for v in values) > MAX_QUERY_CHARS:
        raise SymgradError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    expression = _one(query, "expr", "").strip()
    if not expression:
        raise SymgradError("type an expression, e.g. torch.tanh(W @ x).sum()")
    lang = _one(query, "lang", "en")
    if lang not in WORDS:
        raise SymgradError(f"lang is en or zh, not {lang!r}")
    order = _one(query, "order", "1")
    if order not in ("1", "2"):
        raise SymgradError(f"order is 1 or 2, not {order!r}")
    check = _one(query, "check", "yes")
    if check not in ("yes", "no"):
        raise SymgradError(f"check is yes or no, not {check!r}")
    argv = ["explain", "--format=html", f"--lang={lang}", f"--time-limit={time_limit:g}", "--in-playground"]
    if check == "no":
        argv.append("--no-check")
    for name, option in QUERY_OPTIONS.items():
        values = [v.strip() for v in query.get(name, []) if v.strip()]
        if name in ("wrt", "grad_tensor") and len(values) > 1:
            raise SymgradError(f"{name} is given once")
        argv += [f"{option}={value}" for value in values]
    if order == "2":
        argv.append("--create-graph")
    return [*argv, "--", expression]


def _one(query: Mapping[str, Sequence[str]], name: str, default: str) -> str:
    values = query.get(name, [])
    if len(values) > 1:
        raise SymgradError(f"{name} is given once")
    return values[0] if values else default


# --- the derivations, each in a process of its own -------------------------------------------------------------


class _Lines(io.TextIOBase):
    """stderr in a derivation's process: each line goes to the server as it is written."""

    def __init__(self, send: Any) -> None:
        self.send, self.pending = send, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.send(("line", line))
        return len(text)


def _derive(run: Callable[[list[str]], int], argv: list[str], connection: Any) -> None:
    """The body of a derivation's process: ``symgrad explain`` (``run``) with stdout kept and stderr sent line by
    line."""
    os.setpgrp()  # a group of its own, which a cancel ends whole: Graphviz's dot, which it may be running, included
    out = io.StringIO()
    sys.stderr = _Lines(connection.send)
    with contextlib.redirect_stdout(out):
        code = run(argv)
    connection.send(("done", code, _page_body(out.getvalue())))
    connection.close()


def _page_body(text: str) -> str:
    """What a page shows inside ``<main id="result">``: the explanation, without the KaTeX every page carries."""
    found = re.search(r'<main id="result">\n?(.*)</main>', text, flags=re.S)
    return found.group(1) if found else ""


@dataclass
class Job:
    """One derivation: its process, the lines it said, and, once done, its exit code and page body."""

    process: Any
    connection: Any
    lines: list[str] = field(default_factory=list)
    code: int | None = None
    body: str = ""
    state: str = "running"  # running, done or cancelled
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    seen: float = field(default_factory=time.monotonic)  # when its page last asked: a page that stops asking is gone

    def poll(self) -> None:
        while self.state == "running" and self.connection.poll():
            try:
                message = self.connection.recv()
            except EOFError:  # the process ended without a word: killed, or out of memory
                self.state, self.code = "done", 2
                self.lines.append("symgrad: error: the derivation stopped unexpectedly (out of memory?)")
                break
            if message[0] == "line":
                self.lines.append(message[1])
            else:
                _, self.code, self.body = message
                self.state = "done"
        if self.state != "running":
            self.ended = self.ended or time.monotonic()
            self.process.join(timeout=0.1)  # reaped: no zombie left behind

    def cancel(self) -> bool:
        """End the work if it still runs; whether it did."""
        if self.state != "running":
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group: dot too, not the process alone
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.kill()
        self.process.join(timeout=5)
        self.state, self.ended = "cancelled", time.monotonic()
        return True

    def report(self) -> dict[str, Any]:
        errors = [line.removeprefix("symgrad: error: ") for line in self.lines if line.startswith("symgrad: error:")]
        notes = [line.removeprefix("symgrad: note: ") for line in self.lines if line.startswith("symgrad: note:")]
        progress = [
            line.removeprefix("symgrad: ")
            for line in self.lines
            if not line.startswith(("symgrad: error:", "symgrad: note:"))
        ]
        return {
            "state": self.state,
            "code": self.code,
            "error": errors[-1] if errors else None,
            "notes": notes,
            "progress": progress[-1] if progress else None,
            "seconds": round((self.ended or time.monotonic()) - self.started, 1),
            "html": self.body,
        }


class Jobs:
    """The derivations the server runs: at most :data:`MAX_RUNNING` at once, each cancellable."""

    def __init__(self, time_limit: float, run: Callable[[list[str]], int]) -> None:
        self.time_limit, self.run = time_limit, run
        self.jobs: dict[str, Job] = {}
        self.numbers = itertools.count(1)
        self.context = multiprocessing.get_context("fork")  # the server has torch imported: a fork starts at once

    def sweep(self) -> None:
        """Reap the derivations that ended, and end those whose page stopped asking (a closed tab): they would
        hold a place until their time limit."""
        now = time.monotonic()
        for job in self.jobs.values():
            job.poll()
            if job.state == "running" and now - job.seen > ABANDONED_AFTER:
                job.cancel()

    def start(self, query: Mapping[str, Sequence[str]]) -> str:
        argv = explain_argv(query, time_limit=self.time_limit)
        self.sweep()
        if sum(job.state == "running" for job in self.jobs.values()) >= MAX_RUNNING:
            raise SymgradError("the playground is busy with other derivations: try again in a moment")
        receive, send = self.context.Pipe(duplex=False)
        process = self.context.Process(target=_derive, args=(self.run, argv, send), daemon=True)
        process.start()
        send.close()
        key = f"{next(self.numbers)}-{os.urandom(4).hex()}"
        self.jobs[key] = Job(process, receive)
        for old in list(self.jobs)[:-MAX_KEPT]:
            self.jobs.pop(old).cancel()
        return key

    def report(self, key: str) -> dict[str, Any] | None:
        job = self.jobs.get(key)
        if job is None:
            return None
        job.seen = time.monotonic()
        self.sweep()
        return job.report()

    def cancel(self, key: str) -> dict[str, Any] | None:
        job = self.jobs.get(key)
        if job is None:
            return None
        return {"cancelled": job.cancel(), "state": job.state}

    def close(self) -> None:
        for job in self.jobs.values():
            job.cancel()


# --- the web application ---------------------------------------------------------------------------------------


def playground(query: Mapping[str, Sequence[str]], autorun: bool = False) -> str:
    """The playground's page: the form, filled from ``query``, above where the explanation goes; ``autorun``: the
    page runs the query on load (else its Run button does)."""
    lang = next((given for given in query.get("lang", []) if given in WORDS), "en")  # the form shows what is wrong
    words = PLAYGROUND_WORDS[lang]
    fields = {
        "expr": " ".join(query.get("expr", [])),
        "shape": " ".join(query.get("shape", [])),
        "value": "; ".join(query.get("value", [])),
        "wrt": ",".join(query.get("wrt", [])),
        "grad_tensor": " ".join(query.get("grad_tensor", [])),
        "order": " ".join(query.get("order", ["1"])),
        "check": " ".join(query.get("check", ["yes"])),
    }
    template = page_environment().get_template("playground.html.j2")
    form = template.render(words=words, fields=fields, lang=lang, autorun=autorun)
    return page("", lang, title=words["title"], form=form)


LOOPBACK = ("127.0.0.1", "localhost", "[::1]")  # the names this machine alone reaches the playground by


def application(time_limit: float, run: Callable[[list[str]], int], *, hosts: Sequence[str] = LOOPBACK) -> Any:
    """The ASGI application: ``/`` (the page), ``/jobs`` (start), ``/jobs/{id}`` (progress, or DELETE to cancel);
    ``run`` is the command line's ``main``. ``hosts``: the names requests may address it by (the Host header), so
    that another site cannot reach the playground through a name of its own that points here (DNS rebinding)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    jobs = Jobs(time_limit, run)

    def query_of(request: Request) -> dict[str, list[str]]:
        query: dict[str, list[str]] = {}
        for name, value in request.query_params.multi_items():
            query.setdefault(name, []).append(value)
        return query

    def refused(message: str, status: int) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=status)

    def elsewhere(request: Request) -> bool:
        """Whether another site's page sent this (a form or script there can POST here without asking)."""
        site = request.headers.get("sec-fetch-site")
        if site is not None:
            return site not in ("same-origin", "none")
        origin = request.headers.get("origin")
        return origin is not None and urllib.parse.urlsplit(origin).netloc != request.headers.get("host")

    async def index(request: Request) -> HTMLResponse:
        # typed, bookmarked, or opened from outside a browser page: the query runs at once; from another site's
        # page (a link, or a hidden frame, which SECURITY_HEADERS forbid anyway), it waits for the Run button
        typed = request.headers.get("sec-fetch-site") in ("same-origin", "none")
        return HTMLResponse(playground(query_of(request), autorun=typed))

    async def start(request: Request) -> JSONResponse:
        if elsewhere(request):
            return refused("the playground takes derivations from its own page only", 403)
        try:
            return JSONResponse({"id": jobs.start(query_of(request))})
        except SymgradError as error:
            return refused(" ".join(str(error).split()), 400)

    async def progress(request: Request) -> JSONResponse:
        key = request.path_params["key"]
        if request.method == "DELETE" and elsewhere(request):
            return refused("the playground takes derivations from its own page only", 403)
        found = jobs.cancel(key) if request.method == "DELETE" else jobs.report(key)
        return JSONResponse(found) if found is not None else refused("no such job", 404)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async def reap() -> None:  # a derivation that ended is reaped within a second, not at the next request
            while True:
                await asyncio.sleep(1.0)
                jobs.sweep()

        reaper = asyncio.create_task(reap())
        yield
        reaper.cancel()
        jobs.close()

    routes = [
        Route("/", index),
        Route("/jobs", start, methods=["POST"]),
        Route("/jobs/{key}", progress, methods=["GET", "DELETE"]),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts)), Middleware(_SecurityHeaders)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def _own_names(host: str) -> list[str]:
    """This machine's names and addresses, which a request from another machine may address it by."""
    names = {socket.gethostname(), socket.getfqdn()}
    if not ipaddress.ip_address(host).is_unspecified:
        names.add(f"[{host}]" if ":" in host else host)
    with contextlib.suppress(OSError):
        for *_, address in socket.getaddrinfo(socket.gethostname(), None):
            names.add(f"[{address[0]}]" if ":" in address[0] else address[0])
    return sorted(names)


# no page may frame the playground (a hidden frame would run derivations in it), and no response is sniffed
SECURITY_HEADERS = [
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
]


class _SecurityHeaders:
    """ASGI middleware: every response carries :data:`SECURITY_HEADERS`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, sending)


HEADERS_WITHIN = 5.0  # seconds a connection has to finish a request's headers (uvicorn's own keep-alive timeout)


def _headers_in_time_protocol() -> type:
    """uvicorn's h11 protocol with a deadline for each request's headers: a connection that starts a request and
    does not finish its headers in :data:`HEADERS_WITHIN` seconds is closed (uvicorn times out idle connections
    between requests only, and one that sent half its headers held its place for good)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadersInTime(H11Protocol):
        deadline: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.deadline = self.loop.call_later(HEADERS_WITHIN, self.headers_late)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            waiting = self.conn.their_state is h11.IDLE  # no request's headers complete yet
            if not waiting and self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None
            elif waiting and self.deadline is None:
                self.deadline = self.loop.call_later(HEADERS_WITHIN, self.headers_late)

        def connection_lost(self, exc: Exception | None) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            super().connection_lost(exc)

        def headers_late(self) -> None:
            self.deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeadersInTime


def run_serve(args: argparse.Namespace, run: Callable[[list[str]], int]) -> int:
    """Serve until interrupted (Ctrl-C), then end every derivation still running; ``run`` is the command line's
    ``main``, which each derivation calls. ``--port 0`` takes a free port, named in the first line."""
    import uvicorn

    from .. import torch as _symgrad_torch  # noqa: F401 - imported once here, so that each fork starts warm

    with contextlib.suppress(ImportError):
        import torch  # noqa: F401 - the checks' torch, likewise

    if not 0 <= args.port <= 65535:
        raise SymgradError(f"--port takes 0 to 65535, not {args.port}")
    listener = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    try:
        listener.bind((args.host, args.port))
    except (OSError, OverflowError) as error:
        listener.close()
        why = getattr(error, "strerror", None) or error
        raise SymgradError(f"cannot listen on {args.host}:{args.port}: {why}") from None
    listener.listen(128)  # before the address is printed: a client that reads it may connect at once
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"symgrad: serving the playground on http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
    hosts = list(LOOPBACK)
    if not ipaddress.ip_address(host).is_loopback:
        hosts = list(dict.fromkeys([*hosts, *_own_names(host), *args.allow_host]))
        say(
            f"symgrad: warning: --host {args.host} lets anyone who reaches this machine run derivations here; "
            f"requests are answered when addressed to {', '.join(hosts)} (add a name with --allow-host)"
        )
    config = uvicorn.Config(
        application(args.time_limit, run, hosts=hosts), log_level="warning", http=_headers_in_time_protocol()
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0
