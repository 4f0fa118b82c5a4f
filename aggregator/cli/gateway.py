"""`deniable-aggregator rotate-ohttp-key`: a new OHTTP gateway key, the old one accepted for an
overlap (docs/anonymity.md#keys-and-rotation)."""

from __future__ import annotations

import click
from flask.cli import with_appcontext

from deniable.aggregator.cli.errors import CLIError, friendly
from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.web.db import existing_store
from deniable.shared import ohttp
from deniable.shared.errors import SurveyError


@click.command("rotate-ohttp-key")
@click.option(
    "--overlap",
    type=float,
    default=gateway_keys.DEFAULT_OVERLAP_DAYS,
    show_default=True,
    metavar="DAYS",
    help="Days the current key is still accepted after the new one takes over.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Rotate even if open surveys pinned to the current key would outlive the overlap.",
)
@with_appcontext
@friendly
def rotate_command(overlap: float, force: bool) -> None:
    """Make a new OHTTP gateway key; surveys created from now on are pinned to it, and the
    current key is accepted for --overlap days more. Prints the new key's ohttp_keys."""
    try:
        rotation = gateway_keys.rotate(existing_store(), overlap, force=force)
    except SurveyError as exc:
        raise CLIError(str(exc)) from None
    for key in rotation.retiring:
        click.echo(f"key {key.key_id} is accepted until {key.retires_at}", err=True)
    for record, key in rotation.stranded:
        click.echo(
            f"warning: open survey {record.id!r} is pinned to key {key.key_id}: its relayed "
            f"reports are refused after {key.retires_at}",
            err=True,
        )
    click.echo(f"key {rotation.current.key_id} is current", err=True)
    click.echo(ohttp.keys_text([rotation.current.config]))
