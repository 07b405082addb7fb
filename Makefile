# Any Python >= 3.11 will do: the first of these found on PATH, or PY=/path/to/python.
PY ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
          command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
          && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: serve test test-fast bench compat dist deps docs clean spark-example kafka differential ecosystem spark-kafka

# Apache Kafka, the reference kwire is compared with (compat TARGET=kafka|both, make differential,
# python -m bench vs-kafka): the jars pinned in jvm/pom.xml, copied by Maven into a cache outside the
# tree (~/.m2 keeps the downloads). A second run resolves nothing: the stamp holds the pom's hash.
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/pom.xml)
KAFKA_LIBS ?= $(or $(KWIRE_KAFKA_LIBS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kwire/kafka-$(KAFKA_VERSION)/libs)
export KWIRE_KAFKA_LIBS := $(KAFKA_LIBS)

kafka:
	@command -v mvn >/dev/null 2>&1 || { echo "make kafka: needs Maven (mvn) and a JDK 17 (make deps installs them)"; exit 1; }
	@sum=$$(sha256sum jvm/pom.xml | cut -d' ' -f1); \
	if [ "$$(cat '$(KAFKA_LIBS)/.resolved' 2>/dev/null)" = "$$sum" ]; then \
	  echo "make kafka: Apache Kafka $(KAFKA_VERSION) is in $(KAFKA_LIBS)"; \
	else \
	  echo "make kafka: resolving Apache Kafka $(KAFKA_VERSION) with Maven into $(KAFKA_LIBS)"; \
	  rm -rf '$(KAFKA_LIBS)' && mkdir -p '$(KAFKA_LIBS)' && \
	  mvn -q -B -Dstyle.color=never -f jvm/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory='$(KAFKA_LIBS)' && echo "$$sum" > '$(KAFKA_LIBS)/.resolved'; \
	fi

# Spark's own Kafka connector (spark-sql-kafka-0-10) for tests/ecosystem: the jars PySpark does not ship,
# pinned in jvm/spark-kafka/pom.xml, copied into a cache outside the tree; stamped like kafka above.
SPARK_KAFKA_VERSION := $(shell sed -n 's:.*<spark.kafka.version>\(.*\)</spark.kafka.version>.*:\1:p' jvm/spark-kafka/pom.xml)
SPARK_KAFKA_LIBS ?= $(or $(KWIRE_SPARK_KAFKA_LIBS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kwire/spark-kafka-$(SPARK_KAFKA_VERSION)/libs)

spark-kafka:
	@command -v mvn >/dev/null 2>&1 || { echo "make spark-kafka: needs Maven (mvn) and a JDK 17 (make deps installs them)"; exit 1; }
	@sum=$$(sha256sum jvm/spark-kafka/pom.xml | cut -d' ' -f1); \
	if [ "$$(cat '$(SPARK_KAFKA_LIBS)/.resolved' 2>/dev/null)" = "$$sum" ]; then \
	  echo "make spark-kafka: Spark's Kafka connector $(SPARK_KAFKA_VERSION) is in $(SPARK_KAFKA_LIBS)"; \
	else \
	  echo "make spark-kafka: resolving Spark's Kafka connector $(SPARK_KAFKA_VERSION) with Maven into $(SPARK_KAFKA_LIBS)"; \
	  rm -rf '$(SPARK_KAFKA_LIBS)' && mkdir -p '$(SPARK_KAFKA_LIBS)' && \
	  mvn -q -B -Dstyle.color=never -f jvm/spark-kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2 \
	    -DoutputDirectory='$(SPARK_KAFKA_LIBS)' && echo "$$sum" > '$(SPARK_KAFKA_LIBS)/.resolved'; \
	fi

# .venv with kwire alone (what `make serve` needs); .installed below makes it with the test and spark extras.
$(VENV)/.base: pyproject.toml setup.py kwire/log/_walk.c kwire/codec/_downconvert.c
	@test -n "$(PY)" || { echo "make: need Python >= 3.11 on PATH (or make PY=/path/to/python3.11)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

# One pip run for kwire and both extras (each run rebuilds kwire's editable wheel and its C
# extensions): a new venv for `make test` costs one build, not two.
$(VENV)/.installed: pyproject.toml setup.py kwire/log/_walk.c kwire/codec/_downconvert.c
	@test -n "$(PY)" || { echo "make: need Python >= 3.11 on PATH (or make PY=/path/to/python3.11)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,spark]'
	touch $(VENV)/.base $@

.venv: $(VENV)/.installed

serve: $(VENV)/.base
	$(BIN)/kwire serve $(ARGS)

tests/js/node_modules/.installed: tests/js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make: the KafkaJS tests need node and npm (make deps installs them)"; exit 1; }
	cd tests/js && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The venv, KafkaJS's node_modules and Kafka's jars are independent: made side by side. The tests
# write bytecode caches even where PYTHONDONTWRITEBYTECODE is set: otherwise each of the four
# workers rewrites and compiles every test module again (pytest's assertion rewriting, ~25 s of
# CPU each) and every kwire subprocess compiles kwire. A collection of the two halves of the tree
# side by side fills those caches first (its errors show again in the run itself).
test:
	@$(MAKE) --no-print-directory -j3 .venv tests/js/node_modules/.installed kafka
	@command -v kcat >/dev/null 2>&1 || echo "make: kcat not found: its tests will fail (make deps installs it)"
	@command -v javac >/dev/null 2>&1 || echo "make: javac not found: the Java compat column will fail (make deps installs a JDK)"
	@command -v go >/dev/null 2>&1 || echo "make: go not found: the Sarama and kafka-go tests will fail (make deps installs Go and their sources)"
	@export PYTHONDONTWRITEBYTECODE=; dirs="$$(ls -d tests/*/ | grep -v -e tests/js/ -e tests/ecosystem/) compat_tests"; \
	  $(BIN)/python -m pytest -q --collect-only -p no:cacheprovider $$(echo $$dirs | tr ' ' '\n' | awk 'NR % 2') >/dev/null 2>&1 & \
	  $(BIN)/python -m pytest -q --collect-only -p no:cacheprovider $$(echo $$dirs | tr ' ' '\n' | awk 'NR % 2 == 0') >/dev/null 2>&1; \
	  wait
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 4 --dist loadgroup --durations=30 \
	  --ignore=tests/ecosystem tests compat_tests

# Kafka's own tools, Kafka Streams, MirrorMaker 2, Spark's Kafka connector and Kafka Connect against
# kwire and Apache Kafka side by side (tests/ecosystem): JVMs by the dozen, minutes; not in make test.
# --dist loadfile: a module's tests share its module-scoped clusters, so they run on one worker
# (spread over two, each worker would start its own pair). Spark's connector through a broker
# SIGKILL on three kwire nodes (test_spark_kafka.py) is minutes of its own.
ecosystem: .venv kafka spark-kafka
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=20 tests/ecosystem

# The fast tier: the tests not marked slow (no process, no JVM, no TCP, no wall-clock wait; in a
# run that leaves slow out, tests/conftest.py fails a test that does any of these). Pure Python,
# so one worker per core of this 2-core target (worksteal: the long simulations do not end up
# queued behind each other on one worker); bytecode caches written as in make test.
test-fast: .venv
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not slow" --durations=10 \
	  --ignore=tests/ecosystem tests

# TARGET: kwire (default), kafka (Apache Kafka from make kafka's jars; testcontainers where Docker answers),
# both (every row against kwire and Apache Kafka; a difference docs/differences.md does not list fails), tansu
# Its prerequisites are made here as for make test: the venv, kafka-node (npm ci in tests/js) and
# make kafka's jars (the Java client column runs Kafka's own client jars, whatever the target).
TARGET ?= kwire
compat:
	@$(MAKE) --no-print-directory -j3 .venv tests/js/node_modules/.installed kafka
	$(BIN)/python -m pytest -q -p no:cacheprovider compat_tests --target $(TARGET) $(COMPAT_ARGS)

# Differential wire conformance: the same request sequences to a fresh kwire and a fresh Apache
# Kafka, both answers decoded with kwire's schemas and compared field by field; writes
# differential-report.json and fails on a difference docs/differences.md does not list.
# DIFFERENTIAL_ARGS: --only family,... / --ci (the subset make test runs) / --report PATH.
differential: .venv kafka
	$(BIN)/python -m differential $(DIFFERENTIAL_ARGS)

spark-example: .venv
	$(BIN)/python examples/spark_pipeline.py --demo

bench: .venv
	$(BIN)/python -m bench

# A wheel and an sdist in dist/ (pip install dist/kwire-*.whl elsewhere).
dist: $(VENV)/.base
	$(BIN)/python -m pip install -q build
	$(BIN)/python -m build --outdir dist .

# docs/config.md from the config table (which keys kwire honours, which it accepts and ignores).
docs: $(VENV)/.base
	$(BIN)/python -m kwire.config_keys.reference > docs/config.md
	$(BIN)/python -m kwire.emulation > docs/emulation.md

# What the tests need beside Python: kcat, node/npm (KafkaJS), Java 17 with javac and Maven (Kafka's
# jars, the Java clients), Go with Debian's Sarama and kafka-go sources (the old Go clients of
# compat_tests; brew has no such packages), gcc (kwire's C extensions). Tool by tool: what is
# there is left alone (a NodeSource nodejs brings its own npm: Debian's npm is not asked for),
# and each line says what was found or installed.
deps:
	@sh scripts/deps.sh

clean:
	rm -rf $(VENV) kwire-data .pytest_cache .hypothesis build dist kwire.egg-info \
	  compat-report.md compat-report.json differential-report.json tests/js/node_modules kwire/log/_walk.*.so \
	  kwire/codec/_downconvert.*.so
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
