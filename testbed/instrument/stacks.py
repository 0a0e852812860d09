"""Every thread's stack to stderr when the fleet asks for it, before it SIGKILLs a program that did not stop in time.

The signal is ``testbed.members.runtime.STACKS_SIGNAL`` (SIGQUIT), as for testbed's own runners. faulthandler's C
handler writes the stacks whichever thread the kernel picks and whatever the main thread is blocked in, so a
program hung in a C-level wait still says where. A program that handles SIGQUIT itself keeps its handler.

The instrumentation loads before the program's first line, so a SIGQUIT already ignored then is not the program's
choice but its launcher's: a shell without job control starts background commands with SIGINT and SIGQUIT
ignored, and that survives exec. The dump replaces it; a program that ignores SIGQUIT itself does so later.
"""

from __future__ import annotations

import faulthandler
import signal
import threading

STACKS_SIGNAL = signal.SIGQUIT


def install_stack_dump() -> bool:
    """Dump every thread's stack on ``STACKS_SIGNAL`` unless something in this process handles it already; True
    if installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(STACKS_SIGNAL) not in (signal.SIG_DFL, signal.SIG_IGN):
        return False
    faulthandler.register(STACKS_SIGNAL, all_threads=True)
    return True
