"""vjp-migrate recorder bootstrap (only on PYTHONPATH under ``vjp-migrate record``).

Python imports ``sitecustomize`` at start-up; this one installs the recorder (which waits for
``jax`` to be imported) and then runs the ``sitecustomize`` it shadows, if there is one.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain_to_shadowed_sitecustomize() -> None:
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if os.environ.get("VJP_MIGRATE_RECORD_DIR"):
    sys.path.insert(0, _HERE)
    try:
        import _vjp_migrate_recorder  # type: ignore[import-not-found]

        _vjp_migrate_recorder.install()
    finally:
        sys.path.remove(_HERE)
_chain_to_shadowed_sitecustomize()
