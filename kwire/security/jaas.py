"""``sasl.jaas.config`` values, read as Kafka's JaasConfig reads them (no I/O).

A value is one or more ``<LoginModuleClass> <flag> (<key>=<value>)*;`` entries. Kafka splits
it with a java.io.StreamTokenizer: bytes up to the space are white space; ``;`` and ``=`` are
tokens of their own; ``"`` and ``'`` quote a value (backslash escapes as in Java literals, a
line end closes it); ``/`` starts a comment (``//`` and ``/* */`` too); everything else is part
of a word. The flag is one of required, requisite, sufficient, optional (any case); each
option needs ``=`` and a value; the entry ends with ``;``. A broker's context takes exactly one
login module (Kafka's JaasContext), and its class must be one kwire serves:
PlainLoginModule or ScramLoginModule.

Every mistake is a :class:`JaasError` whose message is Kafka's (IllegalArgumentException text)
plus, where it helps, what to write; the caller adds the key it came from.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

__all__ = ["JaasError", "LoginModule", "parse_jaas", "login_module", "PLAIN_MODULE", "SCRAM_MODULE",
           "MODULE_OF_MECHANISM"]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MODULE_OF_MECHANISM = {"PLAIN": PLAIN_MODULE, "SCRAM-SHA-256": SCRAM_MODULE, "SCRAM-SHA-512": SCRAM_MODULE}
# Kafka's other login modules: known, so a near miss of one is not taken for a kwire module
OTHER_MODULES = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
                 "com.sun.security.auth.module.Krb5LoginModule")
FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
EXAMPLE = f'{PLAIN_MODULE} required user_alice="alice-secret";'


class JaasError(ValueError):
    """A JAAS config Kafka would refuse (one line)."""


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str                                    # REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
    options: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------- tokens
EOF, WORD = "EOF", "WORD"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _is_word(c: str) -> bool:
    o = ord(c)
    return (32 < o <= 128 or o >= 160) and c not in ';="\'/'


def _tokens(text: str):
    """(type, value) as Kafka's StreamTokenizer set-up yields them: (WORD, s), (quote char, s),
    (an ordinary char, None), then (EOF, None)."""
    i, n = 0, len(text)
    while True:
        while i < n and ord(text[i]) <= 32:
            i += 1
        if i >= n:
            yield EOF, None
            return
        c = text[i]
        if c == "/":
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = n if end < 0 else end + 2
            else:                    # '//' or a lone '/' (the comment character): to the line's end
                while i < n and text[i] not in "\r\n":
                    i += 1
            continue
        if c in "\"'":
            i += 1
            out = []
            while i < n and text[i] != c and text[i] not in "\r\n":
                ch = text[i]
                i += 1
                if ch == "\\" and i < n:
                    ch = text[i]
                    i += 1
                    if "0" <= ch <= "7":          # octal, up to three digits (the first at most 3)
                        digits = ch
                        while i < n and len(digits) < (3 if ch <= "3" else 2) and "0" <= text[i] <= "7":
                            digits += text[i]
                            i += 1
                        ch = chr(int(digits, 8))
                    else:
                        ch = _ESCAPES.get(ch, ch)
                out.append(ch)
            if i < n and text[i] == c:
                i += 1
            yield c, "".join(out)
            continue
        if _is_word(c):
            start = i
            while i < n and _is_word(text[i]):
                i += 1
            yield WORD, text[start:i]
            continue
        i += 1
        yield c, None                # ';', '=' and other ordinary characters


# ---------------------------------------------------------------------------- entries
def parse_jaas(text: str) -> list[LoginModule]:
    """Every login module entry of ``text``, as Kafka's JaasConfig; JaasError as Kafka refuses."""
    toks = _tokens(text)
    kind, value = next(toks)
    out: list[LoginModule] = []
    while kind != EOF:
        module = value
        kind, value = next(toks)
        if kind == EOF:
            raise JaasError(f"Login module control flag not specified in JAAS config (write {module} required "
                            f"KEY=\"VALUE\" ...;)")
        if value is None:
            raise JaasError("Login module control flag is not available in the JAAS config (write CLASS required "
                            "KEY=\"VALUE\" ...;)")
        flag = value.upper()
        if flag not in FLAGS:
            raise JaasError(f"Invalid login module control flag '{value}' in JAAS config (after the class name "
                            f"write required, requisite, sufficient or optional)")
        options: dict[str, str] = {}
        kind, value = next(toks)
        while kind != EOF and kind != ";":
            key = value
            kind, value = next(toks)
            if kind != "=":
                raise JaasError(f"Value not specified for key '{key}' in JAAS config (write {key}=\"VALUE\")")
            kind, value = next(toks)
            if kind == EOF or value is None:
                raise JaasError(f"Value not specified for key '{key}' in JAAS config (write {key}=\"VALUE\")")
            options[key] = value
            kind, value = next(toks)
        if kind != ";":
            raise JaasError("JAAS config entry not terminated by semi-colon (end it with ;)")
        if not module:
            raise JaasError("Login module not specified in JAAS config (the entry starts with ;)")
        out.append(LoginModule(module, flag, options))
        kind, value = next(toks)
    if not out:
        raise JaasError(f"Login module not specified in JAAS config (e.g. {EXAMPLE})")
    return out


def login_module(text: str) -> LoginModule:
    """The one login module of a broker's JAAS config (Kafka's JaasContext needs exactly one),
    of a class kwire serves; JaasError otherwise."""
    modules = parse_jaas(text)
    if len(modules) != 1:
        raise JaasError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    m = modules[0]
    if m.class_name not in (PLAIN_MODULE, SCRAM_MODULE):
        known = (PLAIN_MODULE, SCRAM_MODULE, *OTHER_MODULES)
        near = difflib.get_close_matches(m.class_name, known, n=1, cutoff=0.8)
        if near and near[0] in (PLAIN_MODULE, SCRAM_MODULE):     # Kafka's LoginException, and the fix
            raise JaasError(f"No LoginModule found for {m.class_name}; did you mean {near[0]}?")
        if m.class_name in OTHER_MODULES:
            raise JaasError(f"login module {m.class_name} is not one kwire serves (write {PLAIN_MODULE} or "
                            f"{SCRAM_MODULE})")
        raise JaasError(f"No LoginModule found for {m.class_name} (kwire's are {PLAIN_MODULE} and {SCRAM_MODULE})")
    return m
