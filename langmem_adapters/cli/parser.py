"""The command line (:func:`build_parser`) and the entry point (:func:`main`), which turns every user
mistake into one ``error:`` line and an exit status instead of a traceback."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

import psycopg
import redis
from rich.console import Console

from langmem_adapters.cli.commands import (
    cmd_demo,
    cmd_export,
    cmd_import,
    cmd_inspect,
    cmd_mcp,
    cmd_migrate,
    cmd_purge,
    cmd_reindex,
    cmd_sweep,
    cmd_ui,
)
from langmem_adapters.cli.options import FAILURE, PAGE, USAGE
from langmem_adapters.cli.render import Ctx
from langmem_adapters.errors import (
    CLIError,
    InvalidRecordError,
    SettingUnavailableError,
    StoreError,
    first_line,
)

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports mistakes as one ``error:`` line (exit 2) instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see '{self.prog} --help')", USAGE)


def _add_index_options(parser: argparse.ArgumentParser) -> None:
    """``--embed`` and ``--fields``: the index of a store being written."""
    parser.add_argument(
        "--embed", help="index for the target: hash[:DIMS] or provider:model (default: none)"
    )
    parser.add_argument(
        "--fields", help="comma-separated value paths to embed (default: the whole value)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``langmem-adapters [-q] COMMAND ...``."""
    parser = _Parser(
        prog="langmem-adapters",
        description="Long-term memory stores for LangGraph: demo, inspect, export/import, migrate, sweep, "
        "purge, reindex, ui.",
        epilog="URLs: postgresql://..., redis://..., embedded[:PATH]; migrate/export also read "
        "official+postgresql://... and official+redis://... (the official LangGraph stores' data).",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars or notes on stderr"
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    demo = sub.add_parser("demo", help="run an agent with memory tools and print the transcript")
    demo.add_argument(
        "--store", default="embedded", help="store URL (default: the embedded PostgreSQL)"
    )
    demo.add_argument(
        "--model", help="a real chat model, provider:name (default: scripted, offline)"
    )
    demo.add_argument(
        "--embed", default="hash:64", help="embeddings: hash[:DIMS] (default) or provider:model"
    )
    demo.set_defaults(func=cmd_demo)

    inspect = sub.add_parser("inspect", help="namespace tree, items of a namespace, or a search")
    inspect.add_argument("url")
    inspect.add_argument("-n", "--namespace", help="namespace: users.ada or a JSON list")
    inspect.add_argument("--items", action="store_true", help="list items even without --namespace")
    inspect.add_argument(
        "--query", help="search text (ranked when --embed matches the stored vectors)"
    )
    inspect.add_argument("--filter", help='JSON filter on values, e.g. \'{"kind": "fact"}\'')
    inspect.add_argument("--embed", help="embedder the items were indexed with, e.g. hash:64")
    inspect.add_argument("--limit", type=int, default=20, help="items to show (default 20)")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.set_defaults(func=cmd_inspect)

    export = sub.add_parser("export", help="write every item as JSON lines")
    export.add_argument("url")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.set_defaults(func=cmd_export)

    import_ = sub.add_parser("import", help="read JSON lines (from export) into a store")
    import_.add_argument("url")
    import_.add_argument("-i", "--input", help="file to read (default: stdin)")
    _add_index_options(import_)
    import_.add_argument("--batch-size", type=int, default=PAGE, help=argparse.SUPPRESS)
    import_.set_defaults(func=cmd_import)

    migrate = sub.add_parser("migrate", help="copy all items between stores (resumable)")
    migrate.add_argument(
        "--from", dest="source", required=True, help="source URL (ours or official+...)"
    )
    migrate.add_argument(
        "--to", dest="target", required=True, help="target URL (one of our stores)"
    )
    _add_index_options(migrate)
    migrate.add_argument(
        "--batch-size", type=int, default=PAGE, help="items per page (default 500)"
    )
    migrate.add_argument(
        "--limit", type=int, help="copy at most N items in this run, then stop (resumable)"
    )
    migrate.add_argument(
        "--checkpoint", help="checkpoint file (default: per source/target, in the state dir)"
    )
    migrate.add_argument("--restart", action="store_true", help="ignore an existing checkpoint")
    migrate.set_defaults(func=cmd_migrate)

    sweep = sub.add_parser("sweep", help="delete expired items now and report how many")
    sweep.add_argument("url")
    sweep.add_argument("--json", action="store_true", help="machine-readable output")
    sweep.set_defaults(func=cmd_sweep)

    purge = sub.add_parser(
        "purge", help="delete a namespace and everything below it (asks first) and report how many"
    )
    purge.add_argument("url")
    purge.add_argument(
        "-n", "--namespace", required=True, help="namespace: users.ada or a JSON list"
    )
    purge.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    purge.add_argument("--json", action="store_true", help="machine-readable output")
    purge.set_defaults(func=cmd_purge)

    reindex = sub.add_parser(
        "reindex",
        help="re-embed every item with a new embedder (resumable; searches answer until the switch)",
    )
    reindex.add_argument("url")
    reindex.add_argument(
        "--embed", required=True, help="the new embedder: hash[:DIMS] or provider:model"
    )
    reindex.add_argument(
        "--fields", help="comma-separated value paths to embed (default: the whole value)"
    )
    reindex.add_argument("--page-size", type=int, default=PAGE, help="items per page (default 500)")
    reindex.add_argument("--json", action="store_true", help="machine-readable output")
    reindex.set_defaults(func=cmd_reindex)
    _add_mcp(sub)

    ui = sub.add_parser(
        "ui", help="browse a store in a local web page (prints its URL; needs the [ui] extra)"
    )
    ui.add_argument("url", nargs="?", default="embedded", help="store URL (default: embedded)")
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other requires the printed token)",
    )
    ui.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    ui.add_argument("--read-only", action="store_true", help="no deletes: every write is removed")
    ui.add_argument("--embed", help="embedder the items were indexed with, for ranked search")
    ui.add_argument("--fields", help="comma-separated value paths the index embeds")
    ui.add_argument(
        "--hybrid", action="store_true", help="rank searches by lexical + vector fusion"
    )
    ui.set_defaults(func=cmd_ui)
    return parser


