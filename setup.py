"""Optional C speed-ups: the produce path's record walk and the log cleaner's offset map and
record walks (kwire/log/_walk.c), and the down-conversion of plain v2 batches to message
formats v0/v1 for old fetchers (kwire/codec/_downconvert.c).

Everything else lives in pyproject.toml. The extensions are optional: without a C compiler
the build goes on and kwire uses the pure-Python code (kwire.log.validator,
kwire.log.cleaner, kwire.codec.legacy_records), which stays the reference the C code is
tested against.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("kwire.log._walk", ["kwire/log/_walk.c"], optional=True),
                   Extension("kwire.codec._downconvert", ["kwire/codec/_downconvert.c"], optional=True)])
