"""kwire.handlers.SERVED, the table ApiVersions and the server read without importing handler
modules, says what the modules themselves register: every API, its module and its versions."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kwire.codec.apis import api
from kwire.handlers import INDEX, REGISTRY, handles, load_all


def test_the_table_is_what_the_modules_register():
    load_all()
    registered = {k: (h.fn.__module__.rpartition(".")[2], h.min_version, h.max_version)
                  for k, h in dict.items(REGISTRY)}
    assert registered == INDEX


def test_a_module_that_disagrees_with_the_table_does_not_load():
    with pytest.raises(ImportError, match="Produce"):
        @handles("Produce", "0-12")
        async def produce(ctx, req):   # pragma: no cover - refused before it could run
            return None


@pytest.mark.slow
def test_a_handler_module_loads_when_its_api_is_first_asked_for():
    code = ("import sys\n"
            "from kwire.handlers import REGISTRY, served_ranges\n"
            "assert 'kwire.handlers.share_fetch' not in sys.modules\n"
            f"assert served_ranges()[{api('ShareFetch').key}] == (1, 2)\n"
            "assert 'kwire.handlers.share_fetch' not in sys.modules\n"
            f"h = REGISTRY.get({api('ShareFetch').key})\n"
            "assert h.fn.__module__ == 'kwire.handlers.share_fetch', h\n"
            "assert REGISTRY.get(9999) is None\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
