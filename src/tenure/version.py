"""The installed version, in a module of its own: one that imports nothing can be read from
anywhere (tracing, the doctor, the dashboard) without importing the whole package."""

__version__ = "0.1.0"
