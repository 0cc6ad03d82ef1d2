"""FunctionTool: turn a Python function into a tool the model can call.

The declaration comes from the signature, type hints and docstring.
Parameters annotated with a runtime type (``InputStream``, ``ToolContext``)
are hidden: they are injected by the session and never shown to the model.
A function whose body is an async generator is a streaming tool; detection
looks at the function itself, a bound method, a ``functools.partial`` or a
callable object's ``__call__``, and never at the return annotation (which
people get wrong in many ways).

The model's arguments are checked by a pydantic model built once from the
visible parameters. It is strict on purpose: the model is told the types in
the declaration, so ``"3"`` for an integer is a mistake to report, not to
guess at. Constraints go in the signature::

    def count(min_change: Annotated[int, Field(ge=1, le=10, description="...")] = 1): ...

They are enforced by ``validate`` and, where the genai ``Schema`` can say so
(minimum/maximum, lengths, pattern), declared to the model too.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import inspect
import re
import reprlib
import types as pytypes
import typing
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import anyio
import pydantic
from google.genai import types
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from live.input_stream import InputStream
from live.tool import ToolArgumentError, ToolContext, coalesce_updates

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
    return any(_is_hidden(arg) for arg in get_args(annotation) if arg is not type(None))


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
        inner, optional = _strip_optional(annotation)
        nullable = nullable or optional
        if inner is annotation:
            return annotation, nullable, metadata
        annotation = inner


_CONSTRAINT_NAMES = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


def _constraints(metadata: Iterable[Any]) -> tuple[str | None, dict[str, Any]]:
    """The description and the constraints (``ge``, ``max_length``, ...) in Annotated metadata."""
    description: str | None = None
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            description = item.description or description
            found.update(_constraints(item.metadata)[1])
        elif isinstance(item, str | bytes):
            continue  # a plain comment-like annotation
        elif isinstance(item, Iterable):
            # annotated_types' grouped metadata (Interval, Len) iterates into single ones.
            found.update(_constraints(item)[1])
        else:
            # Duck-typed so that annotated_types (pydantic's, not ours) need not be imported.
            for name in _CONSTRAINT_NAMES:
                value = getattr(item, name, None)
                if value is not None:
                    found[name] = value
    return description, found


def _apply_constraints(schema: types.Schema, found: Mapping[str, Any]) -> None:
    """Tell the model the limits the genai Schema can express; validate enforces all of them."""
    if schema.type in (types.Type.INTEGER, types.Type.NUMBER):
        integer = schema.type == types.Type.INTEGER
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
    elif schema.type == types.Type.STRING:
        schema.min_length = found.get("min_length", schema.min_length)
        schema.max_length = found.get("max_length", schema.max_length)
        if isinstance(found.get("pattern"), str):
            schema.pattern = found["pattern"]
    elif schema.type == types.Type.ARRAY:
        schema.min_items = found.get("min_length", schema.min_items)
        schema.max_items = found.get("max_length", schema.max_items)


def schema_for(annotation: Any, description: str | None = None) -> types.Schema:
    """A google-genai Schema for a Python type annotation.

    ``description`` is used unless the annotation carries its own
    (``Annotated[int, Field(description=...)]``): the one beside the type is
    the more specific.
    """
    inner, nullable, metadata = _unwrap(annotation)
    own_description, constraints = _constraints(metadata)
    schema = _schema_for(inner)
    _apply_constraints(schema, constraints)
    if nullable:
        schema.nullable = True
    description = own_description or description
    if description:
        schema.description = description
    return schema


_BUILTIN_NAMES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
_SEQUENCES: tuple[Any, ...] = (list, tuple, collections.abc.Sequence)
_MAPPINGS: tuple[Any, ...] = (dict, collections.abc.Mapping)


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
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        return types.Schema(type=types.Type.ARRAY, items=schema_for(_item_type(annotation, str)))
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        return types.Schema(type=types.Type.OBJECT)
    raise TypeError(f"unsupported parameter type for a tool declaration: {annotation!r}")


def _item_type(annotation: Any, default: Any) -> Any:
    """The element type of a list, tuple or Sequence annotation (the first one, for tuples)."""
    args = get_args(annotation)
    return args[0] if args else default


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    required: bool
    default: Any


# Validation. Every check the model's values go through is one of pydantic's
# strict ones or a validator below; the messages come from _problem, never
# from pydantic's own multi-line text.


def _refuse(problem: str) -> PydanticCustomError:
    # The text goes through the context, not the template, so braces in it are harmless.
    return PydanticCustomError("tool_argument", "{problem}", {"problem": problem})


def _integral_float_to_int(value: Any) -> Any:
    # JSON has one number type; 2.0 for an integer is what the model meant.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _tuple_to_list(value: Any) -> Any:
    # Python callers may pass tuples; the model only ever sends lists.
    return list(value) if isinstance(value, tuple) else value


def _same_choice(value: Any, choice: Any) -> bool:
    if isinstance(value, bool) or isinstance(choice, bool):
        return value is choice  # a bool is never 1, nor 1 True
    if isinstance(choice, int) and isinstance(value, float):
        return value.is_integer() and value == choice
    return isinstance(value, type(choice)) and bool(value == choice)


def _choices_text(values: list[Any]) -> str:
    shown = ", ".join(str(v) for v in values[:10])
    return shown + (f" (and {len(values) - 10} more)" if len(values) > 10 else "")


def _literal_validator(choices: tuple[Any, ...]) -> Callable[[Any], Any]:
    # pydantic's own Literal check takes True for 1 and has no strict mode.
    def check(value: Any) -> Any:
        for choice in choices:
            if _same_choice(value, choice):
                return choice
        raise _refuse(f"must be one of {_choices_text(list(choices))}, got {_show(value)}")

    return check


def _enum_validator(kind: type[enum.Enum]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, kind):
            return value
        for member in kind:
            # The declaration lists each value as a string, so its text form counts too.
            if _same_choice(value, member.value) or (
                isinstance(value, str) and value == str(member.value)
            ):
                return member
        allowed = [m.value for m in kind]
        raise _refuse(f"must be one of {_choices_text(allowed)}, got {_show(value)}")

    return check


_STRICT: dict[type, Any] = {
    bool: Annotated[bool, pydantic.Strict()],
    int: Annotated[int, pydantic.Strict(), pydantic.BeforeValidator(_integral_float_to_int)],
    float: Annotated[float, pydantic.Strict(), pydantic.AllowInfNan(False)],
    str: Annotated[str, pydantic.Strict()],
}


def _validation_type(annotation: Any) -> Any:
    """The annotation pydantic validates with: the same type, strict, with our own checks.

    Only called on annotations ``schema_for`` accepted, so every shape it knows is here.
    """
    if isinstance(annotation, str):
        # Unresolved forward reference: checked only when the declaration says what it is.
        known = _BUILTIN_NAMES.get(annotation.strip())
        return Any if known is None else _STRICT[known]
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        return Annotated[(_validation_type(base), *metadata)]
    inner, nullable = _strip_optional(annotation)
    if nullable and inner is not annotation:
        return _validation_type(inner) | None
    if annotation in _STRICT:
        return _STRICT[annotation]
    if origin is Literal:
        return Annotated[Any, pydantic.PlainValidator(_literal_validator(get_args(annotation)))]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Annotated[Any, pydantic.PlainValidator(_enum_validator(annotation))]
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        item = _validation_type(_item_type(annotation, Any))
        # Fail fast: one bad element is enough to say, and a huge list must not cost a
        # huge list of errors.
        return Annotated[
            list[item],  # type: ignore[valid-type]
            pydantic.Strict(),
            # Not FailFast(): it cannot be hashed, and ``X | None`` hashes X.
            pydantic.Field(fail_fast=True),
            pydantic.BeforeValidator(_tuple_to_list),
        ]
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        args = get_args(annotation)
        key, value = (args[0], args[1]) if len(args) == 2 else (Any, Any)
        return Annotated[
            dict[_validation_type(key), _validation_type(value)],  # type: ignore[misc]
            pydantic.Strict(),
        ]
    return annotation


_EXPECTED = {
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
    "multiple_of": ("multiple_of", "a multiple of"),
}
_LENGTHS = {
    "string_too_short": ("min_length", "at least", "characters"),
    "string_too_long": ("max_length", "at most", "characters"),
    "too_short": ("min_length", "at least", "items"),
    "too_long": ("max_length", "at most", "items"),
}
_MAX_ERRORS = 3
_MAX_PART = 160


def _problem(error: ErrorDetails) -> str:
    """What is wrong with one value, in words; never more than a short excerpt of it."""
    kind = error["type"]
    value = error.get("input")
    context = error.get("ctx") or {}
    if value is None and (kind in _EXPECTED or kind == "tool_argument"):
        return "must not be null"
    if kind == "tool_argument":
        return str(context.get("problem"))
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]}, got {_show(value)}"
    if kind == "finite_number":
        return "must be a finite number"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"must be {words} {context.get(key)}, got {_short(value)}"
    if kind in _LENGTHS:
        key, words, unit = _LENGTHS[kind]
        got = f", got {len(value)}" if isinstance(value, collections.abc.Sized) else ""
        count = context.get(key)
        return f"must have {words} {count} {unit if count != 1 else unit[:-1]}{got}"
    if kind == "string_pattern_mismatch":
        return f"must match {context.get('pattern')!r}, got {_show(value)}"
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)  # an AfterValidator's own words
    return message if kind in ("value_error", "assertion_error") else f"is not valid: {message}"


def _where(loc: tuple[int | str, ...]) -> str:
    """``region[0][1]``: the argument, then indexes and (cut short) keys into it."""
    if not loc:
        return "arguments"
    parts = [str(loc[0])]
    for step in loc[1:]:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif step == "[key]":
            parts.append(" key")  # pydantic's marker: the key itself is wrong, not its value
        else:
            parts.append(f"[{_short(step, 20)}]")
    return "".join(parts)


def _one_line(text: str, limit: int = _MAX_PART) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_errors(tool: str, errors: list[ErrorDetails]) -> str:
    """One line for the model: the first few problems, and how many more there were."""
    parts = [_one_line(f"{_where(e['loc'])} {_problem(e)}") for e in errors[:_MAX_ERRORS]]
    more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
    return f"{tool}: {'; '.join(parts)}{more}"


def quote_names(names: list[str], limit: int = 5) -> str:
    """Names the model made up, quoted and cut short: they may hold anything."""
    shown = [repr(n if len(n) <= 40 else n[:37] + "...") for n in names[:limit]]
    if len(names) > limit:
        shown.append(f"and {len(names) - limit} more")
    return ", ".join(shown)


def _short(value: Any, limit: int = 40) -> str:
    """A repr of at most ``limit`` characters that costs little even for megabytes."""
    # reprlib stops early in long strings and big or deeply nested containers,
    # where repr() would first build the whole text.
    brief = reprlib.Repr()
    brief.maxlevel = 2
    brief.maxstring = brief.maxother = brief.maxlong = limit
    brief.maxlist = brief.maxtuple = brief.maxdict = brief.maxset = 4
    try:
        text = brief.repr(value)
    except Exception:
        # An int past Python's digit limit, or a __repr__ that fails: say what it is.
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: Any) -> str:
    return f"{type(value).__name__} {_short(value)}"


_MODEL_CONFIG = pydantic.ConfigDict(extra="forbid", validate_default=False)


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
    ) -> None:
        """``check`` runs after type checking and may raise ToolArgumentError.

        It is for what one parameter's type cannot say (one argument depending on
        another); a single value's range is better declared in the signature,
        ``Annotated[int, Field(ge=1)]``, where the model sees it too.

        ``long_running``: the call is answered at once with a ticket
        (``{"job_id": ..., "status": "started"}``) and the function runs as a
        job; its result reaches the model later, with the same call id.
        """
        self.func = func
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
        # Internal field names with the real ones as aliases: a parameter may be called
        # json, model_name or _x, which pydantic reserves or refuses as field names.
        self._fields = {p.name: f"p{i}" for i, p in enumerate(self._params)}
        self._model = self._build_model()

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

    def _build_model(self) -> type[pydantic.BaseModel]:
        fields: dict[str, Any] = {}
        for param in self._params:
            # The default is a placeholder: validate returns only the arguments given, so
            # the function's own default applies, and pydantic would deep-copy a real one
            # on every call (or fail to, for an object that cannot be copied).
            fields[self._fields[param.name]] = (
                _validation_type(param.annotation),
                pydantic.Field(... if param.required else None, alias=param.name),
            )
        try:
            return pydantic.create_model("Arguments", __config__=_MODEL_CONFIG, **fields)
        except Exception as exc:
            raise TypeError(
                f"{self._name}: cannot check the arguments {', '.join(self._fields)}: "
                f"{_one_line(str(exc))}"
            ) from exc

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
        """The arguments given, checked and converted (2.0 to 2, "blue" to Colour.BLUE).

        Only those given come back: the function's own defaults apply to the rest.
        Raises ToolArgumentError with one line naming the first few problems.
        """
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"{self._name}: arguments must be an object")
        known = {p.name: p for p in self._params}
        unknown = sorted(str(k) for k in args if k not in known)
        if unknown:
            expected = ", ".join(known) or "no arguments"
            raise ToolArgumentError(
                f"{self._name}: unknown argument(s) {quote_names(unknown)}; expected {expected}"
            )
        missing = [p.name for p in self._params if p.required and p.name not in args]
        if missing:
            raise ToolArgumentError(
                f"{self._name}: missing required argument(s) {', '.join(missing)}"
            )
        try:
            parsed = self._model.model_validate(dict(args))
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(
                _describe_errors(self._name, exc.errors(include_url=False))
            ) from None
        checked = {
            name: getattr(parsed, field) for name, field in self._fields.items() if name in args
        }
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
    for arg in get_args(annotation):
        if arg is not type(None):
            return _hidden_kind(arg)
    return ToolContext
