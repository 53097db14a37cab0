"""``xform.monitoring``: events, durations and scalars with listeners (``jax.monitoring``).

``record_*`` calls every listener registered for that kind (``time_span`` records a
``with`` block's duration and span).  Events come from users and libraries; xform's own
compile/dispatch paths do not record any yet.
"""
from __future__ import annotations

import contextlib
import time

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener", "time_span"]

_event: list = []
_duration: list = []
_span: list = []
_scalar: list = []


def record_event(event: str, **kwargs) -> None:
    """Tell every event listener that ``event`` happened (``listener(event, **kwargs)``)."""
    for cb in list(_event):
        cb(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Tell every duration listener ``listener(event, duration, **kwargs)``."""
    for cb in list(_duration):
        cb(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Tell every time-span listener ``listener(event, start, end, **kwargs)``."""
    for cb in list(_span):
        cb(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value, **kwargs) -> None:
    """Tell every scalar listener ``listener(event, value, **kwargs)``."""
    for cb in list(_scalar):
        cb(event, value, **kwargs)


@contextlib.contextmanager
def time_span(event: str, **kwargs):
    """Record the duration and time span of the ``with`` body under ``event``."""
    t0 = time.time()
    try:
        yield
    finally:
        t1 = time.time()
        record_event_duration_secs(event, t1 - t0, **kwargs)
        record_event_time_span(event, t0, t1, **kwargs)


def register_event_listener(callback) -> None:
    _event.append(callback)


def register_event_duration_secs_listener(callback) -> None:
    _duration.append(callback)


def register_event_time_span_listener(callback) -> None:
    _span.append(callback)


def register_scalar_listener(callback) -> None:
    _scalar.append(callback)


def _unregister(lst, callback, what):
    if callback not in lst:
        raise AssertionError(f"{what} listener {callback!r} is not registered")
    lst.remove(callback)


def unregister_event_listener(callback) -> None:
    _unregister(_event, callback, "event")


def unregister_event_duration_listener(callback) -> None:
    _unregister(_duration, callback, "event duration")


def unregister_event_time_span_listener(callback) -> None:
    _unregister(_span, callback, "event time span")


def unregister_scalar_listener(callback) -> None:
    _unregister(_scalar, callback, "scalar")


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    for lst in (_event, _duration, _span, _scalar):
        lst.clear()
