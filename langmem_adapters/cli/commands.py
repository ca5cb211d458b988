"""The sub-commands: each takes the parsed arguments and the consoles, does its work through the
stores' public API and :mod:`langmem_adapters.transfer`, and returns the exit status."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from platformdirs import user_state_dir
from rich.markup import escape

from langmem_adapters import demo
from langmem_adapters.cli.locations import open_source, open_store
from langmem_adapters.cli.options import (
    FAILURE,
    USAGE,
    parse_filter,
    parse_model,
    parse_namespace,
    parse_namespace_path,
)
from langmem_adapters.cli.render import Ctx, item_rows, print_items, print_tree
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import CLIError, InvalidArgumentError, first_line
from langmem_adapters.settings import Location, parse_embed, parse_fields, parse_location
from langmem_adapters.transfer import Checkpoint, migrate, read_items, write_items

if TYPE_CHECKING:  # the mcp extra is imported when the command runs
    from langmem_adapters.mcp_server import Namespaces, Tokens

__all__ = [
    "cmd_demo",
    "cmd_export",
    "cmd_import",
    "cmd_inspect",
    "cmd_mcp",
    "cmd_migrate",
    "cmd_purge",
    "cmd_reindex",
    "cmd_sweep",
    "cmd_ui",
]


def _namespace_counts(store: SyncStore) -> dict[tuple[str, ...], int]:
    """Live items per namespace (only namespaces that hold items), read with ``iter_items``."""
    return dict(Counter(item.namespace for item in store.iter_items()))


# --------------------------------------------------------------------------- inspect


def cmd_inspect(args: argparse.Namespace, ctx: Ctx) -> int:
    """Namespace tree, the items under ``--namespace``, or a search (``--query``/``--filter``)."""
    location = parse_location(args.url)
    namespace = parse_namespace(args.namespace)
    filter_ = parse_filter(args.filter)
    index = parse_embed(args.embed)
    if args.limit <= 0:
        raise CLIError("--limit must be positive", USAGE)
    with open_store(location, index) as store:
        if not namespace and args.query is None and filter_ is None and not args.items:
            print_tree(ctx, location.display, _namespace_counts(store), args.json)
            return 0
        under = store.count(namespace)
        if namespace and not under:
            raise CLIError(
                f"unknown namespace {'.'.join(namespace)!r} in {location.display} "
                f"(run 'langmem-adapters inspect {args.url}' to see the tree)"
            )
        if args.query is not None and index is None:
            ctx.note(
                "note: no --embed given, so --query cannot rank by similarity; "
                "pass the embedder the items were indexed with (e.g. --embed hash:64)"
            )
        hits = store.search(namespace, query=args.query, filter=filter_, limit=args.limit)
    if args.json:
        data = {"namespace": list(namespace), "total": under, "items": item_rows(hits)}
        ctx.out.print_json(data=data)
        return 0
    title = f"{'.'.join(namespace) or '(all namespaces)'}: {len(hits)} of {under} item(s)"
    if args.query is not None:
        title += f" for query {args.query!r}"
    print_items(ctx, title, hits, scored=args.query is not None)
    return 0


# --------------------------------------------------------------------------- export / import


def cmd_export(args: argparse.Namespace, ctx: Ctx) -> int:
    """Write every live item as one JSON line (stdout or ``--output``)."""
    location = parse_location(args.url)
    with open_source(location) as source, _open_output(args.output) as out:
        n = 0
        with ctx.progress("exporting", source.count()) as advance:
            for page, _ in source.pages():
                n += write_items(page, out)
                advance(len(page))
    ctx.note(f"exported {n} item(s) from {location.display}")
    return 0


@contextlib.contextmanager
def _open_output(path: str | None) -> Iterator[IO[str]]:
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below, after the caller's work
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror}") from None
    with f:
        yield f


def cmd_import(args: argparse.Namespace, ctx: Ctx) -> int:
    """Upsert JSON lines (stdin or ``--input``) into a store, keeping timestamps and TTLs."""
    location = parse_location(args.url)
    index = parse_embed(args.embed, parse_fields(args.fields))
    stream: TextIO
    total: int | None = None
    if args.input in (None, "-"):
        stream = sys.stdin
    else:
        try:
            with open(args.input, "rb") as f:
                total = sum(1 for line in f if line.strip())
            stream = open(args.input, encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise CLIError(f"cannot read {args.input}: {exc.strerror}") from None
    n = 0
    try:
        with (
            open_store(location, index, create=True) as store,
            store.bulk_load(),  # into an empty index: built once, after the last chunk
            ctx.progress("importing", total) as advance,
        ):
            items = read_items(stream)
            while chunk := list(islice(items, args.batch_size)):
                store.restore(chunk, page_size=len(chunk))
                n += len(chunk)
                advance(len(chunk))
    finally:
        if stream is not sys.stdin:
            stream.close()
    ctx.note(f"imported {n} item(s) into {location.display}")
    return 0


# --------------------------------------------------------------------------- migrate


def _checkpoint_path(args: argparse.Namespace) -> Path:
    if args.checkpoint:
        return Path(args.checkpoint)
    digest = hashlib.sha256(f"{args.source}\n{args.target}".encode()).hexdigest()[:16]
    return Path(user_state_dir("langmem-adapters")) / f"migrate-{digest}.json"


def _same_store(a: Location, b: Location) -> bool:
    return a.display == b.display and a.table_prefix == b.table_prefix


def cmd_migrate(args: argparse.Namespace, ctx: Ctx) -> int:
    """Copy every item from ``--from`` to ``--to`` in pages, checkpointing after each page."""
    source_loc, target_loc = parse_location(args.source), parse_location(args.target)
    if target_loc.official:
        raise CLIError(
            "--to must be one of this package's stores (official stores are only sources)", USAGE
        )
    if _same_store(source_loc, target_loc):
        raise CLIError("--from and --to are the same store", USAGE)
    if args.limit is not None and args.limit <= 0:
        raise CLIError("--limit must be positive", USAGE)
    index = parse_embed(args.embed, parse_fields(args.fields))
    path = _checkpoint_path(args)
    try:
        checkpoint = Checkpoint.load(
            path, source_loc.display, target_loc.display, restart=args.restart
        )
    except InvalidArgumentError as exc:
        raise CLIError(f"{exc}; use --restart") from None
    if path.exists() and not args.restart:
        ctx.note(
            f"resuming after {checkpoint.copied} item(s) (checkpoint {path}; --restart to start over)"
        )
    with open_source(source_loc) as source, open_store(target_loc, index, create=True) as target:
        total = source.count()  # every live item, including those copied before a resume
        with ctx.progress("migrating", total) as advance:
            result = migrate(
                source,
                target,
                checkpoint,
                progress=advance,
                page_size=args.batch_size,
                limit=args.limit,
            )
    if result.finished:
        ctx.note(
            f"migrated {result.copied} item(s) from {source_loc.display} to {target_loc.display}"
        )
    else:
        ctx.note(
            f"stopped after {result.this_run} item(s) (--limit); run the same command again to continue"
        )
    return 0


# --------------------------------------------------------------------------- sweep


def cmd_sweep(args: argparse.Namespace, ctx: Ctx) -> int:
    """Delete expired items now and print how many went."""
    location = parse_location(args.url)
    with open_store(location) as store:
        removed = int(store.sweep_ttl())
    ctx.result(
        args.json,
        {"store": location.display, "removed": removed},
        f"removed {removed} expired item(s) from {escape(location.display)}",
    )
    return 0


# --------------------------------------------------------------------------- purge


def _confirmed(ctx: Ctx, question: str) -> bool:
    """Whether the user answers yes to ``question`` on stdin (asked on stderr)."""
    ctx.err.print(f"{question} [y/N] ", end="", highlight=False, markup=False)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_purge(args: argparse.Namespace, ctx: Ctx) -> int:
    """Delete a namespace and everything below it (whole labels), after confirmation on stdin
    unless ``--yes``; print how many items went."""
    location = parse_location(args.url)
    namespace = parse_namespace(args.namespace)
    if not namespace:
        raise CLIError("purge needs a non-empty --namespace (it never deletes everything)", USAGE)
    name = ".".join(namespace)
    if not args.yes and not sys.stdin.isatty():
        raise CLIError(
            f"refusing to purge {name!r} without confirmation: stdin is not a terminal; "
            "pass --yes to purge without asking",
            USAGE,
        )
    with open_store(location) as store:
        if not args.yes:
            found = store.count(namespace)
            question = f"delete {found} item(s) in {name!r} and below from {location.display}?"
            if not _confirmed(ctx, question):
                ctx.err.print("aborted: nothing was deleted", highlight=False, markup=False)
                return FAILURE
        removed = store.delete_namespace(namespace)
    ctx.result(
        args.json,
        {"store": location.display, "namespace": list(namespace), "removed": removed},
        f"removed {removed} item(s) in {escape(name)} and below from {escape(location.display)}",
    )
    return 0


# --------------------------------------------------------------------------- reindex


def cmd_reindex(args: argparse.Namespace, ctx: Ctx) -> int:
    """Re-embed every item with ``--embed`` (and ``--fields``), with a progress bar; resumable:
    run it again after an interruption. The store is opened with the new embedder, so the old one
    is not needed."""
    location = parse_location(args.url)
    if args.embed in (None, "none"):
        raise CLIError("reindex needs --embed: the embedder to re-embed every item with", USAGE)
    if args.page_size <= 0:
        raise CLIError("--page-size must be positive", USAGE)
    index = parse_embed(args.embed, parse_fields(args.fields))
    with open_store(location, index) as store, contextlib.ExitStack() as stack:
        advance: list[Callable[[int], None]] = []  # the bar, made once the total is known
        shown = [0]

        def progress(done: int, total: int) -> None:
            if not advance:
                advance.append(stack.enter_context(ctx.progress("re-embedding", total)))
                shown[0] = done  # a resumed run starts its bar where the last one stopped
                advance[0](done)
            advance[0](done - shown[0])
            shown[0] = done

        n = store.reindex(page_size=args.page_size, progress=progress)
    ctx.result(
        args.json,
        {"store": location.display, "reindexed": n, "embed": args.embed},
        f"re-embedded {n} item(s) of {escape(location.display)} with {escape(args.embed)}",
    )
    return 0


# --------------------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace, ctx: Ctx) -> int:
    """Run an agent with our memory tools across several threads and print the transcript."""
    location = parse_location(args.store)
    index = parse_embed(args.embed, ["text"])
    model, label = parse_model(args.model)
    ctx.note(f"starting {location.display} …")
    with open_store(location, index, create=True) as store:
        demo.run_demo(store, model, ctx.out, store_label=location.display, model_label=label)
    ctx.out.print(
        f"\nLook inside: [bold]langmem-adapters inspect {escape(args.store)} --namespace "
        f"{'.'.join(demo.ROOT)}[/]",
        highlight=False,
    )
    return 0


# --------------------------------------------------------------------------- mcp


def cmd_mcp(args: argparse.Namespace, ctx: Ctx) -> int:
    """Serve the memory tools over MCP (stdio or streamable HTTP) until the client or a signal
    stops it. Every option is checked before the store is opened or a port is bound."""
    location = parse_location(args.url)
    labels = parse_namespace_path(args.namespace)
    index = parse_embed(args.embed, ["text"])
    try:
        from langmem_adapters import mcp_server
    except ImportError as exc:
        raise CLIError(
            f"the mcp command needs the MCP SDK: pip install 'langmem-adapters[mcp]' "
            f"({first_line(exc)})"
        ) from None
    try:
        namespaces = mcp_server.Namespaces.parse(labels)
        tokens = mcp_server.Tokens.load(
            args.token or os.environ.get("LANGMEM_MCP_TOKEN") or None, args.token_file
        )
        if args.transport == "http":
            mcp_server.check_bind(args.host, tokens, require_token=args.require_token)
    except InvalidArgumentError as exc:
        raise CLIError(str(exc), USAGE) from None
    _check_mcp_user(args, namespaces, tokens)
    if not 0 < args.port < 65536:
        raise CLIError(f"--port must be 1-65535, got {args.port}", USAGE)
    with open_store(location, index, create=True) as store:
        server = mcp_server.build_server(
            store, namespaces, user=args.user, host=args.host, port=args.port
        )
        if args.transport == "stdio":
            # A host stops its stdio server with SIGTERM (the SDK's client, when the server has
            # not exited 2 s after stdin closed): leave through the normal path, and let that
            # path finish, so the store is closed and an embedded PostgreSQL this process
            # started is stopped.
            signal.signal(signal.SIGTERM, _exit_quietly)
            try:
                asyncio.run(mcp_server.serve_stdio(server))
            finally:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            return 0
        where = f"http://{args.host}:{args.port}"
        users = f", per user {where}/users/NAME/mcp" if namespaces.per_user else ""
        ctx.note(f"serving memory tools on {location.display} at {where}/mcp{users}")
        asyncio.run(mcp_server.serve_http(server, tokens))
    return 0


def _exit_quietly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _check_mcp_user(
    args: argparse.Namespace, namespaces: Namespaces, tokens: Tokens | None
) -> None:
    """``--user`` is the stdio client's user: needed there for a per-user namespace, and never
    given over HTTP (each request names its user) or with a fixed namespace."""
    if args.transport == "http":
        if args.user is not None:
            raise CLIError(
                "--user is for stdio; over HTTP each request names its user "
                "(/users/NAME/mcp, the X-Memory-User header or --token-file)",
                USAGE,
            )
        return
    if tokens is not None or args.require_token:
        raise CLIError("bearer tokens apply to --transport http, not stdio", USAGE)
    if not namespaces.per_user:
        if args.user is not None:
            raise CLIError(f"--namespace {args.namespace!r} has no {{user}} field", USAGE)
        return
    if args.user is None:
        raise CLIError(
            f"--namespace {args.namespace!r} has a {{user}} field: pass --user NAME "
            "(the stdio client's user) or a fixed --namespace such as memories/ada",
            USAGE,
        )
    from langmem_adapters.mcp_server.toolset import ToolFailure

    try:
        namespaces.root(args.user)
    except ToolFailure as exc:
        raise CLIError(str(exc), USAGE) from None


# --------------------------------------------------------------------------- ui


def cmd_ui(args: argparse.Namespace, ctx: Ctx) -> int:
    """Serve the memory browser over a store until interrupted; prints its URL, opens nothing."""
    try:
        from langmem_adapters.ui import serve
    except ImportError as exc:
        raise CLIError(
            f"the ui needs the [ui] extra (pip install 'langmem-adapters[ui]'): {exc}"
        ) from None
    location = parse_location(args.url)
    index = parse_embed(args.embed, parse_fields(args.fields))
    if args.hybrid:
        if index is None:
            raise CLIError("--hybrid needs --embed (the vector half of the ranking)", USAGE)
        index["hybrid"] = True
    if not 0 <= args.port <= 65535:
        raise CLIError(f"--port must be 0..65535, got {args.port}", USAGE)
    with open_store(location, index) as store:

        def announce(url: str) -> None:
            ctx.out.print(url, highlight=False, markup=False, soft_wrap=True)
            mode = "read-only" if args.read_only else "deletes allowed, each confirmed"
            ctx.note(f"memory browser over {escape(location.display)} ({mode}); Ctrl+C stops it")

        try:
            serve(
                store,
                name=location.display,
                host=args.host,
                port=args.port,
                read_only=args.read_only,
                announce=announce,
            )
        except OSError as exc:
            raise CLIError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0
