"""Pydantic's validation errors as one line that names the setting as its source spells it.

``where(name)`` spells a setting for the source it came from (``--stall-timeout``,
``lookout.toml: stall-timeout``, ``LOOKOUT_STALL_TIMEOUT``); this module says what the
value must be, from the field's own type and bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from device.config.values import shown

_NUMBER = {"float_type", "float_parsing"}
_INTEGER = {"int_type", "int_parsing", "int_from_float", "int_parsing_size"}
_BOOLEAN = {"bool_type", "bool_parsing"}
_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_FIXED = {
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "model_type": "must be a table",
    "dict_type": "must be a table",
}


def _number(value: object) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else f"{value:g}"
    return str(value)


def value_range(field: FieldInfo) -> str:
    """A field's bounds in words (``more than 0 and less than 1``); empty when it has none."""
    bounds = {
        kind: getattr(rule, kind)
        for rule in field.metadata
        for kind in ("gt", "ge", "lt", "le")
        if getattr(rule, kind, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"between {_number(bounds['ge'])} and {_number(bounds['le'])}"
    if "gt" in bounds and "lt" in bounds:
        return f"more than {_number(bounds['gt'])} and less than {_number(bounds['lt'])}"
    words = {"gt": "more than", "ge": "at least", "lt": "less than", "le": "at most"}
    return " and ".join(f"{words[k]} {_number(v)}" for k, v in bounds.items())


def base_type(field: FieldInfo) -> Any:
    """A field's type without ``| None`` and without Annotated's validators."""
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, UnionType):
        given = [a for a in get_args(annotation) if a is not type(None)]
        annotation = given[0] if len(given) == 1 else annotation
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def choices(field: FieldInfo) -> tuple[str, ...]:
    """The values a Literal setting takes; empty for other types."""
    annotation = base_type(field)
    if get_origin(annotation) is Literal:
        return tuple(str(c) for c in get_args(annotation))
    return ()


def _requirement(error: ErrorDetails, field: FieldInfo | None) -> tuple[str, bool]:
    """What the value must be, and whether to show the value given after it."""
    kind = error["type"]
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"])), False
    if kind in _BOUNDS and field is not None:
        return f"must be {value_range(field)}", True
    if kind == "literal_error" and field is not None and choices(field):
        return f"must be one of {', '.join(choices(field))}", True
    if kind in _NUMBER:
        return "must be a number", True
    if kind in _INTEGER:
        return "must be an integer", True
    if kind in _BOOLEAN:
        return "must be true or false", True
    if kind == "extra_forbidden":
        return "is not a setting", False
    if kind in _FIXED:
        return _FIXED[kind], True
    # Anything else: pydantic's own first line, worded like ours.
    message = error["msg"].splitlines()[0].replace("Input should be", "must be")
    return message[:1].lower() + message[1:], True


def _field_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[str, FieldInfo | None]:
    """The setting an error's location points at: through sections (and a table of them
    by name, ``cameras.door``), down to a field, named by its path from the first table
    of names on (``cameras.door.detect_fps``)."""
    name, field = "", None
    prefix: list[str] = []
    parts = list(loc)
    while parts:
        part = str(parts.pop(0))
        found = model.model_fields.get(part)
        if found is None:  # not a setting (extra_forbidden): named as given
            return ".".join([*prefix, part]), None
        name, field = ".".join([*prefix, part]), found
        inner = base_type(found)
        if get_origin(inner) is dict and parts:
            # A table of sections by name (``cameras``): the name is part of the path.
            value = get_args(inner)[-1]
            if not (isinstance(value, type) and issubclass(value, BaseModel)):
                break
            prefix = [*prefix, part, str(parts.pop(0))]
            name, model = ".".join(prefix), value
            continue
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            break
        model = inner
    return name, field


def explain(exc: ValidationError, model: type[BaseModel], where: Callable[[str], str]) -> str:
    """One line for a validation error; ``where`` names a setting as its source spells it."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    name, field = _field_at(model, tuple(first["loc"]))
    requirement, show_value = _requirement(first, field)
    line = f"{where(name)} {requirement}" if name else requirement
    if show_value:
        line += f", not {shown(first['input'])}"
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more)"
    return " ".join(line.split())


__all__ = ["base_type", "choices", "explain", "value_range"]
