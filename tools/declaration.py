"""The declaration the model sees: a Schema (``live/wire.py``) from type hints and docstrings.

``schema_for`` turns one annotation into a ``Schema`` (with the limits of any
``Annotated`` pydantic constraints the Schema can express); ``function_declaration``
assembles a tool's parameters, summary and behaviour into a ``FunctionDeclaration``.
``docstring_parts`` reads the summary and per-argument text of a Google-style docstring.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import re
import types as pytypes
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from live import wire


@dataclass(frozen=True)
class Param:
    """One parameter the model sees (hidden ones never become a Param)."""

    name: str
    annotation: Any
    required: bool
    default: Any


def docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """Summary text and per-argument descriptions from a Google-style docstring."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        header = stripped.rstrip(":").lower()
        if stripped.endswith(":") and header in {"args", "arguments", "parameters"}:
            section, current = "args", None
            continue
        if stripped.endswith(":") and header in {"returns", "yields", "raises", "emits"}:
            section, current = "other", None
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args":
            match = re.match(r"^(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", stripped)
            if match and not line.startswith((" " * 8, "\t\t")):
                current = match.group(1)
                params[current] = match.group(3)
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary_lines).strip(), params


def strip_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, pytypes.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) != len(get_args(annotation))
        if len(args) == 1:
            return args[0], nullable
        return annotation, nullable
    return annotation, False


def _unwrap(annotation: Any) -> tuple[Any, bool, list[Any]]:
    """The type under any ``Annotated`` and ``Optional`` layers, nullability, and the metadata.

    Both orders occur in the wild: ``Annotated[int | None, ...]`` and
    ``Annotated[int, ...] | None``.
    """
    nullable = False
    metadata: list[Any] = []
    while True:
        if get_origin(annotation) is Annotated:
            annotation, *extra = get_args(annotation)
            metadata.extend(extra)
            continue
        inner, optional = strip_optional(annotation)
        nullable = nullable or optional
        if inner is annotation:
            return annotation, nullable, metadata
        annotation = inner


_CONSTRAINT_NAMES = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


def constraints(metadata: Iterable[Any]) -> tuple[str | None, dict[str, Any]]:
    """The description and the constraints (``ge``, ``max_length``, ...) in Annotated metadata."""
    description: str | None = None
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            description = item.description or description
            found.update(constraints(item.metadata)[1])
        elif isinstance(item, str | bytes):
            continue  # a plain comment-like annotation
        elif isinstance(item, Iterable):
            # annotated_types' grouped metadata (Interval, Len) iterates into single ones.
            found.update(constraints(item)[1])
        else:
            # Duck-typed so that annotated_types (pydantic's, not ours) need not be imported.
            for name in _CONSTRAINT_NAMES:
                value = getattr(item, name, None)
                if value is not None:
                    found[name] = value
    return description, found


def _apply_constraints(schema: wire.Schema, found: Mapping[str, Any]) -> None:
    """Tell the model the limits the Schema can express; validate enforces all of them."""
    if schema.type in (wire.Type.INTEGER, wire.Type.NUMBER):
        integer = schema.type == wire.Type.INTEGER
        lows = [found["ge"]] if "ge" in found else []
        highs = [found["le"]] if "le" in found else []
        # An exclusive bound is exact only for integers; for numbers it is left to validate.
        if integer and isinstance(found.get("gt"), int):
            lows.append(found["gt"] + 1)
        if integer and isinstance(found.get("lt"), int):
            highs.append(found["lt"] - 1)
        if lows:
            schema.minimum = float(max(lows))
        if highs:
            schema.maximum = float(min(highs))
    elif schema.type == wire.Type.STRING:
        schema.min_length = found.get("min_length", schema.min_length)
        schema.max_length = found.get("max_length", schema.max_length)
        if isinstance(found.get("pattern"), str):
            schema.pattern = found["pattern"]
    elif schema.type == wire.Type.ARRAY:
        schema.min_items = found.get("min_length", schema.min_items)
        schema.max_items = found.get("max_length", schema.max_items)


def schema_for(annotation: Any, description: str | None = None) -> wire.Schema:
    """A Schema for a Python type annotation.

    ``description`` is used unless the annotation carries its own
    (``Annotated[int, Field(description=...)]``): the one beside the type is
    the more specific.
    """
    inner, nullable, metadata = _unwrap(annotation)
    own_description, limits = constraints(metadata)
    schema = _schema_for(inner)
    _apply_constraints(schema, limits)
    if nullable:
        schema.nullable = True
    description = own_description or description
    if description:
        schema.description = description
    return schema


BUILTIN_NAMES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
SEQUENCES: tuple[Any, ...] = (list, tuple, collections.abc.Sequence)
MAPPINGS: tuple[Any, ...] = (dict, collections.abc.Mapping)


def _schema_for(annotation: Any) -> wire.Schema:
    if isinstance(annotation, str):
        # A forward reference nobody could resolve: describe it as text rather than
        # refusing the whole tool.
        annotation = BUILTIN_NAMES.get(annotation.strip(), str)
    origin = get_origin(annotation)
    if annotation is bool:
        return wire.Schema(type=wire.Type.BOOLEAN)
    if annotation is int:
        return wire.Schema(type=wire.Type.INTEGER)
    if annotation is float:
        return wire.Schema(type=wire.Type.NUMBER)
    if annotation is str:
        return wire.Schema(type=wire.Type.STRING)
    if origin is Literal:
        values = get_args(annotation)
        if all(isinstance(v, str) for v in values):
            return wire.Schema(type=wire.Type.STRING, enum=list(values))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return wire.Schema(type=wire.Type.INTEGER, enum=[str(v) for v in values])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return wire.Schema(type=wire.Type.STRING, enum=[str(m.value) for m in annotation])
    if annotation in SEQUENCES or origin in SEQUENCES:
        return wire.Schema(type=wire.Type.ARRAY, items=schema_for(item_type(annotation, str)))
    if annotation in MAPPINGS or origin in MAPPINGS:
        return wire.Schema(type=wire.Type.OBJECT)
    raise TypeError(f"unsupported parameter type for a tool declaration: {annotation!r}")


def item_type(annotation: Any, default: Any) -> Any:
    """The element type of a list, tuple or Sequence annotation (the first one, for tuples)."""
    args = get_args(annotation)
    return args[0] if args else default


def function_declaration(
    name: str,
    description: str,
    params: Sequence[Param],
    arg_docs: Mapping[str, str],
    *,
    streaming: bool,
    long_running: bool,
) -> wire.FunctionDeclaration:
    """What the model is told of a tool; ``arg_docs`` describe parameters without their own."""
    properties = {p.name: schema_for(p.annotation, arg_docs.get(p.name)) for p in params}
    parameters = None
    if properties:
        parameters = wire.Schema(
            type=wire.Type.OBJECT,
            properties=properties,
            required=[p.name for p in params if p.required] or None,
        )
    if long_running:
        # The model must know not to wait for (or re-call for) the result.
        note = (
            "Long-running: answers at once with {job_id, status: started}; the result "
            "arrives later as another response to this same call."
        )
        description = f"{description}\n\n{note}" if description else note
    return wire.FunctionDeclaration(
        name=name,
        description=description or None,
        parameters=parameters,
        behavior=wire.Behavior.NON_BLOCKING if streaming or long_running else None,
    )


__all__ = ["Param", "docstring_parts", "function_declaration", "schema_for"]
