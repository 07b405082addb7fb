"""SCRAM credentials kept in the metadata quorum (KIP-554), with no I/O.

:class:`ScramCredentialStore` is the image's view (Kafka's ScramImage): mechanism -> user ->
credential, built by replaying UserScramCredentialRecord / RemoveUserScramCredentialRecord.
:func:`alter` is Kafka's ScramControlManager.alterCredentials: it validates an
AlterUserScramCredentials request against the store and returns the per-user results and
the records to commit; :meth:`ScramCredentialStore.describe` is ScramImage.describe.

The client sends a salt and a salted password (PBKDF2 of the password, done by the client);
the controller keeps only StoredKey = H(HMAC(salted, "Client Key")) and
ServerKey = HMAC(salted, "Server Key"), RFC 5802's, so the password never reaches the log.

Kafka's rules: a user named twice in one request (even for two mechanisms, even once as a
deletion and once as an upsertion) is DUPLICATE_RESOURCE; an empty user name or an
iteration count outside 4096..16384 is UNACCEPTABLE_CREDENTIAL; a mechanism other than
SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2) is UNSUPPORTED_SASL_MECHANISM; deleting a credential
the quorum does not hold is RESOURCE_NOT_FOUND. One difference: an empty salted password is
UNACCEPTABLE_CREDENTIAL here (Kafka's HMAC refuses an empty key and answers
UNKNOWN_SERVER_ERROR).
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.value import Value

__all__ = ["ScramCredential", "MECHANISM_NAMES", "MECHANISM_TYPES", "SCRAM_MAX_ITERATIONS", "ScramCredentialStore",
           "credential_from_salted_password", "alter", "AlterResult"]

MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}     # Kafka's ScramMechanism.type()
MECHANISM_TYPES = {v: k for k, v in MECHANISM_NAMES.items()}
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
SCRAM_MIN_ITERATIONS = 4096      # ScramMechanism.minIterations (both mechanisms)
SCRAM_MAX_ITERATIONS = 16384     # ScramControlManager.MAX_ITERATIONS


class ScramCredential(Value):   # frozen (kwire.value: no generated code at import)
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:   # never log keys (Kafka's ScramCredentialValue hides them too)
        return f"ScramCredential(iterations={self.iterations})"


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """RFC 5802's StoredKey and ServerKey of a SaltedPassword."""
    h = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    return ScramCredential(bytes(salt), h(client_key).digest(), hmac.new(salted_password, b"Server Key", h).digest(),
                           iterations)


class ScramCredentialStore:
    """The quorum's SCRAM credentials: ``by_mechanism[mechanism name][user]``."""

    def __init__(self) -> None:
        self.by_mechanism: dict[str, dict] = {m: {} for m in MECHANISM_NAMES.values()}

    def __len__(self) -> int:
        return sum(len(u) for u in self.by_mechanism.values())

    def copy(self) -> "ScramCredentialStore":
        """The same credentials (a metadata delta writes to its own copy: images are immutable)."""
        out = ScramCredentialStore()
        out.by_mechanism = {m: dict(u) for m, u in self.by_mechanism.items()}
        return out

    def put(self, user: str, mechanism_type: int, credential) -> None:
        name = MECHANISM_NAMES.get(mechanism_type)
        if name is not None:
            self.by_mechanism[name][user] = credential

    def remove(self, user: str, mechanism_type: int) -> None:
        name = MECHANISM_NAMES.get(mechanism_type)
        if name is not None:
            self.by_mechanism[name].pop(user, None)

    def get(self, mechanism: str, user: str):
        return self.by_mechanism.get(mechanism, {}).get(user)

    def users(self) -> list[str]:
        return sorted({u for d in self.by_mechanism.values() for u in d})

    def items(self):
        """(user, mechanism type, credential) of every credential, in a stable order (snapshots)."""
        for mtype, mname in sorted(MECHANISM_NAMES.items()):
            for user, cred in sorted(self.by_mechanism[mname].items()):
                yield user, mtype, cred

    def describe(self, users: list[str] | None) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        """ScramImage.describe: (user, error code, message, [(mechanism type, iterations)]) per
        user asked for (every user with a credential when ``users`` is None or empty)."""
        names: dict[str, bool] = {}    # user -> named twice
        if not users:
            names = dict.fromkeys(self.users(), False)
        else:
            for u in users:
                names[u] = u in names
        out = []
        for user, twice in names.items():
            if twice:
                out.append((user, ErrorCode.DUPLICATE_RESOURCE,
                            f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
                            []))
                continue
            infos = [(mtype, self.by_mechanism[mname][user].iterations)
                     for mtype, mname in sorted(MECHANISM_NAMES.items()) if user in self.by_mechanism[mname]]
            if infos:
                out.append((user, ErrorCode.NONE, None, infos))
            else:
                out.append((user, ErrorCode.RESOURCE_NOT_FOUND,
                            f"Attempt to describe a user credential that does not exist: {user}", []))
        return out


@dataclass
class AlterResult:
    results: list[tuple[str, int, str | None]]   # (user, error code, message), one per user named
    records: list                                # (record message, record) to commit, all or nothing


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def alter(store: ScramCredentialStore, deletions, upsertions) -> AlterResult:
    """ScramControlManager.alterCredentials over ``store``: ``deletions`` have ``name`` and
    ``mechanism``; ``upsertions`` also ``iterations``, ``salt`` and ``salted_password``."""
    twice = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    errors: dict[str, tuple[int, str]] = {}
    to_delete: dict[str, object] = {}
    to_upsert: dict[str, object] = {}
    for d in deletions:
        if d.name in errors:
            continue
        if to_delete.pop(d.name, None) is not None:
            errors[d.name] = twice
            continue
        bad = _check_name_and_mechanism(d.name, d.mechanism)
        if bad is None and store.get(MECHANISM_NAMES[d.mechanism], d.name) is None:
            bad = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if bad is not None:
            errors[d.name] = bad
        else:
            to_delete[d.name] = d
    for u in upsertions:
        if u.name in errors:
            continue
        if to_delete.pop(u.name, None) is not None or to_upsert.pop(u.name, None) is not None:
            errors[u.name] = twice
            continue
        bad = _check_name_and_mechanism(u.name, u.mechanism)
        if bad is None:
            if u.iterations < SCRAM_MIN_ITERATIONS:
                bad = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif u.iterations > SCRAM_MAX_ITERATIONS:
                bad = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif not u.salted_password:
                bad = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "The salted password must not be empty")
        if bad is not None:
            errors[u.name] = bad
        else:
            to_upsert[u.name] = u
    results: list[tuple[str, int, str | None]] = []
    records: list = []
    for d in to_delete.values():
        results.append((d.name, ErrorCode.NONE, None))
        records.append((R.REMOVE_USER_SCRAM_CREDENTIAL, R.REMOVE_USER_SCRAM_CREDENTIAL.cls(
            name=d.name, mechanism=d.mechanism)))
    for u in to_upsert.values():
        cred = credential_from_salted_password(MECHANISM_NAMES[u.mechanism], u.salt or b"", u.salted_password,
                                               u.iterations)
        results.append((u.name, ErrorCode.NONE, None))
        records.append((R.USER_SCRAM_CREDENTIAL, R.USER_SCRAM_CREDENTIAL.cls(
            name=u.name, mechanism=u.mechanism, salt=cred.salt, stored_key=cred.stored_key,
            server_key=cred.server_key, iterations=cred.iterations)))
    results += [(user, code, msg) for user, (code, msg) in errors.items()]
    return AlterResult(results, records)
