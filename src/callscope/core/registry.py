"""One registry type for every extension point: name -> entry, with plugins from entry points.

Every place where callscope lets a user choose something by name (a model backend, a
grounding mode, a benchmark source, a multi-turn benchmark, a classifier preset, a probe, a
gated ablation, a CLI command...) is a :class:`Registry`. It keeps registration order (help
text lists entries in that order), refuses malformed names, and raises
:class:`~callscope.errors.ConfigError` with the valid choices when asked for a name it does not
hold.

Plugins: a registry created with ``entry_point_group="callscope.<what>"`` also offers the
entry points another installed distribution declares in that group, e.g. in its
``pyproject.toml``::

    [project.entry-points."callscope.backends"]
    mybackend = "mypkg.backend:BACKEND"

An entry point's object is loaded the first time the registry is looked at (not at import),
and passed to the registry's ``on_plugin`` hook (default: register it under the entry point's
name). A plugin that fails to load is reported with its name and left out; it never breaks
the built-ins.

>>> shapes = Registry[int]("shape")
>>> shapes.register("square", 4)
4
>>> shapes["square"], list(shapes)
(4, ['square'])
>>> shapes.get("circle")
Traceback (most recent call last):
...
callscope.errors.ConfigError: unknown shape 'circle'; choose one of: square
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from callscope.errors import ConfigError

T = TypeVar("T")

log = logging.getLogger(__name__)


class Registry(Mapping[str, T], Generic[T]):
    """An ordered, read-mostly mapping ``name -> T`` with validated registration.

    ``what`` names the kind of entry in error messages ("grounding mode", "backend").
    ``entry_point_group``: the ``importlib.metadata`` group whose entry points are offered as
    plugins (see the module docstring). ``on_plugin(registry, name, obj)`` decides what a
    loaded entry point registers; the default registers ``obj`` under ``name``.
    """

    def __init__(
        self,
        what: str,
        *,
        entry_point_group: str | None = None,
        on_plugin: Callable[[Registry[T], str, Any], None] | None = None,
        allow_colon: bool = False,
    ) -> None:
        self.what = what
        self.entry_point_group = entry_point_group
        self._on_plugin = on_plugin
        self._allow_colon = allow_colon
        self._entries: dict[str, T] = {}
        self._plugins_loaded = entry_point_group is None
        #: entry point name -> why it could not be loaded
        self.plugin_errors: dict[str, str] = {}

    # ------------------------------------------------------------------ registration
    def register(self, name: str, entry: T, *, replace: bool = True) -> T:
        """Add ``entry`` under ``name`` (replacing an existing one unless ``replace=False``,
        then :class:`ConfigError`); returns ``entry``, so it can end a definition."""
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ConfigError(f"a {self.what} name is a non-empty word, not {name!r}")
        if ":" in name and not self._allow_colon:
            raise ConfigError(f"a {self.what} name has no ':', not {name!r}")
        if not replace and name in self._entries:
            raise ConfigError(f"a {self.what} called {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests restore a registry with this); unknown names are ignored."""
        self._entries.pop(name, None)

    # ------------------------------------------------------------------ plugins
    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True  # first: a plugin that looks at the registry must not recurse
        from importlib import metadata  # lazy: only when a plugin group is looked at

        for ep in metadata.entry_points(group=self.entry_point_group or ""):
            try:
                obj = ep.load()
                if self._on_plugin is not None:
                    self._on_plugin(self, ep.name, obj)
                else:
                    self.register(ep.name, obj)
            except Exception as exc:  # a broken plugin never takes the built-ins down
                self.plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}"
                log.warning("callscope: %s plugin %r not loaded: %s", self.what, ep.name, exc)

    # ------------------------------------------------------------------ lookup
    def get(self, name: str, default: Any = ...) -> Any:  # type: ignore[override]
        """The entry called ``name``; :class:`ConfigError` listing the choices when unknown
        (or ``default`` when one is given)."""
        self._load_plugins()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if default is not ...:
                return default
            raise ConfigError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The one-line error for an unknown ``name``."""
        choices = ", ".join(self.names()) or "(none registered)"
        return f"unknown {self.what} {name!r}; choose one of: {choices}"

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        self._load_plugins()
        return tuple(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)!r})"
