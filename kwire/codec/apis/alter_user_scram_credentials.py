"""AlterUserScramCredentials (key 51), version 0 (KIP-554; the only version Kafka has)."""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterUserScramCredentialsRequest", api_key=51, kind="request", valid="0", flexible="0+", fields=[
    F("deletions", "[]ScramCredentialDeletion", "0+", fields=[
        F("name", "string", "0+"),
        F("mechanism", "int8", "0+"),
    ]),
    F("upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
        F("name", "string", "0+"),
        F("mechanism", "int8", "0+"),
        F("iterations", "int32", "0+"),
        F("salt", "bytes", "0+"),
        F("salted_password", "bytes", "0+"),
    ]),
])

RESPONSE = Message("AlterUserScramCredentialsResponse", api_key=51, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AlterUserScramCredentialsResult", "0+", fields=[
        F("user", "string", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ]),
])
