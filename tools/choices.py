"""A tool's place parameters declared as the names that exist: ``with_choices``.

A question about "the door" must be answered for a door the device or its log has:
the model is told the names (an enum of each parameter), so it picks one rather than
inventing one, and the offline model reads the question against the same names.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal


def with_choices(
    method: Callable[..., Any], choices: dict[str, tuple[str, ...]]
) -> Callable[..., Any]:
    """``method`` as the model is told of it: each place parameter an enum of the names the
    log has (none: the parameter as written), so a model sees them and cannot invent one."""
    hints = typing.get_type_hints(method, include_extras=True)
    params = []
    for param in inspect.signature(method).parameters.values():
        names = choices.get(param.name)
        if names:
            described = [m for m in getattr(hints[param.name], "__metadata__", ())]
            listed: Any = Literal[names]
            chosen: Any = listed | None
            hints[param.name] = Annotated[chosen, *described] if described else chosen
            param = param.replace(default=None)
        params.append(param)

    async def call(**kwargs: Any) -> Any:
        return await method(
            **{k: ("" if v is None and k in choices else v) for k, v in kwargs.items()}
        )

    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: hints[p.name] for p in params if p.name in hints}
    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = inspect.getdoc(method)
    return call


def without(method: Callable[..., Any], *names: str) -> Callable[..., Any]:
    """``method`` declared without the parameters ``names`` (left at their defaults): a
    place parameter where there is no place to choose."""
    params = [p for p in inspect.signature(method).parameters.values() if p.name not in names]
    hints = typing.get_type_hints(method, include_extras=True)

    async def call(**kwargs: Any) -> Any:
        return await method(**kwargs)

    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: hints[p.name] for p in params if p.name in hints}
    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = inspect.getdoc(method)
    return call


__all__ = ["with_choices", "without"]
