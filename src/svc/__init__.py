"""svc: cookie-free web analytics."""

__version__ = "0.1.0"
