"""The blocking wire client of kwire.testing, for raw protocol tests."""
from kwire.testing.client import WireClient

__all__ = ["WireClient"]
