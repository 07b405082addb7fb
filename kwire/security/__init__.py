"""Who may do what: authorized operations (and, as security lands, TLS, SASL and ACLs)."""
