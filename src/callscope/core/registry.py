"""One registry type for every extension point: name -> entry, with plugins from entry points.

Every place where callscope lets a user choose something by name (a model backend, a
grounding mode, a benchmark source, a multi-turn benchmark, a classifier preset, a probe, a
gated ablation, a CLI command...) is a :class:`Registry`. It keeps registration order (help
text lists entries in that order), refuses malformed names, and raises
:class:`~callscope.errors.ConfigError` with the valid choices when asked for a name it does not
hold.

Built-ins: entries are registered by the module that defines the registry, or by the modules
named in ``builtin_modules``, which the registry imports the first time it is used (so a
package can register itself, and a lookup still finds it without the caller importing it).

Plugins: a registry created with ``entry_point_group="callscope.<what>"`` also offers the
entry points another installed distribution declares in that group, e.g. in its
``pyproject.toml``::

    [project.entry-points."callscope.backends"]
    mybackend = "mypkg.backend:BACKEND"

Entry points are read the first time the registry is asked for a name it does not hold, or
for all its names (not at import, and not for a lookup a built-in answers). By default an
entry point's object is loaded and passed to the registry's ``on_plugin`` hook (default:
register it under the entry point's name); ``plugin_value`` replaces the loading (the CLI's
command registry keeps the ``module:attribute`` text, so a command's module is imported only
when it runs). A plugin never replaces a built-in, and one that fails to load or to register
is reported in :attr:`Registry.plugin_errors` (and logged) and left out: it never breaks the
built-ins. :attr:`Registry.plugins` lists the entry points that were registered.

Read-only registries (``read_only=True``) take their entries at construction (``entries``)
and from plugins; :meth:`Registry.register` and :meth:`Registry.unregister` refuse.

>>> shapes = Registry[int]("shape")
>>> shapes.register("square", 4)
4
>>> shapes["square"], list(shapes)
(4, ['square'])
>>> shapes.get("circle")
Traceback (most recent call last):
...
callscope.errors.ConfigError: unknown shape 'circle'; choose one of: square
>>> shapes.get("circle", None) is None
True
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from callscope.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")

log = logging.getLogger(__name__)

#: the default one-line error for an unknown name (``str.format`` fields: ``what``, ``name``,
#: ``choices``)
UNKNOWN = "unknown {what} {name!r}; choose one of: {choices}"

_MISSING: Any = object()
_MISSING_ENTRY: Any = object()


class Registry(Mapping[str, T], Generic[T]):
    """An ordered, read-mostly mapping ``name -> T`` with validated registration.

    ``what`` names the kind of entry in error messages ("grounding", "backend").
    ``entries``: the first entries, in order. ``builtin_modules``: modules imported on first
    use, which register built-in entries. ``entry_point_group``: the ``importlib.metadata``
    group whose entry points are offered as plugins (see the module docstring);
    ``plugin_value(entry_point)`` turns an entry point into the object handed to
    ``on_plugin(registry, name, obj)`` (default: ``entry_point.load()``), which decides what
    it registers (default: ``obj`` under ``name``). ``unknown``: the error for an unknown
    name (:data:`UNKNOWN`'s fields). ``allow_colon``: names may hold ``:``. ``read_only``:
    only ``entries``, ``builtin_modules`` and plugins add entries.
    """

    def __init__(
        self,
        what: str,
        *,
        entries: Mapping[str, T] | None = None,
        builtin_modules: Sequence[str] = (),
        entry_point_group: str | None = None,
        plugin_value: Callable[[EntryPoint], Any] | None = None,
        on_plugin: Callable[[Registry[T], str, Any], None] | None = None,
        unknown: str = UNKNOWN,
        allow_colon: bool = False,
        read_only: bool = False,
    ) -> None:
        self.what = what
        self.entry_point_group = entry_point_group
        self._builtin_modules = tuple(builtin_modules)
        self._plugin_value = plugin_value
        self._on_plugin = on_plugin
        self._unknown = unknown
        self._allow_colon = allow_colon
        self._entries: dict[str, T] = {}
        for name, entry in (entries or {}).items():
            self._add(name, entry, replace=False)
        self._read_only = read_only
        self._lock = threading.RLock()
        self._builtins_loaded = not self._builtin_modules
        self._plugins_loaded = entry_point_group is None
        self._adding_plugin = False
        #: entry point name -> why it could not be loaded or registered
        self.plugin_errors: dict[str, str] = {}
        #: entry point name -> its value (``module:attribute``), for each one registered
        self.plugins: dict[str, str] = {}

    # ------------------------------------------------------------------ registration
    def register(self, name: str, entry: T, *, replace: bool = True) -> T:
        """Add ``entry`` under ``name`` (replacing an existing one unless ``replace=False``,
        then :class:`ConfigError`); returns ``entry``, so it can end a definition.
        ``TypeError`` on a read-only registry (outside its plugins' registration)."""
        if self._read_only and not self._adding_plugin:
            raise TypeError(f"the {self.what} registry is read-only")
        self._load_builtins()
        return self._add(name, entry, replace=replace)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests restore a registry with this); unknown names are ignored.
        ``TypeError`` on a read-only registry."""
        if self._read_only:
            raise TypeError(f"the {self.what} registry is read-only")
        self._entries.pop(name, None)

    def _add(self, name: str, entry: T, *, replace: bool) -> T:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ConfigError(f"a {self.what} name is a non-empty name, not {name!r}")
        if ":" in name and not self._allow_colon:
            raise ConfigError(f"a {self.what} name is a non-empty name without ':', not {name!r}")
        if not replace and name in self._entries:
            raise ConfigError(f"a {self.what} called {name!r} is already registered")
        self._entries[name] = entry
        return entry

    # ------------------------------------------------------------------ built-ins and plugins
    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        with self._lock:
            if self._builtins_loaded:
                return
            self._builtins_loaded = True  # first: the modules register into this registry
            try:
                for module in self._builtin_modules:
                    importlib.import_module(module)
            except BaseException:
                self._builtins_loaded = False
                raise

    def _load_plugins(self) -> None:
        self._load_builtins()
        if self._plugins_loaded:
            return
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = (
                True  # first: a plugin that looks at the registry must not recurse
            )
            from importlib import metadata  # lazy: the distributions are scanned only when needed

            for ep in metadata.entry_points(group=self.entry_point_group or ""):
                self._add_plugin(ep)

    def _add_plugin(self, ep: EntryPoint) -> None:
        if ep.name in self._entries:
            self.plugin_errors[ep.name] = f"a {self.what} called {ep.name!r} is already registered"
            log.warning("callscope: %s plugin %r not loaded: name taken", self.what, ep.name)
            return
        self._adding_plugin = True
        try:
            obj = self._plugin_value(ep) if self._plugin_value is not None else ep.load()
            if self._on_plugin is not None:
                self._on_plugin(self, ep.name, obj)
            else:
                self._add(ep.name, obj, replace=False)
            self.plugins[ep.name] = ep.value
        except Exception as exc:  # a broken plugin never takes the built-ins down
            self.plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}"
            log.warning("callscope: %s plugin %r not loaded: %s", self.what, ep.name, exc)
        finally:
            self._adding_plugin = False

    # ------------------------------------------------------------------ lookup
    def get(self, name: str, default: Any = _MISSING) -> Any:  # type: ignore[override]
        """The entry called ``name``; :class:`ConfigError` listing the choices when unknown
        (or ``default`` when one is given, ``None`` included)."""
        self._load_builtins()
        if isinstance(name, str) and name not in self._entries:
            self._load_plugins()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if default is not _MISSING:
                return default
            raise ConfigError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The one-line error for an unknown ``name``."""
        choices = ", ".join(self.names()) or "(none registered)"
        return self._unknown.format(what=self.what, name=name, choices=choices)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        self._load_plugins()
        return tuple(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        return self.get(name, _MISSING_ENTRY) is not _MISSING_ENTRY  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)!r})"
