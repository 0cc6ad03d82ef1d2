"""FunctionTool: turn a Python function into a tool the model can call.

The declaration comes from the signature, type hints and docstring
(``tools/declaration.py``); the model's arguments are checked by a strict
pydantic model built once from the visible parameters (``tools/arguments.py``).
Parameters annotated with a runtime type (``InputStream``, ``ToolContext``)
are hidden: they are injected by the session and never shown to the model.
A function whose body is an async generator is a streaming tool; detection
looks at the function itself, a bound method, a ``functools.partial`` or a
callable object's ``__call__``, and never at the return annotation (which
people get wrong in many ways).

Constraints go in the signature::

    def count(min_change: Annotated[int, Field(ge=1, le=10, description="...")] = 1): ...

They are enforced by ``validate`` and, where the declared ``Schema`` can say so
(minimum/maximum, lengths, pattern), declared to the model too.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import types as pytypes
import typing
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any, get_args, get_origin

import anyio

from live import wire
from live.input_stream import InputFilter, InputStream
from live.tool import ToolContext, coalesce_updates
from tools.arguments import Arguments, quote_names
from tools.declaration import Param, docstring_parts, function_declaration, schema_for

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
    if get_origin(annotation) is Annotated:
        # Only the type counts, not what the metadata happens to hold.
        return _is_hidden(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, _HIDDEN_TYPES):
        return True
    origin = get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, _HIDDEN_TYPES):
        return True  # InputStream[Percept]: hidden by its class, whatever it carries
    return any(_is_hidden(arg) for arg in get_args(annotation) if arg is not type(None))


def is_injected(annotation: Any) -> bool:
    """Whether a parameter of this type is the session's to give (hidden from the model)."""
    return _is_hidden(annotation)


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        # include_extras keeps Annotated[..., Field(...)]: constraints and descriptions.
        return typing.get_type_hints(func, include_extras=True)
    except Exception:
        pass
    # One unresolvable forward reference (often just the return type, imported under
    # TYPE_CHECKING) must not cost the other parameters their types and constraints:
    # resolve each on its own, keeping the raw text of those that still fail.
    globalns = getattr(inspect.unwrap(func), "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in dict(getattr(func, "__annotations__", {})).items():
        try:
            alone = pytypes.SimpleNamespace(__annotations__={name: annotation})
            hints[name] = typing.get_type_hints(alone, globalns, include_extras=True)[name]
        except Exception:
            hints[name] = annotation
    return hints


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
        coalesce: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
        input_accept: tuple[str, ...] = (),
        input_filter: Callable[[dict[str, Any]], InputFilter | None] | None = None,
    ) -> None:
        """``check`` runs after type checking and may raise ToolArgumentError.

        ``input_accept``: the MIME patterns of realtime input its input stream takes
        (``("audio/*",)`` for a tool that listens); none: the session's (camera frames).
        ``input_filter``: for a call's checked arguments, which of those requests its
        stream takes (None: all), e.g. the camera named by its ``camera`` argument.

        It is for what one parameter's type cannot say (one argument depending on
        another); a single value's range is better declared in the signature,
        ``Annotated[int, Field(ge=1)]``, where the model sees it too.

        ``long_running``: the call is answered at once with a ticket
        (``{"job_id": ..., "status": "started"}``) and the function runs as a
        job; its result reaches the model later, with the same call id.
        """
        self.func = func
        self.input_accept = input_accept
        self.input_filter = input_filter
        self._check = check
        self._coalesce = coalesce or coalesce_updates
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
        summary, arg_docs = docstring_parts(inspect.getdoc(target))
        hints = _hints(target)
        self._params: list[Param] = []
        self._hidden: dict[str, type] = {}
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
                Param(
                    param.name,
                    annotation,
                    param.default is inspect.Parameter.empty,
                    param.default,
                )
            )
        # Fail now, at construction, rather than when the model first connects.
        self._declaration = function_declaration(
            self._name,
            description if description is not None else summary,
            self._params,
            arg_docs,
            streaming=self._streaming,
            long_running=long_running,
        )
        self._arguments = Arguments(self._name, self._params)

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

    def declaration(self) -> wire.FunctionDeclaration:
        return copy.deepcopy(self._declaration)

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments given, checked and converted (2.0 to 2, "blue" to Colour.BLUE).

        Only those given come back: the function's own defaults apply to the rest.
        Raises ToolArgumentError with one line naming the first few problems.
        """
        checked = self._arguments.validate(args)
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

    def coalesce(self, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        return self._coalesce(older, newer)

    def stream(self, args: dict[str, Any], context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        if not self._streaming:
            raise TypeError(f"{self._name} is not a streaming tool")
        result: AsyncIterator[dict[str, Any]] = self.func(**self._kwargs(args, context))
        return result


def _hidden_kind(annotation: Any) -> type:
    if get_origin(annotation) is Annotated:
        return _hidden_kind(get_args(annotation)[0])
    if isinstance(annotation, str):
        return InputStream if "InputStream" in annotation else ToolContext
    if isinstance(annotation, type):
        return InputStream if issubclass(annotation, InputStream) else ToolContext
    origin = get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, _HIDDEN_TYPES):
        return _hidden_kind(origin)
    for arg in get_args(annotation):
        if arg is not type(None):
            return _hidden_kind(arg)
    return ToolContext


__all__ = ["FunctionTool", "is_injected", "is_streaming_callable", "quote_names", "schema_for"]
