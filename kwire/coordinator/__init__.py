"""What the coordinators share (Kafka's coordinator-common module, the pieces of its
CoordinatorRuntime): ``Pending`` (an answer not ready yet), ``Timers`` (named deadlines),
``BrokerChannel`` (requests to another broker) and the record helpers every coordinator topic
uses (the Java String hash that places a key on a partition). The group, transaction and share
coordinators (kwire.groups, kwire.transactions, kwire.share) sit above this package and never
import each other for these; it imports nothing from them."""
