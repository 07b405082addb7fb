"""A blocking admin client on kwire's own codec (kwire.codec, kwire.connection), for the
``kwire topics|groups|configs|cluster|acls`` commands, against any Kafka cluster.

What Kafka's AdminClient does, in the small: bootstrap from any of the given addresses,
negotiate each API's version with ApiVersions (the highest both sides speak, within what the
command's code reads), reach the broker a request belongs to (a group's coordinator, a
partition's leader, the broker a broker config lives on), and turn error codes into
:class:`AdminError` with Kafka's error names. One connection per broker, one request at a
time: an operator's command, not a hot path.

The codecs and kwire.connection are imported on the first connection (tagged ``first
connect``), so a command refused for its arguments answers without them; ssl and the SASL
client load only for the connections that use them.
"""
from __future__ import annotations

import socket
import time

from kwire.errors import ErrorCode

__all__ = ["AdminClient", "AdminError", "SecurityFailure", "Unreachable", "error_name"]

# The highest version of each API whose fields the admin commands read, per API name; a
# broker that speaks less gets its highest (each command reads fields with defaults).
PREFERRED = {
    "ApiVersions": 3, "Metadata": 12, "FindCoordinator": 3, "ListGroups": 5, "DescribeGroups": 5,
    "OffsetFetch": 7, "ListOffsets": 7, "OffsetCommit": 8, "DeleteGroups": 2, "CreateTopics": 7,
    "DeleteTopics": 5, "CreatePartitions": 3, "DescribeConfigs": 4, "IncrementalAlterConfigs": 1,
    "DescribeCluster": 1, "DescribeQuorum": 1, "DescribeAcls": 3,
    "DescribeClientQuotas": 1, "AlterClientQuotas": 1,
}


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


class AdminError(Exception):
    """A request answered with an error (message names the Kafka error) or refused."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class Unreachable(AdminError):
    """No broker answered at the given addresses."""


def _split(addr: str) -> tuple[str, int]:
    addr = addr.strip()
    if addr.startswith("["):
        host, _, port = addr[1:].partition("]:")
    else:
        host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise AdminError(f"--bootstrap-server {addr!r} is not HOST:PORT (e.g. 127.0.0.1:9092)")
    return host, int(port)


class SecurityFailure(AdminError):
    """The TLS handshake or the SASL login failed: the client's settings, not the network."""


class _Broker:
    """One connection: a socket (TLS and a SASL login first, as ``security`` says), the sans-I/O
    client connection, the API versions it speaks."""

    def __init__(self, host: str, port: int, timeout: float, client_id: str, security=None):
        from kwire.connection import KafkaClientConnection  # noqa: PLC0415 - start-up time: first connect (module doc)

        self.address = f"{host}:{port}"
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = KafkaClientConnection(client_id)
        self.versions: dict[int, tuple[int, int]] = {}
        if security is not None and security.tls:
            self._tls(host, security)
        if security is not None and security.sasl:
            self._sasl(security)

    def _tls(self, host: str, security) -> None:
        import ssl  # noqa: PLC0415 - start-up time: SSL connections only

        try:
            self.sock = security.ssl_context.wrap_socket(self.sock, server_hostname=host)
        except ssl.SSLCertVerificationError as exc:
            self.sock.close()
            raise SecurityFailure(f"TLS handshake with {self.address} failed: certificate verify failed: "
                                  f"{exc.verify_message or exc.reason} "
                                  f"(ssl.truststore.* and ssl.endpoint.identification.algorithm)") from None
        except (ssl.SSLError, ConnectionError) as exc:
            self.sock.close()
            reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
            raise SecurityFailure(f"TLS handshake with {self.address} failed: {reason} (does its listener "
                                  f"speak TLS? security.protocol SSL and SASL_SSL need one that does)") from None

    def _sasl(self, security) -> None:
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time: first connect (module doc)
        from kwire.security.sasl_client import SaslClientFailed, client_for  # noqa: PLC0415 - start-up time: SASL only

        hs = api("SaslHandshake")
        try:
            r = self.call(hs, 1, hs.request.cls(mechanism=security.mechanism))
        except ConnectionError:
            self.sock.close()
            raise SecurityFailure(f"the broker at {self.address} closed the connection on SaslHandshake: does "
                                  f"its listener want SASL (security.protocol "
                                  f"{'SSL' if security.tls else 'PLAINTEXT'} then)?") from None
        if r.error_code:
            self.sock.close()
            raise SecurityFailure(f"SASL mechanism {security.mechanism} is not enabled at {self.address} "
                                  f"(enabled: {','.join(r.mechanisms or []) or 'none'})", r.error_code)
        client = client_for(security.mechanism, security.username, security.password)
        token = client.first_message()
        auth = api("SaslAuthenticate")
        while True:
            r = self.call(auth, 2, auth.request.cls(auth_bytes=token))
            if r.error_code:
                self.sock.close()
                raise SecurityFailure(f"SASL {security.mechanism} login as {security.username!r} at {self.address} "
                                      f"failed: {r.error_message or error_name(r.error_code)}", r.error_code)
            try:
                token = client.evaluate(bytes(r.auth_bytes or b""))
            except SaslClientFailed as exc:
                self.sock.close()
                raise SecurityFailure(f"SASL at {self.address}: {exc}") from None
            if client.complete:
                return
            if token is None:
                self.sock.close()
                raise SecurityFailure(f"SASL {security.mechanism} at {self.address}: the exchange ended early")

    def call(self, api, version: int, body):
        from kwire.connection import NEED_DATA  # noqa: PLC0415 - start-up time: first connect (module doc)

        corr, data = self.conn.send_request(api, version, body)
        self.sock.sendall(data)
        while (resp := self.conn.next_response()) is NEED_DATA:
            chunk = self.sock.recv(256 * 1024)
            if not chunk:
                raise ConnectionError(f"the broker at {self.address} closed the connection")
            self.conn.receive_data(chunk)
        if resp.correlation_id != corr:
            raise ConnectionError(f"the broker at {self.address} answered out of order")
        return resp.body

    def close(self) -> None:
        self.sock.close()


