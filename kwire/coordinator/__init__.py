"""What the coordinators share (Kafka's coordinator-common module): the ``CoordinatorRuntime``
(runtime.py: the loads, writes and timers of a coordinator topic's partitions, hosting one
state machine), ``Pending`` (an answer not ready yet, ``await p.wait()``), ``Timers`` (named
deadlines), ``BrokerChannel`` (requests to another broker) and the record helpers every
coordinator topic uses (the Java String hash that places a key on a partition). The group,
transaction and share coordinators (kwire.groups, kwire.transactions, kwire.share) sit above
this package and never import each other for these; it imports nothing from them."""
