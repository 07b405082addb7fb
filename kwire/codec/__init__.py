"""The Kafka wire codec: no I/O and no ``await`` anywhere; bytes in, values out."""
