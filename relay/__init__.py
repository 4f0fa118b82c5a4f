"""deniable-relay: an Oblivious HTTP relay that forwards encapsulated reports in shuffled batches
(docs/anonymity.md#running-a-relay). It reads nothing it forwards and needs only Python's standard
library, so that another organisation can run it on a host of its own."""

from deniable.relay.batches import Batcher, Forwarded, QueueFull

__all__ = ["Batcher", "Forwarded", "QueueFull"]
