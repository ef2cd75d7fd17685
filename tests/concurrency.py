"""Two release writers at once, as two ``sdc run`` of one wave start them: the race on a release's
sequence number (both read the same earlier releases, then both take the next number)."""

import threading
import time


def at_once_with_slow_listing(monkeypatch, module, listing: str, calls, seconds: float = 0.3):
    """Run ``calls`` (callables without arguments) in threads at once, with ``module.listing`` (the
    listing of earlier releases each writer reads its number from) slowed by ``seconds`` after it
    lists, so that without a lock every writer would read the same earlier releases. Returns the
    listing as it was, unslowed."""
    listed = getattr(module, listing)

    def slow(*args, **kwargs):
        found = listed(*args, **kwargs)
        time.sleep(seconds)
        return found

    monkeypatch.setattr(module, listing, slow)
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return listed
