"""testbed's instrumentation, loaded by Python's ``site`` before the program's first line.

This directory goes first on the program's ``PYTHONPATH`` (``testbed.instrument.launch.instrumented_env``),
with the project root after it. With ``TESTBED_INSTRUMENT_PREFLIGHT`` set, it only reports the
interpreter and its clients and exits (``testbed.instrument.preflight_report``). With
``TESTBED_INSTRUMENT`` set, it installs the instrumentation (``testbed.instrument.hooks``). Either way it
then runs the next ``sitecustomize`` on ``sys.path`` (Debian's Python ships one), which this file would
otherwise hide. Nothing here may stop the program from starting: a failure is said on stderr.
"""

import os
import sys


def _instrument():
    preflight = os.environ.get("TESTBED_INSTRUMENT_PREFLIGHT")
    if preflight:
        from testbed.instrument.preflight_report import report_and_exit

        report_and_exit(preflight)
    if os.environ.get("TESTBED_INSTRUMENT"):
        try:
            from testbed.instrument import hooks

            hooks.install()
        except Exception as exc:  # an import failure (e.g. testbed not found): install() reports the rest
            sys.stderr.write(f"testbed instrument: loading failed: {type(exc).__name__}: {exc}; "
                             "the program runs without instrumentation\n")
            try:
                from testbed.instrument.hooks import report_load_failure

                report_load_failure(os.environ["TESTBED_INSTRUMENT"], exc)
            except Exception:
                pass


def _chain():
    """Run the sitecustomize this one hides: the first found on sys.path after this directory."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.abspath(p or os.getcwd()) for p in sys.path]
    if here not in paths:
        return
    later = [p for p in paths[paths.index(here) + 1:] if p != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # as site.py reports a failing sitecustomize: said, not raised
        sys.stderr.write(f"Error in sitecustomize ({spec.origin}); set PYTHONVERBOSE for traceback:\n"
                         f"{type(exc).__name__}: {exc}\n")


try:
    _instrument()
except Exception as _exc:
    sys.stderr.write(f"testbed instrument: {type(_exc).__name__}: {_exc}\n")
_chain()
