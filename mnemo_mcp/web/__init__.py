"""A local web dashboard over the service: browse, search, rate, archive, analytics.

Loopback only, per-run token, CSRF on every change; see app.py for the guard."""

from .app import create_app
from .server import DashboardServer, serve

__all__ = ["DashboardServer", "create_app", "serve"]
