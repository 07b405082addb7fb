"""Features kwire does not serve yet: scenario -> reason.

Against kwire (the default target) these scenarios are marked ``xfail(strict=False)`` with the reason, so
the report shows the gap and ``make compat`` stays green; against any other target they run normally.
When a feature lands, delete its lines here: the scenarios then have to pass.
A key is a scenario name (the test function without ``test_``), or ``scenario[client]`` for one client.
"""

KWIRE_GAPS: dict[str, str] = {
}
