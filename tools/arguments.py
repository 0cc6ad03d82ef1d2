"""Checking the model's arguments against a tool's signature, and saying what is wrong.

``Arguments`` builds one strict pydantic model from the visible parameters. It is
strict on purpose: the model is told the types in the declaration, so ``"3"`` for
an integer is a mistake to report, not to guess at. Every check a value goes
through is one of pydantic's strict ones or a validator here; the messages come
from ``_problem`` as one short line, never from pydantic's own multi-line text,
and never echo more than an excerpt of what the model sent.
"""

from __future__ import annotations

import collections.abc
import enum
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

import pydantic
from pydantic_core import ErrorDetails, PydanticCustomError

from live.tool import ToolArgumentError
from tools.declaration import (
    BUILTIN_NAMES,
    MAPPINGS,
    SEQUENCES,
    Param,
    constraints,
    item_type,
    strip_optional,
)


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


@dataclass(frozen=True)
class WholeRange:
    """``Annotated`` metadata beside a ``Field``'s bounds: a value outside is told all of them.

    ``Annotated[float, Field(gt=0, le=1440), WholeRange()]`` refuses 5000 with "must be
    more than 0 and at most 1440, got 5000", where pydantic would name only the bound
    crossed and leave the model to guess the other.
    """


_RANGE_WORDS = (("gt", "more than"), ("ge", "at least"), ("lt", "less than"), ("le", "at most"))
_BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _whole_range_refusal(bounds: Mapping[str, Any]) -> pydantic.WrapValidator:
    words = " and ".join(f"{text} {bounds[key]}" for key, text in _RANGE_WORDS if key in bounds)
    if not words:
        raise TypeError("WholeRange() needs bounds beside it, as in Field(ge=1, le=10)")

    def check(value: Any, handler: pydantic.ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except pydantic.ValidationError as exc:
            # Only a crossed bound; a wrong type or a NaN keeps its own words.
            if any(e["type"] in _BOUND_ERRORS for e in exc.errors(include_url=False)):
                raise _refuse(f"must be {words}, got {_short(value)}") from None
            raise

    return pydantic.WrapValidator(check)


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
        known = BUILTIN_NAMES.get(annotation.strip())
        return Any if known is None else _STRICT[known]
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        if any(isinstance(m, WholeRange) for m in metadata):
            # Last, so that it wraps the bounds wherever the marker was written.
            refusal = _whole_range_refusal(constraints(metadata)[1])
            metadata = [*(m for m in metadata if not isinstance(m, WholeRange)), refusal]
        return Annotated[(_validation_type(base), *metadata)]
    inner, nullable = strip_optional(annotation)
    if nullable and inner is not annotation:
        return _validation_type(inner) | None
    if annotation in _STRICT:
        return _STRICT[annotation]
    if origin is Literal:
        return Annotated[Any, pydantic.PlainValidator(_literal_validator(get_args(annotation)))]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Annotated[Any, pydantic.PlainValidator(_enum_validator(annotation))]
    if annotation in SEQUENCES or origin in SEQUENCES:
        item = _validation_type(item_type(annotation, Any))
        # Fail fast: one bad element is enough to say, and a huge list must not cost a
        # huge list of errors.
        return Annotated[
            list[item],  # type: ignore[valid-type]
            pydantic.Strict(),
            # Not FailFast(): it cannot be hashed, and ``X | None`` hashes X.
            pydantic.Field(fail_fast=True),
            pydantic.BeforeValidator(_tuple_to_list),
        ]
    if annotation in MAPPINGS or origin in MAPPINGS:
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


class Arguments:
    """The checker for one tool's visible parameters."""

    def __init__(self, tool: str, params: Sequence[Param]) -> None:
        self._tool = tool
        self._params = list(params)
        # Internal field names with the real ones as aliases: a parameter may be called
        # json, model_name or _x, which pydantic reserves or refuses as field names.
        self._fields = {p.name: f"p{i}" for i, p in enumerate(self._params)}
        self._model = self._build_model()

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
                f"{self._tool}: cannot check the arguments {', '.join(self._fields)}: "
                f"{_one_line(str(exc))}"
            ) from exc

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments given, checked and converted; raises ToolArgumentError in one line."""
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"{self._tool}: arguments must be an object")
        known = {p.name: p for p in self._params}
        unknown = sorted(str(k) for k in args if k not in known)
        if unknown:
            expected = ", ".join(known) or "no arguments"
            raise ToolArgumentError(
                f"{self._tool}: unknown argument(s) {quote_names(unknown)}; expected {expected}"
            )
        missing = [p.name for p in self._params if p.required and p.name not in args]
        if missing:
            raise ToolArgumentError(
                f"{self._tool}: missing required argument(s) {', '.join(missing)}"
            )
        try:
            parsed = self._model.model_validate(dict(args))
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(
                _describe_errors(self._tool, exc.errors(include_url=False))
            ) from None
        return {
            name: getattr(parsed, field) for name, field in self._fields.items() if name in args
        }


__all__ = ["Arguments", "WholeRange", "quote_names"]
