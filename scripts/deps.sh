#!/bin/sh
# make deps: what kwire's tests need beside Python, installed tool by tool. A tool already on
# the machine is left alone; each missing one is installed on its own (one apt-get run per
# package, so a conflict with one, e.g. Debian's npm against NodeSource's nodejs, does not stop
# the others); every line says what was found, installed or could not be installed.
set -u
GOCODE=${KWIRE_GOCODE:-/usr/share/gocode}
failed=""
installed=""

have() {
  case "$1" in
    javac) command -v javac >/dev/null 2>&1 && \
             [ "$(javac -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p')" -ge 17 ] 2>/dev/null ;;
    sarama) [ -d "$GOCODE/src/github.com/Shopify/sarama" ] ;;
    kafka-go) [ -d "$GOCODE/src/github.com/segmentio/kafka-go" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

if command -v apt-get >/dev/null 2>&1; then
  SUDO=$( [ "$(id -u)" = 0 ] || echo sudo )
  updated=""
  for pair in kcat:kcat node:nodejs npm:npm javac:openjdk-17-jdk-headless mvn:maven go:golang-go gcc:gcc \
              sarama:golang-github-shopify-sarama-dev kafka-go:golang-github-segmentio-kafka-go-dev; do
    tool=${pair%%:*}; pkg=${pair#*:}
    if have "$tool"; then
      echo "make deps: $tool: found"
      continue
    fi
    [ -n "$updated" ] || { $SUDO apt-get update -qq >/dev/null 2>&1; updated=1; }
    if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/tmp/kwire-deps-$pkg.log 2>&1 \
        && have "$tool"; then
      echo "make deps: $tool: installed ($pkg)"
      installed="$installed $pkg"
    else
      echo "make deps: $tool: apt-get install $pkg failed (see /tmp/kwire-deps-$pkg.log)"
      failed="$failed $tool"
    fi
  done
elif command -v brew >/dev/null 2>&1; then
  for pair in kcat:kcat node:node npm:node javac:openjdk@17 mvn:maven go:go gcc:gcc; do
    tool=${pair%%:*}; pkg=${pair#*:}
    if have "$tool"; then echo "make deps: $tool: found"; continue; fi
    if brew install "$pkg" >/tmp/kwire-deps-$pkg.log 2>&1 && have "$tool"; then
      echo "make deps: $tool: installed ($pkg)"
    else
      echo "make deps: $tool: brew install $pkg failed (see /tmp/kwire-deps-$pkg.log)"; failed="$failed $tool"
    fi
  done
  for tool in sarama kafka-go; do
    have "$tool" && echo "make deps: $tool: found" && continue
    echo "make deps: $tool: Homebrew has no Go sources of the old client; put them in $GOCODE/src (KWIRE_GOCODE)"
    failed="$failed $tool"
  done
else
  echo "make deps: no apt-get or brew here: install kcat, node/npm, a JDK 17 (javac), Maven, Go, gcc, and the"
  echo "  Go sources of Sarama 1.22 and kafka-go 0.2 in $GOCODE/src (Debian's golang-github-shopify-sarama-dev,"
  echo "  golang-github-segmentio-kafka-go-dev)"
  exit 1
fi
if [ -n "$failed" ]; then
  echo "make deps: still missing:$failed (the tests that need them fail, naming what is missing)"
  exit 1
fi
echo "make deps: everything make test needs is here"
