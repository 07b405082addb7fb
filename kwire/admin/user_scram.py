"""``kwire configs --entity-type users``: SCRAM credentials, as kafka-configs.sh manages them
(DescribeUserScramCredentials / AlterUserScramCredentials).

--alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' salts and hashes
the password here (PBKDF2 with a random salt, as Kafka's AdminClient does: the password never
leaves this process) and prints ``Completed updating config for user alice.``;
--delete-config SCRAM-SHA-256 removes that mechanism's credential. --describe prints, per user
with credentials, ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096`` (every such user without
--entity-name); a user without credentials prints nothing, as kafka-configs.sh.
Left out here: user quota configs (producer_byte_rate, ...).
"""
from __future__ import annotations

import os
import re

from kwire.cmdline import UsageError

MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
NAMES = {v: k for k, v in MECHANISMS.items()}
DEFAULT_ITERATIONS = 4096       # Kafka's ConfigCommand.DefaultScramIterations
MIN_ITERATIONS = 4096
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)
_EXCEPTIONS = {91: "ResourceNotFoundException", 92: "DuplicateResourceException", 93: "UnacceptableCredentialException",
               33: "UnsupportedSaslMechanismException", 31: "ClusterAuthorizationException"}


def _credential(mechanism: str, text: str) -> tuple[int, str]:
    """(iterations, password) of ``[iterations=N,]password=P`` (Kafka's pattern)."""
    m = _CREDENTIAL.fullmatch(text)
    if m is None:
        raise UsageError(f"kwire configs: Invalid credential property {mechanism}={text}")
    it = m.group(1)
    iterations = int(it) if it not in (None, "", "-1") else DEFAULT_ITERATIONS
    if iterations < MIN_ITERATIONS:
        raise UsageError(f"kwire configs: Iterations {iterations} is less than the minimum {MIN_ITERATIONS} "
                         f"required for {mechanism}")
    return iterations, m.group(2)


def alter(c, user: str, adds: dict[str, str], deletes: list[str]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)
    from kwire.security.sasl import salted_password  # noqa: PLC0415 - start-up time (kwire.admin)

    unknown = [k for k in adds if k not in MECHANISMS]
    if unknown:
        raise UsageError("kwire configs: Only SCRAM credential configs can be added here (quota keys go to "
                         f"kwire.admin.quotas). Unexpected config names: {','.join(unknown)}")
    unknown = [k for k in deletes if k not in MECHANISMS]
    if unknown:
        raise UsageError("kwire configs: Only SCRAM credential configs can be deleted for 'users'. Unexpected "
                         f"config names: {','.join(unknown)}")
    if not user:
        raise UsageError("kwire configs: The use of --entity-default is not allowed with User SCRAM Credentials")
    D = c.struct("AlterUserScramCredentials", "ScramCredentialDeletion")
    U = c.struct("AlterUserScramCredentials", "ScramCredentialUpsertion")
    upserts = []
    for mech, text in adds.items():
        iterations, password = _credential(mech, text)
        salt = os.urandom(24)
        upserts.append(U(name=user, mechanism=MECHANISMS[mech], iterations=iterations, salt=salt,
                         salted_password=salted_password(mech, password, salt, iterations)))
    body, _ = c.call("AlterUserScramCredentials", deletions=[D(name=user, mechanism=MECHANISMS[m]) for m in deletes],
                     upsertions=upserts)
    for r in body.results:
        if r.error_code:
            raise AdminError(f"{error_name(r.error_code)}: {r.error_message or r.user}", r.error_code)
    print(f"Completed updating config for user {user}.")


def describe(c, user: str | None) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    if user == "":
        return     # kafka-configs.sh describes SCRAM credentials of named users only (not --entity-default)
    N = c.struct("DescribeUserScramCredentials", "UserName")
    body, _ = c.call("DescribeUserScramCredentials", users=[N(name=user)] if user else None)
    if body.error_code:
        raise AdminError(f"{error_name(body.error_code)}: {body.error_message or 'DescribeUserScramCredentials'}",
                         body.error_code)
    for r in body.results:
        if r.error_code == 91:     # RESOURCE_NOT_FOUND: no credentials (Kafka's users() leaves them out)
            continue
        if r.error_code:
            name = _EXCEPTIONS.get(r.error_code, error_name(r.error_code))
            print(f"Error retrieving SCRAM credential configs for user-principal '{r.user}': ExecutionException: "
                  f"org.apache.kafka.common.errors.{name}: {r.error_message}")
            continue
        text = ", ".join(f"{NAMES.get(i.mechanism, i.mechanism)}=iterations={i.iterations}"
                         for i in r.credential_infos)
        print(f"SCRAM credential configs for user-principal '{r.user}' are {text}")
