"""Lines and zones changed by name in a configuration file's text, in the file's layout.

A file keeps its lines (and zones) in one of the places the reader takes them from
(``device/config/layers.py:load_file`` and ``read``): ``[lines.NAME]`` at the top,
``[scene.lines.NAME]`` (the scene section), either inside ``[lookout]``, or beside a
``[lookout]`` table; as tables, dotted keys or inline tables. A named camera's are
the same within its table (``[cameras.door.lines.NAME]``, ``[cameras.door.scene.lines...]``):
every place below is then taken from the camera's table (``root``). A change goes where the
reader will look for it: a name set is edited in place (its comments and position
kept), a name removed is removed from there (so it cannot come back at the next start),
and a table left empty goes with it. Everything else stays as the user wrote it:
tomlkit keeps a document's formatting, which the standard library's ``tomllib``
(read-only) cannot.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, MutableMapping
from copy import deepcopy as copy_deep
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.items import Comment, InlineTable, Table, Whitespace

from device.config.scene.specs import LineSpec, ZoneSpec

DIGITS = 4  # a ten-thousandth of the frame: under a pixel at 4K
KINDS = ("lines", "zones")
Path_ = tuple[str, ...]  # keys from the document's top to a table


def camera_root(doc: Mapping[str, Any], camera: str | None) -> Path_:
    """Where a camera's settings are in the document (``()``: the device's own; a camera
    not in it yet gets ``[cameras.NAME]`` where the file keeps its cameras, else at the top)."""
    if camera is None:
        return ()
    where = _where(doc, "cameras")
    return (*(where or ()), "cameras", camera)


def _sub(doc: Mapping[str, Any], root: Path_) -> Mapping[str, Any]:
    """The table at ``root`` ({} where there is none yet)."""
    value: Any = doc
    for key in root:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def points(spec: LineSpec | ZoneSpec) -> list[list[float]]:
    return [[round(x, DIGITS), round(y, DIGITS)] for x, y in spec.points]


def _fields(spec: LineSpec | ZoneSpec) -> dict[str, Any]:
    fields: dict[str, Any] = {"points": points(spec)}
    if isinstance(spec, ZoneSpec) and spec.dwell is not None:
        # 10, not 10.0: as a person writes it (and as the file had it).
        fields["dwell"] = int(spec.dwell) if float(spec.dwell).is_integer() else spec.dwell
    return fields


def _get(doc: Mapping[str, Any], path: Path_) -> Any:
    value: Any = doc
    for key in path:
        value = value[key]
    return value


def _where(doc: Mapping[str, Any], key: str) -> Path_ | None:
    """Where the reader takes the top-level ``key`` from: inside ``[lookout]`` first."""
    inner = doc.get("lookout")
    if isinstance(inner, Mapping) and key in inner:
        return ("lookout",)
    return () if key in doc else None


def place(doc: Mapping[str, Any], kind: str, root: Path_ = ()) -> Path_ | None:
    """The table of ``kind`` (lines or zones) that the reader reads, if there is one."""
    sub = _sub(doc, root)
    flat = _where(sub, kind)
    if flat is not None:
        return (*root, *flat, kind)
    section = _where(sub, "scene")
    if section is not None:
        scene = _get(sub, (*section, "scene"))
        if isinstance(scene, Mapping) and kind in scene:
            return (*root, *section, "scene", kind)
    return None


def _new_place(doc: tomlkit.TOMLDocument, kind: str, root: Path_ = ()) -> Path_:
    """Where a file without ``kind`` gets it: beside the other kind, else in its scene
    section, else at the top (beside ``[lookout]`` too, as earlier versions wrote it)."""
    other = place(doc, KINDS[1 - KINDS.index(kind)], root)
    if other is not None:
        return (*other[:-1], kind)
    sub = _sub(doc, root)
    section = _where(sub, "scene")
    if section is not None and isinstance(_get(sub, (*section, "scene")), Mapping):
        return (*root, *section, "scene", kind)
    return (*root, kind)


def names(doc: Mapping[str, Any], kind: str, root: Path_ = ()) -> list[str]:
    found = place(doc, kind, root)
    table = _get(doc, found) if found is not None else {}
    return list(table) if isinstance(table, Mapping) else []


def _table(inline: bool, fields: Mapping[str, Any]) -> Table | InlineTable:
    new = tomlkit.inline_table() if inline else tomlkit.table()
    for key, value in fields.items():
        new.add(key, value)
    if isinstance(new, Table):
        new.add(tomlkit.nl())  # a blank line before whatever table follows
    return new


def _set(table: MutableMapping[str, Any], name: str, spec: LineSpec | ZoneSpec) -> None:
    fields = _fields(spec)
    item = table.get(name)
    if isinstance(item, Table | InlineTable):
        # In place: its comments and its position in the file stay.
        item["points"] = fields["points"]
        if "dwell" in fields:
            item["dwell"] = fields["dwell"]
        elif "dwell" in item:
            del item["dwell"]
        return
    if name in table:
        del table[name]
    last = next((item for item in reversed(list(table.values())) if isinstance(item, Table)), None)
    new = _table(isinstance(table, InlineTable), fields)
    table[name] = new
    if isinstance(last, Table) and isinstance(new, Table):
        _hand_over_comments(last, new)


def _hand_over_comments(before: Table, new: Table) -> None:
    """The comments that closed the table ``new`` now follows are the next table's
    heading (tomlkit keeps a table's leading comments at the end of the table before
    it): they move to the end of ``new``, so they stay right above their own table."""
    body = before.value.body
    trailing: list[tuple[Any, Any]] = []
    while body and body[-1][0] is None and isinstance(body[-1][1], Comment | Whitespace):
        trailing.insert(0, body.pop())
    if not any(isinstance(item, Comment) for _, item in trailing):
        body.extend(trailing)  # only blank lines: nothing to hand over
        return
    new_body = new.value.body
    while new_body and new_body[-1][0] is None and isinstance(new_body[-1][1], Whitespace):
        new_body.pop()  # its own blank line goes before the comments instead
    new_body.extend(trailing)  # a blank line, then the next table's comments


def _container(doc: tomlkit.TOMLDocument, path: Path_) -> MutableMapping[str, Any]:
    """The table at ``path``, made (as a header-less table) where it is not there yet."""
    value: MutableMapping[str, Any] = doc
    for key in path:
        if key not in value:
            inline = isinstance(value, InlineTable)
            value[key] = tomlkit.inline_table() if inline else tomlkit.table(is_super_table=True)
        value = value[key]
        if not isinstance(value, MutableMapping):
            raise ValueError(f"{'.'.join(path)} is not a table in it")
    return value


def _prune(doc: tomlkit.TOMLDocument, path: Path_, keep: bool = False) -> None:
    """Tables of lines, zones or a scene section left empty go (``[lookout]`` and a
    camera's table stay; ``keep``: the kind's own table too, a camera's "none of the
    device's")."""
    if keep:
        return
    while path and path[-1] in (*KINDS, "scene"):
        parent = _get(doc, path[:-1])
        table = parent.get(path[-1], {})
        if not isinstance(table, Mapping) or table:
            return
        if path[-1] in parent:
            del parent[path[-1]]
        path = path[:-1]


Changes = Mapping[str, LineSpec | ZoneSpec | None]


@dataclass(frozen=True)
class Where:
    """Whose scene is edited: the device's (``root`` ``()``) or a camera's table, and
    whether its table of a kind stays when it is left empty (a camera whose device
    has lines of its own: an empty table is how it has none of them)."""

    root: Path_ = ()
    keep_empty: bool = False


def _in_place(text: str, kind: str, changes: Changes, want: Mapping[str, Any], at: Where) -> str:
    """Each name set or removed where it is: comments, order and spacing kept."""
    doc = tomlkit.parse(text)
    path = place(doc, kind, at.root) or _new_place(doc, kind, at.root)
    table = _container(doc, path)
    for name, spec in changes.items():
        if spec is None:
            if name in table:
                del table[name]
        else:
            _set(table, name, spec)
    if at.keep_empty and not want:
        # Written out even empty (a table made on the way has no header of its own).
        holder = _get(doc, path[:-1])
        holder[path[-1]] = (
            tomlkit.inline_table() if isinstance(holder, InlineTable) else tomlkit.table()
        )
    _prune(doc, path, at.keep_empty and not want)
    return tomlkit.dumps(doc)


def _rebuilt(text: str, kind: str, changes: Changes, want: Mapping[str, Any], at: Where) -> str:
    """The whole table of ``kind`` written again, as ``[kind.NAME]`` tables: for the
    layouts tomlkit cannot edit in place (dotted keys mixed with tables)."""
    doc = tomlkit.parse(text)
    path = place(doc, kind, at.root) or _new_place(doc, kind, at.root)
    holder = _container(doc, path[:-1])
    if kind in holder:
        del holder[kind]
    if want or at.keep_empty:
        inline = isinstance(holder, InlineTable)
        table = tomlkit.inline_table() if inline else tomlkit.table(is_super_table=True)
        for name, fields in want.items():
            table.add(name, _table(inline, fields))
        holder[kind] = table
    _prune(doc, path, at.keep_empty and not want)
    return tomlkit.dumps(doc)


def _without(plain: dict[str, Any], kind: str, root: Path_) -> dict[str, Any]:
    """The file's data but for its table of ``kind`` (and an empty scene section)."""
    copy = copy_deep(plain)
    path = place(copy, kind, root)
    if path is not None:
        del _get(copy, path[:-1])[kind]
    for holder in (copy, copy.get("lookout"), _sub(copy, root)):
        if isinstance(holder, dict) and holder.get("scene") == {}:
            del holder["scene"]
    for depth in range(len(root) - 1, -1, -1):  # a camera's table made for the scene alone
        holder = _sub(copy, root[:depth])
        if isinstance(holder, dict) and holder.get(root[depth]) == {}:
            del holder[root[depth]]
    return copy


def _holds(
    text: str, kind: str, before: dict[str, Any], want: Mapping[str, Any], at: Where
) -> bool:
    """``text`` keeps ``want`` where the reader looks (an empty table kept: there), and
    nothing else changed."""
    try:
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    root = at.root
    path = place(after, kind, root)
    got = _get(after, path) if path is not None else (None if at.keep_empty else {})
    return bool(got == want and _without(after, kind, root) == _without(before, kind, root))


def _edit_kind(text: str, kind: str, changes: Changes, before: dict[str, Any], at: Where) -> str:
    path = place(before, kind, at.root)
    now = _get(before, path) if path is not None else {}
    if not isinstance(now, Mapping):
        raise ValueError(f"its {kind} are not a table")
    want = {n: v for n, v in now.items() if n not in changes or changes[n] is not None}
    want.update({n: _fields(s) for n, s in changes.items() if s is not None})
    for way in (_in_place, _rebuilt):
        try:
            out = way(text, kind, changes, want, at)
        except Exception:  # tomlkit fails on some layouts in its own ways: try the next
            continue
        if _holds(out, kind, before, want, at):
            return out
    table = ".".join((*at.root[-2:], kind))
    raise ValueError(f"its {kind} cannot be edited where they are (write them as [{table}.NAME])")


def edited(
    text: str,
    lines: Mapping[str, LineSpec | None],
    zones: Mapping[str, ZoneSpec | None],
    *,
    whole: bool = False,
    camera: str | None = None,
    keep_empty: tuple[str, ...] = (),
) -> str:
    """``text`` with these lines and zones set (None: removed), where the file keeps them.

    ``whole``: the scene is these, and any other line or zone of the file goes too.
    ``camera``: the ones of that camera's table (``[cameras.NAME]``), not the device's;
    ``keep_empty``: the kinds whose camera table stays when left empty, or is made so.
    Each change is checked made (the text read again, only that table changed); raises
    ``ValueError`` when the text is not TOML or cannot be changed so.
    """
    given: tuple[tuple[str, Changes], ...] = (("lines", lines), ("zones", zones))
    for kind, asked in given:
        try:
            before = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"it is not valid TOML now ({' '.join(str(exc).split())})") from None
        root = camera_root(before, camera)
        at = Where(root, keep_empty=kind in keep_empty)
        changes = dict(asked)
        if whole:
            changes.update({n: None for n in names(before, kind, root) if n not in changes})
        had = names(before, kind, root)
        changes = {n: s for n, s in changes.items() if s is not None or n in had}
        if changes or (at.keep_empty and place(before, kind, root) is None):
            text = _edit_kind(text, kind, changes, before, at)
    return text


def scene_toml(
    lines: Mapping[str, LineSpec], zones: Mapping[str, ZoneSpec], camera: str | None = None
) -> str:
    """The ``[lines.NAME]`` and ``[zones.NAME]`` tables of a configuration file (a named
    camera's: ``[cameras.NAME.lines.NAME]``)."""
    return edited("", lines, zones, camera=camera)


__all__ = ["DIGITS", "KINDS", "camera_root", "edited", "names", "place", "points", "scene_toml"]
