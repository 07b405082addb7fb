"""Optional C speed-up of the produce path's record walk (kwire/log/_walk.c).

Everything else lives in pyproject.toml. The extension is optional: without a C compiler
the build goes on and kwire uses the pure-Python walk (kwire.log.validator), which stays
the reference the C walk is tested against.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("kwire.log._walk", ["kwire/log/_walk.c"], optional=True)])
