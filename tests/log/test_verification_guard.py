"""KIP-890 part 1's verification guard in the producer state (Kafka's VerificationStateEntry):
pure, no log, no clock but the one passed in."""
from __future__ import annotations

from kwire.log.producer_state import ProducerStateManager


def test_guard_lifecycle():
    ps = ProducerStateManager(None, expiration_ms=1000)
    g = ps.maybe_start_verification(7, 0, now_ms=100)
    assert g is not None and ps.verification_guard(7) is g
    assert ps.maybe_start_verification(7, 1, now_ms=150) is g       # a concurrent request shares it
    assert g.epoch == 1
    ps.update_batch(7, 1, 0, 10, 10, 200, transactional=True)       # the transaction starts: cleared
    assert ps.verification_guard(7) is None and ps.has_ongoing_transaction(7)
    assert ps.maybe_start_verification(7, 1, now_ms=210) is None    # open here: nothing to verify
    ps.update_marker(7, 1, 11, 220, commit=True, coordinator_epoch=0)
    g2 = ps.maybe_start_verification(7, 1, now_ms=230)
    assert g2 is not None and g2 is not g                           # a new transaction, a new guard
    ps.update_marker(7, 1, 12, 240, commit=False, coordinator_epoch=0)   # a marker voids it
    assert ps.verification_guard(7) is None


def test_non_transactional_batches_keep_it_and_expiry_drops_it():
    ps = ProducerStateManager(None, expiration_ms=1000)
    g = ps.maybe_start_verification(8, 0, now_ms=0)
    ps.update_batch(9, 0, 0, 0, 0, 10, transactional=True)          # another producer
    ps.update_batch(8, 0, 0, 1, 1, 10, transactional=False)
    assert ps.verification_guard(8) is g
    ps.remove_expired(999)
    assert ps.verification_guard(8) is g
    ps.remove_expired(1000)
    assert ps.verification_guard(8) is None
    ps.maybe_start_verification(8, 0, now_ms=1000)
    ps.truncate()
    assert ps.verification_guard(8) is None
