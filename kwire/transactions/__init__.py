"""Transaction coordinator: a pure state machine (clock passed in, no I/O) and its durable
form in ``__transaction_state``; see coordinator.py."""
