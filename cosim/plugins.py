"""Techniques, batch policies and app models from other packages, found by entry point.

A package extends cosim without editing it by declaring entry points (``pyproject.toml``,
``[project.entry-points."cosim.techniques"]``) in these groups:

=====================  ==============================================  =====================
group                  object the entry point names                    registry
=====================  ==============================================  =====================
``cosim.techniques``   `cosim.als.techniques.Technique`                ``--technique``
``cosim.priority``     `cosim.bls.policies.PriorityPolicy`             ``--priority``
``cosim.backfill``     `cosim.bls.policies.BackfillPolicy`             ``--batch``
``cosim.selection``    `cosim.bls.policies.SelectionPolicy`            ``--selection``
``cosim.dynamic``      `cosim.bls.policies.DynamicPolicy`              ``--malleable``
``cosim.apps``         `cosim.workload.apps.AppModel` (``name`` =      ``; CosimApp: ... app=``
                       the entry point's name)
=====================  ==============================================  =====================

`Registry` holds a table's built-in entries and adds the plugins' the first time a name is
not built in or the whole table is listed (``--help``, an unknown name, ``--technique all``):
``importlib.metadata`` costs ~30 ms to import, which a run of built-in policies never pays.
An entry point's name must be its object's name, both keyed as the registry looks names up
(case folded, ``_`` read as ``-`` for techniques and policies); a plugin that cannot
be loaded, names an object of the wrong kind, or takes a built-in name is an `InputError`
naming the entry point and its package. `examples/cosim-example-plugin/` is a complete plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from cosim.errors import InputError

__all__ = ["GROUPS", "Registry", "Choices"]

T = TypeVar("T")

GROUPS = ("cosim.techniques", "cosim.priority", "cosim.backfill", "cosim.selection",
          "cosim.dynamic", "cosim.apps")


class Registry(Mapping[str, T], Generic[T]):
    """A name -> object table: `builtins`, then the objects of entry-point `group` (module
    docstring), loaded on first need. `kind` is the type every entry must have; `key` turns
    a name into the table's form (``str.upper`` for techniques, ``str.lower`` otherwise);
    `name_of` gives an object's own name (None: the entry point's name is used as is)."""

    def __init__(self, group: str, builtins: Mapping[str, T], *, kind: type,
                 key: Callable[[str], str], name_of: Callable[[T], str] | None = None) -> None:
        if group not in GROUPS:
            raise ValueError(f"unknown plugin group {group!r}")
        self.group = group
        self._builtins = dict(builtins)
        self._kind = kind
        self._key = key
        self._name_of = name_of
        self._plugins: dict[str, T] | None = None

    @property
    def builtins(self) -> Mapping[str, T]:
        """The built-in entries alone (reading them loads no plugin)."""
        return self._builtins

    def _loaded(self) -> dict[str, T]:
        if self._plugins is None:
            self._plugins = _load(self.group, self._builtins, self._kind, self._key,
                                  self._name_of)
        return self._plugins

    def __getitem__(self, name: str) -> T:
        if name in self._builtins:
            return self._builtins[name]
        return self._loaded()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._builtins or name in self._loaded()

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from self._loaded()

    def __len__(self) -> int:
        return len(self._builtins) + len(self._loaded())

    def __repr__(self) -> str:
        return f"Registry({self.group!r}, built in: {', '.join(self._builtins)})"


class Choices:
    """The choices of a CLI option backed by a `Registry` (plus fixed `extra` names, minus
    entries `keep` refuses): membership tries the built-in names first, so argparse loads the
    plugins only to list the choices (help, an invalid choice)."""

    def __init__(self, registry: Registry[Any], *extra: str,
                 keep: Callable[[Any], bool] | None = None) -> None:
        self._registry = registry
        self._extra = extra
        self._keep = keep

    def __contains__(self, name: object) -> bool:
        if name in self._extra:
            return True
        if not isinstance(name, str) or name not in self._registry:
            return False
        return self._keep is None or self._keep(self._registry[name])

    def __iter__(self) -> Iterator[str]:
        names = [n for n in self._registry
                 if self._keep is None or self._keep(self._registry[n])]
        return iter([*self._extra, *sorted(names)])

    def text(self, everything: bool) -> str:
        """The choices for a help text: all of them (loading the plugins) or, to build a
        parser without loading them, the built-in ones and "or a plugin's"."""
        if everything:
            return ", ".join(self)
        builtins = self._registry.builtins
        names = sorted(n for n, v in builtins.items() if self._keep is None or self._keep(v))
        return ", ".join([*self._extra, *names]) + " (or a plugin's: see --help)"


def _load(group: str, builtins: Mapping[str, Any], kind: type, key: Callable[[str], str],
          name_of: Callable[[Any], str] | None) -> dict[str, Any]:
    """The objects of entry-point `group`, by name, checked (module docstring)."""
    from importlib.metadata import entry_points

    out: dict[str, Any] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        dist = ep.dist.name if ep.dist is not None else "an unknown package"
        where = f"plugin {ep.name!r} ({group} entry point of {dist}, {ep.value})"
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code: one line
            raise InputError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}",
                             field=group) from None
        if not isinstance(obj, kind):
            raise InputError(f"{where} is a {type(obj).__name__}, not a {kind.__name__}",
                             field=group)
        name = key(ep.name)
        if name_of is not None and key(name_of(obj)) != name:
            raise InputError(f"{where} names a {kind.__name__} called {name_of(obj)!r}: the "
                             "entry point's name must be its name", field=group)
        if name in builtins or name in out:
            raise InputError(f"{where} takes the name {name!r}, which is already registered",
                             field=group)
        out[name] = obj
    return out
