"""SaslHandshake (key 17), versions 0-1."""
from kwire.codec.schema import F, Message

REQUEST = Message("SaslHandshakeRequest", api_key=17, kind="request", valid="0-1", flexible="none", fields=[
    F("mechanism", "string", "0+"),
])

RESPONSE = Message("SaslHandshakeResponse", api_key=17, kind="response", valid="0-1", flexible="none", fields=[
    F("error_code", "int16", "0+"),
    F("mechanisms", "[]string", "0+"),
])
