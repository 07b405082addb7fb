"""kwire.codec.apis.SCHEMAS, the table APIS is built from without importing the schema modules,
says what the modules themselves define: every module of the package, its api key, name and
request versions; and a schema module loads on its API's first use, not before."""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import kwire.codec.apis as apis_pkg
from kwire.codec.apis import APIS, BY_NAME, SCHEMAS, Api, api


def _modules() -> dict[int, tuple[str, str, int, int]]:
    found = {}
    for info in pkgutil.iter_modules(apis_pkg.__path__):
        mod = importlib.import_module(f"kwire.codec.apis.{info.name}")
        req, resp = mod.REQUEST, mod.RESPONSE
        assert req.api_key == resp.api_key, mod.__name__
        assert req.valid == resp.valid, mod.__name__   # the range ApiVersions advertises is the request's
        assert req.name.endswith("Request") and resp.name == req.name[:-len("Request")] + "Response"
        assert req.api_key not in found, f"api key {req.api_key} defined twice"
        found[req.api_key] = (info.name, req.name[:-len("Request")], req.valid.lo, req.valid.hi)
    return found


def test_the_table_is_what_the_modules_define():
    assert _modules() == SCHEMAS


def test_apis_is_the_table_and_loads_the_modules_schemas():
    assert list(APIS) == sorted(SCHEMAS)
    assert set(BY_NAME) == {name for _m, name, _lo, _hi in SCHEMAS.values()}
    for key, a in APIS.items():
        mod = importlib.import_module(f"kwire.codec.apis.{SCHEMAS[key][0]}")
        assert (a.key, a.name, a.min_version, a.max_version) == (key, *SCHEMAS[key][1:])
        assert a.request is mod.REQUEST and a.response is mod.RESPONSE and a.loaded
        assert api(a.name) is a and api(key) is a
        assert a.supports(a.min_version) and a.supports(a.max_version)
        assert not a.supports(a.min_version - 1) and not a.supports(a.max_version + 1)


def test_a_row_that_disagrees_with_its_module_does_not_load():
    fetch = SCHEMAS[1]
    wrong = Api(1, "Fetch", module=fetch[0], versions=(0, fetch[3] + 1))
    with pytest.raises(ImportError, match="Fetch"):
        wrong.request   # noqa: B018 - the load is what is tested
    with pytest.raises(ImportError, match="Produce"):
        Api(1, "Produce", module=fetch[0], versions=fetch[2:]).response   # noqa: B018
    with pytest.raises(AttributeError):
        APIS[1].no_such_attribute   # noqa: B018


def test_apis_built_from_messages_need_no_table():
    m = APIS[12]
    a = Api(1000, "Dummy", m.request, m.response)
    assert (a.min_version, a.max_version, a.loaded) == (m.min_version, m.max_version, True)


@pytest.mark.slow   # a fresh interpreter, and a broker in it
def test_a_schema_module_loads_on_its_apis_first_use_and_api_versions_needs_none():
    # ApiVersions' answer (every range) and the handler index come from the tables alone: a
    # broker answering ApiVersions and Metadata has imported those two schema modules only.
    code = ("import sys\n"
            "from kwire.testing.broker import Broker\n"
            "from kwire.codec.apis import APIS, SCHEMAS\n"
            "from kwire.handlers import served_ranges\n"
            "served_ranges()\n"
            "schemas = lambda: sorted(m.rpartition('.')[2] for m in sys.modules if m.startswith('kwire.codec.apis.'))\n"
            "assert schemas() == [], schemas()\n"
            "assert not APIS[1].loaded and APIS[1].supports(SCHEMAS[1][3])\n"
            "b = Broker(mode='thread').start()\n"
            "try:\n"
            "    with b.client() as c:\n"
            "        r = c.request('ApiVersions', 3, client_software_name='t', client_software_version='1')\n"
            "        keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}\n"
            "        c.request('Metadata', 9, topics=None, allow_auto_topic_creation=False,\n"
            "                  include_topic_authorized_operations=False)\n"
            "finally:\n"
            "    b.cleanup()\n"
            "assert r.error_code == 0 and keys[1] == (4, SCHEMAS[1][3]) and len(keys) > 50, keys\n"
            "print(' '.join(schemas()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["api_versions", "metadata"], out.stderr
