PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: serve test bench compat clean spark-example

$(VENV)/.installed: pyproject.toml setup.py kwire/log/_walk.c
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark]'
	touch $@

.venv: $(VENV)/.installed

serve: .venv
	$(BIN)/kwire serve $(ARGS)

tests/js/node_modules/.installed: tests/js/package-lock.json
	cd tests/js && npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: .venv tests/js/node_modules/.installed
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=30 tests compat_tests

compat: .venv
	$(BIN)/python -m pytest -q -p no:cacheprovider compat_tests $(COMPAT_ARGS)

spark-example: .venv
	$(BIN)/python examples/spark_pipeline.py --demo

bench: .venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) kwire-data .pytest_cache .hypothesis
