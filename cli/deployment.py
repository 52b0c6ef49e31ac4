"""Deployment subcommands: `topica migrate` (the store's schema up to date) and `topica
copy` (a SQLite deployment moved into PostgreSQL); `topica doctor --llm` (what the chat
endpoint honours)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from cli.commands import CommandError, require_memory, subcommand, switch

if TYPE_CHECKING:
    from core.deps import Deps


@subcommand("migrate", "json")
async def cmd_migrate(args: argparse.Namespace, deps: Deps) -> None:
    """bring the store's schema up to date (also done at every start; safe from replicas at
    once) and move vectors of earlier shared Chroma collections to per-user ones"""
    from cli.output import out, print_json

    store = deps.store
    moved = await asyncio.to_thread(deps.vectors.move_shared_collections)
    result = {
        "engine": store.db.engine,
        "store": store.path,
        "version": store.schema_version,
        "vectors_moved": moved,
    }
    if args.json:
        print_json(result)
    else:
        out.print(f"{result['engine']} store {result['store']}: schema version {result['version']}")
        if moved:
            out.print(f"{moved} vectors moved to per-user collections")


def copy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from", dest="source", type=Path, required=True, help="the SQLite data directory"
    )
    parser.add_argument("--to", dest="target", required=True, help="postgresql://… (empty)")
    parser.add_argument(
        "--schema", default="public", help="the PostgreSQL schema to copy into (default public)"
    )


@subcommand("copy", "json", configure=copy_arguments, standalone=True)
async def cmd_copy(args: argparse.Namespace, deps: Deps | None) -> None:
    """copy a SQLite deployment (--from DATA_DIR) into an empty PostgreSQL store, verified"""
    from app.copying import copy_store
    from cli.output import copy_table, out, print_json
    from stores.relational import RelationalStore
    from stores.relational.postgres import PostgresDatabase

    database = Path(args.source) / "topica.sqlite3"
    if not database.is_file():
        raise CommandError(f"no data in {args.source}")
    if not args.target.startswith(("postgresql://", "postgres://")):
        raise CommandError(f"--to must be a postgresql:// URL, not {args.target!r}")
    source = RelationalStore(database)
    target = RelationalStore(PostgresDatabase(args.target, schema=args.schema))
    try:
        copied = await asyncio.to_thread(copy_store, source, target)
    finally:
        source.close()
        target.close()
    verified = all(table.verified for table in copied)
    if args.json:
        print_json(
            {
                "verified": verified,
                "tables": [
                    {"table": t.table, "source": t.source_rows, "target": t.target_rows}
                    for t in copied
                ],
            }
        )
    else:
        out.print(copy_table(copied))
        out.print(
            "verified: every table has as many rows on both sides; vectors: `topica reindex` "
            "(or keep them when the Chroma server is shared)"
            if verified
            else "[bold red]counts differ[/]"
        )
    if not verified:
        raise CommandError("the copy is incomplete: row counts differ")


async def doctor_llm(args: argparse.Namespace) -> None:
    """`topica doctor --llm`: each capability of the endpoint, and the settings to use."""
    from app.llm_probe import probe_endpoint
    from cli.output import llm_probe_table, out, print_json

    try:
        result = await probe_endpoint(args.settings)
    except ValueError as error:
        raise CommandError(str(error)) from error
    if args.json:
        print_json(result)
        return
    out.print(llm_probe_table(result))
    for name, value in result["settings"].items():
        out.print(f"{name}={value}", markup=False, highlight=False)


def doctor_arguments(parser: argparse.ArgumentParser) -> None:
    switch(parser, "--all", "every user (instead of --user)")
    switch(parser, "--repair", "index what is missing, delete orphan vectors")
    switch(parser, "--llm", "probe what the configured chat endpoint honours (no data needed)")


@subcommand("doctor", "user", "json", configure=doctor_arguments, writes=False)
async def cmd_doctor(args: argparse.Namespace, deps: Deps) -> None:
    """compare the vector index with the stored records; --repair sets it right; --llm
    probes the chat endpoint"""
    if args.llm:
        await doctor_llm(args)
        return
    from app.doctor import doctor
    from cli.output import doctor_table, out, print_json

    if args.all:
        users = await asyncio.to_thread(deps.store.sessions.user_ids)
    else:
        await require_memory(deps, args.user)
        users = [args.user]
    result = await doctor(deps, users, repair=args.repair)
    if args.json:
        print_json(result)
    else:
        out.print(doctor_table(result["reports"]))
        out.print("consistent" if result["consistent"] else "[bold red]inconsistent[/]")
