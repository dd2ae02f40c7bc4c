"""The one registry type (:class:`callscope.core.registry.Registry`): unknown names, order,
read-only registries, built-in modules imported on first use, and plugins from the entry
points of a real (temporary) distribution, a broken one included."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import callscope
from callscope.core.registry import Registry
from callscope.errors import ConfigError

#: the folder holding the ``callscope`` package, for subprocesses
SRC = str(Path(callscope.__file__).resolve().parents[1])


def make_dist(root: Path, name: str, entry_points: str, modules: dict[str, str]) -> Path:
    """A distribution installed in ``root`` (a ``.dist-info`` with ``entry_points.txt`` and
    the ``modules``), as ``importlib.metadata`` finds it once ``root`` is on ``sys.path``."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    for module, text in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_an_unknown_name_is_a_config_error_listing_the_choices() -> None:
    shapes = Registry[int]("shape", entries={"square": 4, "triangle": 3})
    with pytest.raises(ConfigError) as err:
        shapes["circle"]
    assert str(err.value) == "unknown shape 'circle'; choose one of: square, triangle"
    assert isinstance(err.value, ValueError)
    assert "circle" not in shapes and shapes.get("circle", None) is None
    assert shapes.get("circle", 0) == 0
    empty = Registry[int]("shape")
    with pytest.raises(ConfigError, match=r"choose one of: \(none registered\)"):
        empty.get("x")
    worded = Registry[int](
        "benchmark", entries={"a": 1}, unknown="no {what} called {name!r} (have: {choices})"
    )
    with pytest.raises(ConfigError, match=r"^no benchmark called 'b' \(have: a\)$"):
        worded["b"]


def test_registration_order_names_and_replacement() -> None:
    reg = Registry[int]("widget")
    for name, value in (("zeta", 1), ("alpha", 2), ("mid", 3)):
        assert reg.register(name, value) == value
    assert list(reg) == ["zeta", "alpha", "mid"] == list(reg.names())
    assert len(reg) == 3 and dict(reg) == {"zeta": 1, "alpha": 2, "mid": 3}
    reg.register("zeta", 9)  # a replacement keeps its place
    assert list(reg.items()) == [("zeta", 9), ("alpha", 2), ("mid", 3)]
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("alpha", 5, replace=False)
    for bad in ("", " x", "a:b"):
        with pytest.raises(ConfigError, match="a widget name is a non-empty name"):
            reg.register(bad, 0)
    assert Registry[int]("form", allow_colon=True).register("a:b", 1) == 1
    reg.unregister("alpha")
    reg.unregister("never-there")
    assert list(reg) == ["zeta", "mid"]


def test_a_read_only_registry_refuses_changes() -> None:
    fixed = Registry[int]("mode", entries={"a": 1}, read_only=True)
    with pytest.raises(TypeError, match="read-only"):
        fixed.register("b", 2)
    with pytest.raises(TypeError, match="read-only"):
        fixed.unregister("a")
    assert dict(fixed) == {"a": 1}


def test_builtin_modules_register_on_first_use(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "regtest_holder.py").write_text(
        "from callscope.core.registry import Registry\n"
        "REG = Registry('gadget', builtin_modules=('regtest_builtin',))\n"
        "REG.register('first', 1)\n",
        encoding="utf-8",
    )
    (tmp_path / "regtest_builtin.py").write_text(
        "from regtest_holder import REG\nREG.register('builtin', 2)\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("regtest_holder", "regtest_builtin"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    import regtest_holder  # the registering line above imported the built-in module first

    assert "regtest_builtin" in sys.modules
    assert list(regtest_holder.REG) == ["builtin", "first"]


def test_entry_point_plugins_and_a_broken_one(tmp_path: Path, monkeypatch) -> None:
    group = "callscope.test_registry_widgets"
    make_dist(
        tmp_path,
        "callscope_widget_plugin",
        f"""
        [{group}]
        triangle = regtest_widgets:TRIANGLE
        broken = regtest_missing_module:THING
        square = regtest_widgets:FAKE_SQUARE
        """,
        {"regtest_widgets": "TRIANGLE = 3\nFAKE_SQUARE = 5\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "regtest_widgets", raising=False)
    widgets = Registry[int]("widget", entries={"square": 4}, entry_point_group=group)
    assert widgets["square"] == 4  # a built-in answers without reading the entry points
    assert widgets.plugin_errors == {} and "regtest_widgets" not in sys.modules
    assert widgets["triangle"] == 3
    assert list(widgets) == ["square", "triangle"]
    assert widgets.plugins == {"triangle": "regtest_widgets:TRIANGLE"}
    assert set(widgets.plugin_errors) == {"broken", "square"}
    assert "ModuleNotFoundError" in widgets.plugin_errors["broken"]
    assert "already registered" in widgets.plugin_errors["square"]
    with pytest.raises(ConfigError, match="choose one of: square, triangle"):
        widgets["broken"]


def test_another_package_adds_a_backend_and_a_command(tmp_path: Path) -> None:
    """End to end, in a fresh interpreter: a backend and a CLI command from another installed
    distribution; a broken backend plugin is reported and leaves the built-ins alone, a
    command whose module does not import is left out of the whole app with a warning; the
    multi-turn benchmark ``bfcl`` is found without importing BFCL first."""
    make_dist(
        tmp_path,
        "callscope_echo_plugin",
        """
        [callscope.backends]
        echo = regtest_echo:BACKEND
        broken = regtest_echo:NO_SUCH_NAME

        [callscope.commands]
        hello = regtest_echo:hello
        broken-cmd = regtest_no_such_module:run
        """,
        {
            "regtest_echo": """
            from callscope.models.base import ChatModel
            from callscope.models.registry import Backend
            from callscope.types import ModelReply

            class Echo(ChatModel):
                supports_native_tools = False

                def __init__(self, spec):
                    self.spec = spec

                def chat(self, messages, tools=None, decoding=None, context=None):
                    return ModelReply(text="echo " + self.spec)

            BACKEND = Backend("echo", ("echo:<text>",), "echoes", lambda rest, o: Echo(rest))

            def hello() -> None:
                print("hello from a plugin")
            """
        },
    )
    script = textwrap.dedent(
        """
        import sys
        from callscope.benchmarks.protocol import BENCHMARKS
        from callscope.models.registry import BACKENDS, backend_help, load_model

        assert "callscope.benchmarks.bfcl.benchmark" not in sys.modules
        print("benchmarks", list(BENCHMARKS))
        print("reply", load_model("echo:hi").chat([]).text)
        print("backends", list(BACKENDS))
        print("errors", sorted(BACKENDS.plugin_errors))
        print("help", backend_help())
        from callscope.cli.main import COMMANDS, build_app, main

        app = build_app()
        print("commands", [c.name for c in app.registered_commands][-2:], dict(COMMANDS.plugins))
        sys.argv = ["callscope", "hello"]
        main()
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), SRC])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "benchmarks ['bfcl']",
        "reply echo hi",
        "backends ['local', 'gguf', 'ollama', 'openai', 'replay', 'echo']",
        "errors ['broken']",
        "help local:qwen2.5-coder-0.5b | local:qwen2.5-coder-1.5b | gguf:/path/to/model.gguf"
        " | ollama:<model> | openai:<model> | replay:<file.jsonl> | echo:<text>",
        "commands ['audit', 'hello'] {'hello': 'regtest_echo:hello', "
        "'broken-cmd': 'regtest_no_such_module:run'}",
        "hello from a plugin",
    ]
    assert "command plugin 'broken-cmd' not loaded" in done.stderr
