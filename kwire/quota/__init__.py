"""Client quotas (KIP-13 / KIP-55 / KIP-124): byte-rate and request-time quotas per user and
client id, kept in the metadata quorum (ClientQuotaRecord) and enforced as Kafka's
ClientQuotaManager does. ``rate``: the windowed Rate (pure, clock passed in); ``store``: the
quotas as committed records left them, with Kafka's precedence; ``manager``: sensors and
throttle times per quota type, fed by the Trio edge (kwire.server) and the Fetch handler."""