def _add_mcp(sub: Any) -> None:
    """``mcp``: the memory tools over the Model Context Protocol."""
    mcp = sub.add_parser("mcp", help="serve the memory tools over MCP (stdio or streamable HTTP)")
    mcp.add_argument(
        "url", nargs="?", default="embedded", help="store URL (default: the embedded PostgreSQL)"
    )
    mcp.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default: stdio"
    )
    mcp.add_argument(
        "-n",
        "--namespace",
        default="memories/{user}",
        help="namespace of the memories: memories/{user} (default: one per user) or a fixed "
        "one such as memories/ada",
    )
    mcp.add_argument("--user", help="stdio: the client's user, filling {user}")
    mcp.add_argument(
        "--host", default="127.0.0.1", help="http: address to bind (default 127.0.0.1)"
    )
    mcp.add_argument("--port", type=int, default=8765, help="http: port (default 8765)")
    mcp.add_argument("--token", help="http: bearer token clients must send (or LANGMEM_MCP_TOKEN)")
    mcp.add_argument(
        "--token-file", help="http: JSON object of token -> user; each token is one user's"
    )
    mcp.add_argument(
        "--require-token",
        action="store_true",
        help="http: require a token on loopback too (always required on other addresses)",
    )
    mcp.add_argument(
        "--embed",
        default="hash:64",
        help="embeddings: hash[:DIMS] (default), provider:model or none",
    )
    mcp.set_defaults(func=cmd_mcp)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langmem-adapters``: run a command; report user mistakes as one line."""
    err = Console(stderr=True)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "batch_size", 1) <= 0:
            raise CLIError("--batch-size must be positive", USAGE)
        ctx = Ctx(out=Console(soft_wrap=True), err=err, quiet=args.quiet)
        return int(args.func(args, ctx))
    except CLIError as exc:
        message, code = str(exc), exc.code
    except psycopg.OperationalError as exc:
        message, code = f"cannot reach PostgreSQL: {first_line(exc)}", FAILURE
    except psycopg.Error as exc:
        message, code = f"PostgreSQL: {first_line(exc)}", FAILURE
    except redis.exceptions.ConnectionError as exc:
        message, code = f"cannot reach Redis: {first_line(exc)}", FAILURE
    except redis.exceptions.RedisError as exc:
        message, code = f"Redis: {first_line(exc)}", FAILURE
    except SettingUnavailableError as exc:  # the embedded server, a LangChain provider
        message, code = first_line(exc), FAILURE
    except InvalidRecordError as exc:  # a bad line of an import: the input, not the command line
        message, code = first_line(exc), FAILURE
    except (ValueError, TypeError, LookupError) as exc:
        # Our validation errors (bad filter, bad namespace, bad value) subclass these.
        message, code = first_line(exc), USAGE
    except StoreError as exc:
        message, code = first_line(exc), FAILURE
    except KeyboardInterrupt:
        message, code = "interrupted", 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file we read or write (checkpoint, input, output)
        message, code = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), FAILURE
    err.print(f"error: {message}", style="red", highlight=False, markup=False, soft_wrap=True)
    return code
