"""FunctionTool: turn a Python function into a tool the model can call.

The declaration comes from the signature, type hints and docstring.
Parameters annotated with a runtime type (``InputStream``, ``ToolContext``)
are hidden: they are injected by the session and never shown to the model.
A function whose body is an async generator is a streaming tool; detection
looks at the function itself, a bound method, a ``functools.partial`` or a
callable object's ``__call__``, and never at the return annotation (which
people get wrong in many ways).
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
import types as pytypes
import typing
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import anyio
from google.genai import types

from live.input_stream import InputStream
from live.tool import ToolArgumentError, ToolContext

_HIDDEN_TYPES: tuple[type, ...] = (InputStream, ToolContext)
_HIDDEN_NAMES = {t.__name__ for t in _HIDDEN_TYPES}


def _target(func: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose code actually runs (unwrapping partials and callables)."""
    while isinstance(func, functools.partial):
        func = func.func
    if not (inspect.isfunction(func) or inspect.ismethod(func)) and callable(func):
        call = type(func).__call__
        return call.__get__(func, type(func))  # type: ignore[no-any-return]
    return func


def is_streaming_callable(func: Callable[..., Any]) -> bool:
    return inspect.isasyncgenfunction(_target(func))


def _is_hidden(annotation: Any) -> bool:
    if isinstance(annotation, str):
        # An annotation that could not be resolved: judge by the bare type name.
        names = re.findall(r"[A-Za-z_][A-Za-z_0-9.]*", annotation)
        return any(n.rsplit(".", 1)[-1] in _HIDDEN_NAMES for n in names if n != "None")
    if isinstance(annotation, type) and issubclass(annotation, _HIDDEN_TYPES):
        return True
    return any(_is_hidden(arg) for arg in get_args(annotation) if arg is not type(None))


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func)
    except Exception:
        # Unresolvable forward references: fall back to the raw annotations.
        return dict(getattr(func, "__annotations__", {}))


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
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


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, pytypes.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) != len(get_args(annotation))
        if len(args) == 1:
            return args[0], nullable
        return annotation, nullable
    return annotation, False


def schema_for(annotation: Any, description: str | None = None) -> types.Schema:
    """A google-genai Schema for a Python type annotation."""
    inner, nullable = _strip_optional(annotation)
    schema = _schema_for(inner)
    if nullable:
        schema.nullable = True
    if description:
        schema.description = description
    return schema


_BUILTIN_NAMES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}


def _schema_for(annotation: Any) -> types.Schema:
    if isinstance(annotation, str):
        # A forward reference nobody could resolve: describe it as text rather than
        # refusing the whole tool.
        annotation = _BUILTIN_NAMES.get(annotation.strip(), str)
    origin = get_origin(annotation)
    if annotation is bool:
        return types.Schema(type=types.Type.BOOLEAN)
    if annotation is int:
        return types.Schema(type=types.Type.INTEGER)
    if annotation is float:
        return types.Schema(type=types.Type.NUMBER)
    if annotation is str:
        return types.Schema(type=types.Type.STRING)
    if origin is Literal:
        values = get_args(annotation)
        if all(isinstance(v, str) for v in values):
            return types.Schema(type=types.Type.STRING, enum=list(values))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return types.Schema(type=types.Type.INTEGER, enum=[str(v) for v in values])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return types.Schema(type=types.Type.STRING, enum=[str(m.value) for m in annotation])
    if annotation in (list, tuple) or origin in (list, tuple, typing.Sequence):
        args = get_args(annotation)
        item = args[0] if args else str
        return types.Schema(type=types.Type.ARRAY, items=schema_for(item))
    if annotation is dict or origin in (dict, Mapping):
        return types.Schema(type=types.Type.OBJECT)
    raise TypeError(f"unsupported parameter type for a tool declaration: {annotation!r}")


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    required: bool
    default: Any


def _check_value(name: str, annotation: Any, value: Any) -> Any:
    """Convert ``value`` to ``annotation`` where safe, else raise ToolArgumentError."""
    inner, nullable = _strip_optional(annotation)
    if value is None:
        if nullable:
            return None
        raise ToolArgumentError(f"{name} must not be null")
    origin = get_origin(inner)
    if inner is bool:
        if isinstance(value, bool):
            return value
        raise ToolArgumentError(f"{name} must be true or false, got {_show(value)}")
    if inner is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ToolArgumentError(f"{name} must be an integer, got {_show(value)}")
    if inner is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if value != value or value in (float("inf"), float("-inf")):
                raise ToolArgumentError(f"{name} must be a finite number")
            return float(value)
        raise ToolArgumentError(f"{name} must be a number, got {_show(value)}")
    if inner is str:
        if isinstance(value, str):
            return value
        raise ToolArgumentError(f"{name} must be a string, got {_show(value)}")
    if origin is Literal:
        allowed = get_args(inner)
        if value in allowed:
            return value
        raise ToolArgumentError(
            f"{name} must be one of {', '.join(map(str, allowed))}, got {_show(value)}"
        )
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        try:
            return inner(value)
        except ValueError:
            allowed_values = ", ".join(str(m.value) for m in inner)
            raise ToolArgumentError(
                f"{name} must be one of {allowed_values}, got {_show(value)}"
            ) from None
    if inner in (list, tuple) or origin in (list, tuple, typing.Sequence):
        if not isinstance(value, list | tuple):
            raise ToolArgumentError(f"{name} must be a list, got {_show(value)}")
        args = get_args(inner)
        item_type = args[0] if args else Any
        if item_type is Any:
            return list(value)
        return [_check_value(f"{name}[{i}]", item_type, v) for i, v in enumerate(value)]
    if inner is dict or origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise ToolArgumentError(f"{name} must be an object, got {_show(value)}")
        return dict(value)
    return value