class AdminClient:
    def __init__(self, bootstrap: str, *, timeout: float = 30.0, client_id: str = "kwire-admin",
                 security=None):
        self.bootstrap = [_split(a) for a in bootstrap.split(",") if a.strip()]
        if not self.bootstrap:
            raise AdminError("--bootstrap-server is empty (write HOST:PORT, e.g. 127.0.0.1:9092)")
        self.timeout = timeout
        self.client_id = client_id
        self.security = security          # kwire.admin.security.ClientSecurity, or None: PLAINTEXT
        self._by_node: dict[int, _Broker] = {}
        self._any: _Broker | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None

    # ------------------------------------------------------------------ connections
    def __enter__(self) -> "AdminClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for b in {id(b): b for b in [*self._by_node.values(), self._any] if b is not None}.values():
            b.close()
        self._by_node.clear()
        self._any = None

    def _open(self, host: str, port: int) -> _Broker:
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time: first connect (module doc)

        b = _Broker(host, port, self.timeout, self.client_id, self.security)
        av = api("ApiVersions")
        body = b.call(av, 3, av.request.cls(client_software_name="kwire-admin", client_software_version="1"))
        if body.error_code == ErrorCode.UNSUPPORTED_VERSION:   # an old broker: it answered with v0
            b.close()
            b = _Broker(host, port, self.timeout, self.client_id, self.security)
            body = b.call(av, 0, av.request.cls())
        if body.error_code:
            b.close()
            raise AdminError(f"ApiVersions at {host}:{port}: {error_name(body.error_code)}", body.error_code)
        b.versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        return b

    def any_broker(self) -> _Broker:
        if self._any is not None:
            return self._any
        errors = []
        for host, port in self.bootstrap:
            try:
                self._any = self._open(host, port)
                return self._any
            except (OSError, ConnectionError) as exc:
                errors.append(f"{host}:{port} ({getattr(exc, 'strerror', None) or exc})")
        hint = ""
        if (self.security is None or self.security.protocol == "PLAINTEXT") and \
                any("closed the connection" in e for e in errors):
            hint = ("; a listener that wants TLS or SASL closes a PLAINTEXT client's connection: give "
                    "--command-config with security.protocol=SSL, SASL_PLAINTEXT or SASL_SSL")
        raise Unreachable("no broker answered at " + ", ".join(errors) + hint)

    def broker(self, node_id: int) -> _Broker:
        b = self._by_node.get(node_id)
        if b is not None:
            return b
        if not self.brokers:
            self.metadata([])
        if node_id not in self.brokers:
            raise AdminError(f"broker {node_id} is not in the cluster's metadata")
        host, port = self.brokers[node_id]
        any_b = self.any_broker()
        if any_b.address == f"{host}:{port}":
            b = any_b
        else:
            try:
                b = self._open(host, port)
            except (OSError, ConnectionError) as exc:
                raise Unreachable(f"broker {node_id} at {host}:{port} does not answer "
                                  f"({getattr(exc, 'strerror', None) or exc})") from None
        self._by_node[node_id] = b
        return b

    # ------------------------------------------------------------------ requests
    def version(self, b: _Broker, name: str) -> int:
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time: first connect (module doc)

        a = api(name)
        theirs = b.versions.get(a.key)
        if theirs is None:
            raise AdminError(f"the broker at {b.address} does not support {name}")
        v = min(PREFERRED.get(name, a.max_version), a.max_version, theirs[1])
        if v < max(a.min_version, theirs[0]):
            raise AdminError(f"the broker at {b.address} speaks {name} v{theirs[0]}-{theirs[1]}, kwire's admin "
                             f"client v{a.min_version}-{a.max_version}")
        return v

    def call(self, name: str, *, node: int | None = None, broker: _Broker | None = None, **fields):
        """Send one request (fields as the codec names them); (response body, version)."""
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time: first connect (module doc)

        b = broker or (self.broker(node) if node is not None else self.any_broker())
        v = self.version(b, name)
        a = api(name)
        try:
            return b.call(a, v, a.request.cls(**fields)), v
        except (OSError, ConnectionError) as exc:
            hint = ""
            if (self.security is None or self.security.protocol == "PLAINTEXT") and "closed the connection" in str(exc):
                hint = (" (a SASL listener answers ApiVersions and closes the connection of a client that has not "
                        "logged in: give --command-config with security.protocol=SASL_PLAINTEXT or SASL_SSL)")
            raise Unreachable(f"{name} to {b.address} failed: {getattr(exc, 'strerror', None) or exc}{hint}") from None

    def struct(self, name: str, struct: str):
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time: first connect (module doc)

        return api(name).request.struct(struct)

    # ------------------------------------------------------------------ cluster
    def metadata(self, topics: list[str] | None = None):
        """Metadata for ``topics`` (None: every topic; []: brokers only); refreshes brokers."""
        T = self.struct("Metadata", "MetadataRequestTopic")
        body, _ = self.call("Metadata", topics=None if topics is None else [T(name=t) for t in topics],
                            allow_auto_topic_creation=False)
        self.brokers = {br.node_id: (br.host, br.port) for br in body.brokers}
        self.controller_id = body.controller_id
        self.cluster_id = body.cluster_id
        return body

    def coordinator(self, group: str) -> int:
        """The node id of ``group``'s coordinator (retrying while it is being loaded)."""
        deadline = time.monotonic() + self.timeout
        while True:
            body, _ = self.call("FindCoordinator", key=group, key_type=0)
            if body.error_code == 0:
                self.brokers.setdefault(body.node_id, (body.host, body.port))
                return body.node_id
            if body.error_code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) \
                    or time.monotonic() > deadline:
                raise AdminError(f"FindCoordinator for group {group}: {error_name(body.error_code)}",
                                 body.error_code)
            time.sleep(0.1)

    def list_offsets(self, partitions: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """{(topic, partition): timestamp spec (-1 latest, -2 earliest, or ms)} -> offsets,
        each asked of the partition's leader."""
        md = self.metadata(sorted({t for t, _ in partitions}))
        leaders = {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in partitions:
            if tp not in leaders:
                raise AdminError(f"partition {tp[0]}-{tp[1]} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if leaders[tp] < 0:
                raise AdminError(f"partition {tp[0]}-{tp[1]} has no leader", ErrorCode.LEADER_NOT_AVAILABLE)
            by_leader.setdefault(leaders[tp], []).append(tp)
        T, P = self.struct("ListOffsets", "ListOffsetsTopic"), self.struct("ListOffsets", "ListOffsetsPartition")
        out: dict[tuple[str, int], int] = {}
        for leader, tps in by_leader.items():
            topics: dict[str, list] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(P(partition_index=p, timestamp=partitions[(t, p)]))
            body, _ = self.call("ListOffsets", node=leader, replica_id=-1, isolation_level=0,
                                topics=[T(name=t, partitions=ps) for t, ps in topics.items()])
            for t in body.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise AdminError(f"ListOffsets {t.name}-{p.partition_index}: {error_name(p.error_code)}",
                                         p.error_code)
                    out[(t.name, p.partition_index)] = p.offset
        return out
