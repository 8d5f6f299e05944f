"""App specs: resolve a name or app TOML plus CLI overrides into parameters, then costs.

An app is named on the command line either by model name (``mandelbrot``, ``psia``,
``profile``), which reads the built-in defaults from ``<repo>/apps/<name>.toml`` (the
dataclass defaults when that file is absent, as it is for ``profile``), or by the path of an
app TOML file. An app TOML is strict: top-level keys ``model`` (required), ``description``
(free text) and ``params`` (a table of the model's parameters); any other key is an
`InputError` naming the file and the key. ``--app-param k=v`` overrides are applied on top of
the TOML and coerced like it (`cosim.config.build`); ``--costs FILE`` sets the profile's file
and is refused for other models. `MODELS` is the one registry of app models; unknown names
fail with the sorted list of known ones. See ``apps/README.md`` for every parameter.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cosim.config import build, check_keys, read_toml
from cosim.errors import InputError
from cosim.paths import APPS_DIR
from cosim.plugins import Registry
from cosim.workload import mandelbrot, profile, psia
from cosim.workload.costs import TaskCosts

__all__ = ["AppModel", "AppSpec", "MODELS", "APPS_DIR", "resolve_app", "load_app"]

_TOP_KEYS = ("model", "description", "params")


@dataclass(frozen=True, slots=True, kw_only=True)
class AppModel:
    """A registry entry: the parameter dataclass and the function computing the costs."""

    params: type
    compute: Callable[..., TaskCosts]


MODELS: Mapping[str, AppModel] = Registry("cosim.apps", {
    "mandelbrot": AppModel(params=mandelbrot.MandelbrotParams, compute=mandelbrot.compute),
    "profile": AppModel(params=profile.ProfileParams, compute=profile.compute),
    "psia": AppModel(params=psia.PsiaParams, compute=psia.compute),
}, kind=AppModel, key=lambda n: n)  # + plugins (`cosim.plugins`); names as written


@dataclass(frozen=True, slots=True, kw_only=True)
class AppSpec:
    """A resolved app: model name, validated parameters and the TOML they came from."""

    model: str
    params: object
    file: Path | None


def _known() -> str:
    return ", ".join(sorted(MODELS))


def _read_spec(spec: str) -> tuple[Path | None, dict]:
    if spec in MODELS:
        builtin = APPS_DIR / f"{spec}.toml"
        if not builtin.is_file():
            return None, {"model": spec}
        path = builtin
    else:
        path = Path(spec)
        if not path.is_file():
            raise InputError(f"unknown app {spec!r}: neither a model ({_known()}) "
                             "nor an app TOML file", field="app")
    doc = read_toml(path)
    check_keys(doc, _TOP_KEYS, file=path)
    if "model" not in doc:
        raise InputError(f"required key is missing (one of {_known()})", file=path, field="model")
    name = doc["model"]
    if not isinstance(name, str) or name not in MODELS:
        raise InputError(f"unknown model {name!r} (known: {_known()})", file=path, field="model")
    if spec in MODELS and name != spec:
        raise InputError(f"the built-in app {spec!r} declares model {name!r}", file=path,
                         field="model")
    if not isinstance(doc.get("description", ""), str):
        raise InputError("expected a string", file=path, field="description")
    if not isinstance(doc.get("params", {}), dict):
        raise InputError("expected a table [params]", file=path, field="params")
    return path, doc


def resolve_app(
    spec: str,
    *,
    overrides: Mapping[str, str] | None = None,
    costs_file: str | os.PathLike | None = None,
) -> AppSpec:
    """Resolve `spec` and the CLI options into validated parameters, computing nothing.

    Cheap: the CLI calls it to refuse bad input before starting MPI. Arguments are those of
    `load_app`.

    Raises
    ------
    InputError
        For an unknown app or model, an unreadable or invalid TOML, an unknown key (in the
        TOML: ``FILE: field params.KEY``; in the overrides: ``field app-param.KEY``), a bad
        value, or ``--costs`` with a model other than profile.
    """
    path, doc = _read_spec(spec)
    name = doc["model"]
    cls = MODELS[name].params
    table = dict(doc.get("params", {}))
    if path is not None and isinstance(table.get("file"), str) and "file" not in (overrides or {}):
        # A profile file named in a TOML is relative to that TOML, not to the working dir.
        table["file"] = str(path.parent / Path(table["file"]).expanduser())
    params = build(cls, table, file=path, section="params")
    if overrides:
        check_keys(overrides, [f.name for f in dataclasses.fields(cls)], section="app-param")
        params = build(cls, {**table, **overrides}, section="app-param")
    if costs_file is not None:
        if name != "profile":
            raise InputError(f"--costs is only for the profile model, this app is {name}",
                             field="costs")
        params = dataclasses.replace(params, file=os.fspath(costs_file))
    return AppSpec(model=name, params=params, file=path)


def load_app(
    spec: str,
    *,
    overrides: Mapping[str, str] | None = None,
    costs_file: str | os.PathLike | None = None,
    cache_dir: os.PathLike | str | None = None,
) -> TaskCosts:
    """Load the per-iteration costs of an app.

    Parameters
    ----------
    spec:
        ``'mandelbrot'``, ``'psia'``, ``'profile'`` (built-in defaults) or the path of an app
        TOML file.
    overrides:
        ``--app-param`` values, ``{key: string}``, applied on top of the TOML.
    costs_file:
        The CLI's ``--costs FILE``; only for the profile model, where it replaces ``file``.
    cache_dir:
        Where computed mandelbrot and psia arrays are cached; default ``$COSIM_CACHE_DIR``
        or ``<repo>/.cache``.

    Returns
    -------
    TaskCosts
        Costs in FLOP with prefix sums and the resolved parameters.

    Raises
    ------
    InputError
        As `resolve_app`, and for a missing or bad profile cost file.
    """
    app = resolve_app(spec, overrides=overrides, costs_file=costs_file)
    return MODELS[app.model].compute(app.params, cache_dir=cache_dir)