def quote_names(names: list[str], limit: int = 5) -> str:
    """Names the model made up, quoted and cut short: they may hold anything."""
    shown = [repr(n if len(n) <= 40 else n[:37] + "...") for n in names[:limit]]
    if len(names) > limit:
        shown.append(f"and {len(names) - limit} more")
    return ", ".join(shown)


def _show(value: Any) -> str:
    text = repr(value)
    kind = type(value).__name__
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} {text}"


class FunctionTool:
    """Wraps a function (sync, async, or async generator) as a ``live.Tool``."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        check: Callable[[dict[str, Any]], None] | None = None,
        long_running: bool = False,
    ) -> None:
        """``check`` runs after type checking and may raise ToolArgumentError (ranges etc.).

        ``long_running``: the call is answered at once with a ticket
        (``{"job_id": ..., "status": "started"}``) and the function runs as a
        job; its result reaches the model later, with the same call id.
        """
        self.func = func
        self._check = check
        target = _target(func)
        self._name = name or getattr(target, "__name__", None) or type(func).__name__
        self._streaming = inspect.isasyncgenfunction(target)
        if long_running and self._streaming:
            raise TypeError(
                f"{self._name} is a streaming tool (an async generator) and cannot also be "
                "long-running: a job returns one result"
            )
        self._long_running = long_running
        self._is_async = inspect.iscoroutinefunction(target)
        summary, arg_docs = _docstring_parts(inspect.getdoc(target))
        self._description = description if description is not None else summary
        hints = _hints(target)
        self._params: list[_Param] = []
        self._hidden: dict[str, type] = {}
        self._arg_docs = arg_docs
        for param in inspect.signature(func).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = hints.get(param.name, param.annotation)
            if _is_hidden(annotation):
                self._hidden[param.name] = _hidden_kind(annotation)
                continue
            if annotation is inspect.Parameter.empty:
                annotation = str
            self._params.append(
                _Param(
                    param.name,
                    annotation,
                    param.default is inspect.Parameter.empty,
                    param.default,
                )
            )
        # Fail now, at construction, rather than when the model first connects.
        self._declaration = self._build_declaration()

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_streaming(self) -> bool:
        return self._streaming

    @property
    def consumes_input(self) -> bool:
        return InputStream in self._hidden.values()

    @property
    def is_long_running(self) -> bool:
        return self._long_running

    @property
    def parameter_names(self) -> list[str]:
        return [p.name for p in self._params]

    def _build_declaration(self) -> types.FunctionDeclaration:
        properties = {
            p.name: schema_for(p.annotation, self._arg_docs.get(p.name)) for p in self._params
        }
        parameters = None
        if properties:
            parameters = types.Schema(
                type=types.Type.OBJECT,
                properties=properties,
                required=[p.name for p in self._params if p.required] or None,
            )
        description = self._description
        if self._long_running:
            # The model must know not to wait for (or re-call for) the result.
            note = (
                "Long-running: answers at once with {job_id, status: started}; the result "
                "arrives later as another response to this same call."
            )
            description = f"{description}\n\n{note}" if description else note
        return types.FunctionDeclaration(
            name=self._name,
            description=description or None,
            parameters=parameters,
            behavior=(
                types.Behavior.NON_BLOCKING if self._streaming or self._long_running else None
            ),
        )

    def declaration(self) -> types.FunctionDeclaration:
        return self._declaration.model_copy(deep=True)

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"{self._name}: arguments must be an object")
        known = {p.name: p for p in self._params}
        unknown = sorted(str(k) for k in args if k not in known)
        if unknown:
            expected = ", ".join(known) or "no arguments"
            raise ToolArgumentError(
                f"{self._name}: unknown argument(s) {quote_names(unknown)}; expected {expected}"
            )
        checked: dict[str, Any] = {}
        missing = [p.name for p in self._params if p.required and p.name not in args]
        if missing:
            raise ToolArgumentError(
                f"{self._name}: missing required argument(s) {', '.join(missing)}"
            )
        for param in self._params:
            if param.name in args:
                try:
                    checked[param.name] = _check_value(
                        param.name, param.annotation, args[param.name]
                    )
                except ToolArgumentError as exc:
                    raise ToolArgumentError(f"{self._name}: {exc}") from None
        if self._check is not None:
            self._check(checked)
        return checked

    def _kwargs(self, args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        kwargs = dict(args)
        for name, kind in self._hidden.items():
            kwargs[name] = context.input_stream if kind is InputStream else context
        return kwargs

    async def call(self, args: dict[str, Any], context: ToolContext) -> Any:
        kwargs = self._kwargs(args, context)
        if self._streaming:
            raise TypeError(f"{self._name} is a streaming tool")
        if self._is_async:
            return await self.func(**kwargs)
        # A sync tool may block (file, network, inference): keep it off the event loop.
        result = await anyio.to_thread.run_sync(functools.partial(self.func, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        return result

    def stream(self, args: dict[str, Any], context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        if not self._streaming:
            raise TypeError(f"{self._name} is not a streaming tool")
        result: AsyncIterator[dict[str, Any]] = self.func(**self._kwargs(args, context))
        return result


def _hidden_kind(annotation: Any) -> type:
    if isinstance(annotation, str):
        return InputStream if "InputStream" in annotation else ToolContext
    if isinstance(annotation, type):
        return InputStream if issubclass(annotation, InputStream) else ToolContext
    for arg in get_args(annotation):
        if arg is not type(None):
            return _hidden_kind(arg)
    return ToolContext
