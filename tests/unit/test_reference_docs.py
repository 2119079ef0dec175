"""docs/reference/ is generated from the code (tools/reference.py): the CLI's argparse parser and the
service's OpenAPI document. Regenerated here and compared, so a new flag or route without a rerun of
the generator fails, naming the command that fixes it."""

from __future__ import annotations

import argparse

import pytest

from tools import reference


@pytest.mark.parametrize("rel", sorted(reference.TARGETS))
def test_reference_is_what_the_code_generates(rel):
    path = reference.REPO / rel
    expected = reference.TARGETS[rel]()
    assert path.exists(), f"{rel} is missing: run {reference.COMMAND}"
    assert path.read_text(encoding="utf-8") == expected, f"{rel} is out of date: run {reference.COMMAND}"


def test_cli_reference_names_every_subcommand_and_flag():
    from rollback.cli.commands import build_parser

    text = reference.cli_reference()
    parser = build_parser()
    for name, _help, sub in reference._subcommands(parser):
        assert f"## `mysql-rollback {name}`" in text
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in text, f"{name} {option} is not in the reference"


def test_api_reference_names_every_route_and_method():
    from app.main import create_app

    text = reference.api_reference()
    for path, item in create_app().openapi()["paths"].items():
        for method in item:
            assert f"### `{method.upper()} {path}`" in text
