"""Settings of a run as one dataclass (the transformers `TrainingArguments` habit): each field says its help text,
its command-line flags and its check in `field(metadata=...)`, so that a new setting is one field. Three helpers read
those fields: `check` (called by the dataclass's `__post_init__`: a sentence per bad value), `add_arguments` (the
argparse options) and `as_dict` (what metrics.json records).

The fields every run shares are defined once, in run_settings.py; a name a field had before is kept for a release
as a deprecated alias (a class's `RENAMED`), which `add_arguments` offers as a flag that says so."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import typing
from collections.abc import Callable
from dataclasses import MISSING

__all__ = ["add_arguments", "as_dict", "check", "from_args", "parse_ints", "setting", "whole"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default in its help, once: not where the help already says it in words, nor where there is none
    to say (None: "(default: None)" told a reader nothing)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or "(default" in text:
            return text
        return super()._get_help_string(action)


def setting(default=MISSING, help: str = "", *, flags: tuple[str, ...] = (), check: Callable | None = None,
            why: str = "", choices=None, metavar: str | None = None, positional: bool = False,
            parse: Callable[[str], object] | None = None, **extra):
    """A settings field. `check(value) -> bool` with `why` (a sentence; `{value!r}` names the value) is tested on
    construction; `flags` replaces the `--field-name` flag (give aliases here: the first is the one --help names
    first); `positional` makes it an argument without a flag; `parse` turns the command line's text into the value
    (default: from the field's type)."""
    metadata = {"help": help, "flags": flags, "check": check, "why": why, "choices": choices, "metavar": metavar,
                "positional": positional, "parse": parse, **extra}
    return dataclasses.field(default=default, metadata=metadata)


def check(settings, error: type[Exception] = ValueError) -> None:
    """Raise `error` with the field's sentence for the first field whose check fails."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        test, choices = f.metadata.get("check"), f.metadata.get("choices")
        if choices is not None and value not in choices and not (value is None and f.default is None):
            why = f.metadata.get("why") or f"{_flag(f)} must be one of {', '.join(map(str, choices))}, not {{value!r}}"
            raise error(why.format(value=value))
        if test is not None and not _passes(test, value):
            raise error(f.metadata["why"].format(value=value))


def _passes(test: Callable, value) -> bool:
    try:
        return bool(test(value))
    except (TypeError, ValueError):  # a value of the wrong type (a str where a number belongs): not valid
        return False


def _flag(f: dataclasses.Field) -> str:
    return (f.metadata.get("flags") or (f"--{f.name.replace('_', '-')}",))[0]


def parse_ints(text: str) -> tuple[int, ...]:
    """'0,1,2' -> (0, 1, 2), for argparse."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers, e.g. 0,1,2") \
            from None


def _parser_of(kind) -> Callable[[str], object]:
    """The argparse `type` for a field's annotation: int, float, str, or the type inside `X | None`."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if args:
        kind = args[0]
    return kind if kind in (int, float) else str


def add_arguments(parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """An option per field of the dataclass `cls` (but `skip`), with its help, default, choices and flags: booleans
    are switches, fields without a default are required, `positional` ones are arguments."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or f.metadata.get("cli") is False:
            continue
        meta = f.metadata
        options = {"help": meta.get("help") or None}
        if meta.get("choices") is not None:
            options["choices"] = meta["choices"]
        if meta.get("metavar"):
            options["metavar"] = meta["metavar"]
        required = f.default is MISSING and f.default_factory is MISSING
        default = None if required else (f.default if f.default is not MISSING else f.default_factory())
        if meta.get("positional"):
            parser.add_argument(f.name, type=meta.get("parse") or _parser_of(hints[f.name]), **options)
            continue
        flags = meta.get("flags") or (f"--{f.name.replace('_', '-')}",)
        old = tuple(f"--{name.replace('_', '-')}" for name, new in getattr(cls, "RENAMED", {}).items()
                    if new == f.name and f"--{name.replace('_', '-')}" not in flags)
        if old:
            flags, options["action"] = flags + old, _store_warning_on(old)
        if hints[f.name] is bool:
            parser.add_argument(*flags, dest=f.name, default=default,
                                action="store_true" if not default else argparse.BooleanOptionalAction, **options)
            continue
        parser.add_argument(*flags, dest=f.name, type=meta.get("parse") or _parser_of(hints[f.name]),
                            default=default, required=required, **options)
    return parser


def from_args(cls, namespace: argparse.Namespace):
    """The settings `namespace` holds (the fields it lacks keep their defaults)."""
    return cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if hasattr(namespace, f.name)})


def as_dict(settings) -> dict:
    """Every field, as JSON writes it: paths as strings, tuples as lists."""
    def plain(value):
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return value
    return {f.name: plain(getattr(settings, f.name)) for f in dataclasses.fields(settings)}


def _store_warning_on(old: tuple[str, ...]) -> type[argparse.Action]:
    """argparse's store, saying on stderr that a flag of `old` is deprecated (the value is taken all the same)."""
    class Store(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            if option_string in old:
                print(f"{parser.prog}: {option_string} is deprecated; use {self.option_strings[0]}", file=sys.stderr)
            setattr(namespace, self.dest, values)
    return Store


def whole(least: int) -> Callable[[object], bool]:
    """A check: a whole number (not a bool) of at least `least`."""
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least
