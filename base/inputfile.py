"""Reading the files gacost is handed (job, TRL config, profile, model config, price files)
and the data files it ships (the price snapshot): safely, with one set of error messages.

Every such file goes through :func:`read_text`: a regular file only (a folder is named as
one, a FIFO would block, a device like ``/dev/zero`` never ends), at most ``max_bytes``,
UTF-8; a missing, unreadable or non-UTF-8 file is one error line naming the flag and the
file, ending in the caller's advice.

YAML is parsed by :func:`parse_yaml` with YAML 1.2 core-schema scalars (``1:20`` is a
string, not 80; ``yes`` is a string, not true; ``1e3`` is a number), a nesting limit, an
alias limit (an alias bomb of a few hundred bytes cannot expand into gigabytes) and no
duplicate keys. JSON is parsed by :func:`parse_json` with the same nesting limit; ``NaN``
and ``Infinity`` are refused. Errors are one line naming the file, raised as the caller's
error class.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from gacost.base.errors import GacostError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

MAX_BYTES = 256 << 10  # 256 KiB: a job or config file is a few hundred bytes to a few kB
MAX_DEPTH = 32  # nesting: a job file is 3 levels deep, a TRL config 4
MAX_NODES = 50_000  # YAML values, written or through aliases (a job has tens)
SHOWN_CHARS = 60  # longest value quoted in an error message


def clip(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` and the full length after)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def _shown(p: object) -> str:
    return clip(str(p), 300)[1:-1] if len(str(p)) > 300 else str(p)


def _fail(error: type[GacostError], flag: str, problem: str, fix: str) -> GacostError:
    """``<flag>: <problem>; <fix>``, without the parts left empty."""
    return error(f"{flag + ': ' if flag else ''}{problem}{'; ' + fix if fix else ''}")


def check_file(path: str | Path, flag: str, error: type[GacostError],
               max_bytes: int = MAX_BYTES, *, fix: str = "") -> None:
    """``path`` is a regular file (not a FIFO, device or folder) of at most ``max_bytes``,
    or one ``error`` line naming ``flag`` and ending in ``fix``; nothing is opened."""
    p = Path(path)
    try:
        info = os.stat(p)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise _fail(error, flag, f"cannot read {_shown(p)} ({why})", fix) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise _fail(error, flag, f"{_shown(p)} is {kind}; give a file", fix)
    if info.st_size > max_bytes:
        raise _fail(error, flag, f"{_shown(p)} is {info.st_size} bytes; at most {max_bytes} "
                    "are read (is it the right file?)", fix)


def read_text(path: str | Path | Traversable, flag: str, error: type[GacostError],
              max_bytes: int = MAX_BYTES, *, fix: str = "") -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``, or one ``error`` line
    ``<flag>: <problem>; <fix>`` (``flag`` and ``fix`` may be empty). ``path`` may be a
    package resource (:func:`importlib.resources.files`), read through its own API."""
    shown = _shown(path)
    try:
        if isinstance(path, (str, os.PathLike)):
            check_file(path, flag, error, max_bytes, fix=fix)
            with open(path, "rb") as fh:
                data = fh.read(max_bytes + 1)
        elif path.is_dir():
            raise _fail(error, flag, f"{shown} is a folder; give a file", fix)
        else:
            data = path.read_bytes()
    except OSError as exc:
        raise _fail(error, flag, f"cannot read {shown} ({exc.strerror or exc})", fix) from None
    if len(data) > max_bytes:
        raise _fail(error, flag, f"{shown} is over {max_bytes} bytes (is it the right file?)",
                    fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(error, flag, f"{shown} is not UTF-8 text (byte {exc.start}); save it as "
                    "UTF-8", fix) from None


# -- YAML 1.2 core schema


class _Loader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with YAML 1.2 core-schema scalars, no duplicate
    keys, a nesting limit and a limit on the values aliases expand to."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # the YAML 1.1 ones are not inherited
    _depth = 0
    _nodes = 0

    def construct_yaml_int(self, node: Any) -> int:
        text = str(self.construct_scalar(node))
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        if len(text.lstrip("+-")) > 4000:  # int() refuses more digits: keep it as text
            return text  # type: ignore[return-value]
        return int(text)

    def construct_yaml_float(self, node: Any) -> float:
        text = str(self.construct_scalar(node))
        lowered = text.lower()
        if lowered.endswith(".inf"):
            return float("-inf") if text.startswith("-") else float("inf")
        if lowered == ".nan":
            return float("nan")
        return float(text)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: SafeConstructor reports it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {clip(key)} appears twice in one mapping",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def compose_document(self) -> Any:
        self._depth = self._nodes = 0
        node = super().compose_document()
        _check_expansion(node)
        return node

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._nodes += 1
        if self._nodes > MAX_NODES:  # stop parsing early: a job file holds tens of values
            raise yaml.composer.ComposerError(
                None, None, f"more than {MAX_NODES} values; is it the right file?",
                self.peek_event().start_mark)  # type: ignore[no-untyped-call]
        if self._depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested more than {MAX_DEPTH} levels deep",
                self.peek_event().start_mark)  # type: ignore[no-untyped-call]
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+.0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"])
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)


def _check_expansion(root: Node | None) -> None:
    """Refuse a document whose aliases expand beyond :data:`MAX_NODES` nodes, or that
    contains itself (counted without expanding: each node's expanded size is memoised)."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    on_path = {id(root)}
    stack: list[tuple[Node, Iterator[Node], int]] = [(root, iter(_children(root)), 1)]
    while stack:
        node, children, total = stack[-1]
        child = next(children, None)
        if child is None:  # every child counted
            stack.pop()
            on_path.discard(id(node))
            sizes[id(node)] = total
            if stack:
                parent, rest, sub = stack[-1]
                stack[-1] = (parent, rest, sub + total)
                if sub + total > MAX_NODES:
                    raise yaml.composer.ComposerError(
                        None, None, f"aliases expand to over {MAX_NODES} values "
                        "(an alias bomb?); write the values out", parent.start_mark)
            continue
        if id(child) in on_path:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to a value that contains it", child.start_mark)
        if id(child) in sizes:
            stack[-1] = (node, children, total + sizes[id(child)])
            if total + sizes[id(child)] > MAX_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"aliases expand to over {MAX_NODES} values "
                    "(an alias bomb?); write the values out", node.start_mark)
            continue
        on_path.add(id(child))
        stack.append((child, iter(_children(child)), 1))


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def parse_yaml(text: str, where: str, error: type[GacostError]) -> Any:
    """One YAML document, or one ``error`` line ``<where>: line L, column C: problem``."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        syntax = isinstance(exc, (yaml.scanner.ScannerError, yaml.parser.ParserError))
        fix = "fix the YAML syntax" if syntax else "fix the file"
        raise error(f"{where}:{at} {clip(problem, 200)[1:-1]}; {fix}") from None
    except RecursionError:
        raise error(f"{where}: nested too deeply; fix the YAML") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number gacost accepts")


def parse_json(text: str, where: str, error: type[GacostError]) -> Any:
    """One JSON document (no ``NaN``/``Infinity``, nesting at most :data:`MAX_DEPTH`)."""
    depth = _json_depth(text)
    if depth > MAX_DEPTH:
        raise error(f"{where}: nested more than {MAX_DEPTH} levels deep; is it the right file?")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                    f"{exc.msg}); fix the JSON syntax") from None
    except ValueError as exc:
        raise error(f"{where}: {exc}; write a finite number or null") from None
    except RecursionError:
        raise error(f"{where}: nested too deeply") from None


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text (brackets inside strings not counted)."""
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest
