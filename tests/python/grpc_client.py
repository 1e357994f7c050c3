"""Scenarios run with Apache RocketMQ's official 5.x Python client (PyPI
`rocketmq-python-client`) against a Vostok broker's gRPC endpoint.

    python grpc_client.py SCENARIO ENDPOINT TOPIC [ARG...]

Each scenario prints progress lines and ends with one line `RESULT <json>` that the
Rust test driving it (tests/tests/grpc_python.rs, tests/tests/tiered_storage_clients.rs)
checks. Every wait is bounded; a
failure raises, so the process exits non-zero with a traceback.
"""

import json
import logging
import sys
import threading
import time
import uuid

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials,
                      FilterExpression, Message, MessageListener, Producer,
                      PushConsumer, SimpleConsumer, TransactionChecker,
                      TransactionResolution)

# The client logs to a file of its own by default; keep the test output readable.
logging.getLogger().setLevel(logging.WARNING)

WAIT = 60  # seconds: the bound on every wait of a scenario


def config(endpoint):
    return ClientConfiguration(endpoint, Credentials(), request_timeout=5)


def message(topic, body, tag=None, keys=None, group=None, delay_s=None, props=None):
    m = Message()
    m.topic = topic
    m.body = body.encode()
    if tag:
        m.tag = tag
    if keys:
        m.keys = keys
    if group:
        m.message_group = group
    if delay_s:
        m.delivery_timestamp = int(time.time()) + delay_s
    for k, v in (props or {}).items():
        m.add_property(k, v)
    return m


def view(m):
    return {
        "body": m.body.decode(),
        "body_hex": m.body.hex(),
        "tag": m.tag,
        "keys": list(m.keys or []),
        "properties": dict(m.properties or {}),
        "message_id": m.message_id,
        "group": m.message_group,
        "attempt": m.delivery_attempt,
        "delivery_timestamp": m.delivery_timestamp,
        "corrupted": m.corrupted,
        "handle": m.receipt_handle,
    }


def receive_until(consumer, want, invisible=15, ack=True):
    """Receives until `want` messages came (or the bound); acks them when asked."""
    got = []
    deadline = time.time() + WAIT
    while len(got) < want and time.time() < deadline:
        for m in consumer.receive(32, invisible):
            got.append(m)
            if ack:
                consumer.ack(m)
    return got


def result(**fields):
    print("RESULT " + json.dumps(fields), flush=True)


def start_simple(endpoint, group, topic, await_s=5):
    c = SimpleConsumer(config(endpoint), group, {topic: FilterExpression("*")}, await_duration=await_s)
    c.startup()
    return c


def scenario_send_receive(endpoint, topic, count="20"):
    """Normal messages with tags, keys and properties; received and acked once."""
    count = int(count)
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    sent = []
    for i in range(count):
        r = producer.send(message(topic, f"normal-{i}", tag="TagA" if i % 2 == 0 else "TagB",
                                  keys=f"key-{i}", props={"index": str(i)}))
        sent.append(r.message_id)
    consumer = start_simple(endpoint, "GID_" + topic, topic)
    got = receive_until(consumer, count)
    again = consumer.receive(32, 15)
    consumer.shutdown()
    producer.shutdown()
    result(sent=sent, received=[view(m) for m in got], again=len(again))


def scenario_fifo(endpoint, topic, groups="3", per_group="10"):
    """Messages of several message groups: each group keeps one queue, in order."""
    groups, per_group = int(groups), int(per_group)
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    for i in range(per_group):
        for g in range(groups):
            producer.send(message(topic, f"g{g}-{i}", group=f"group-{g}"))
    consumer = start_simple(endpoint, "GID_" + topic, topic)
    got = receive_until(consumer, groups * per_group)
    consumer.shutdown()
    producer.shutdown()
    result(received=[{"body": m.body.decode(), "group": m.message_group,
                      "queue": m.message_queue.queue_id if hasattr(m, "message_queue") and m.message_queue else None,
                      "handle": m.receipt_handle} for m in got])


def scenario_delay(endpoint, topic, delay_s="3"):
    """A delay message is not delivered before its time; a recalled one never (it was
    due before the one that does come)."""
    delay_s = int(delay_s)
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    consumer = start_simple(endpoint, "GID_" + topic, topic)
    recalled = producer.send(message(topic, "recalled", delay_s=delay_s))
    recall_id = producer.recall_message(topic, recalled.recall_handle)
    m = message(topic, "delayed", delay_s=delay_s + 2)
    due_at = m.delivery_timestamp
    delayed = producer.send(m)
    got = receive_until(consumer, 1)
    received_at = time.time()
    rest = consumer.receive(32, 15)
    consumer.shutdown()
    producer.shutdown()
    result(recall_handle=recalled.recall_handle, recalled_id=recall_id,
           recalled_expected=recalled.message_id, delayed_id=delayed.message_id,
           received=[view(m) for m in got + rest], received_at=received_at, due_at=due_at)


class Checker(TransactionChecker):
    def __init__(self):
        self.checked = []
        self.event = threading.Event()

    def check(self, message):
        # The answer the producer would give for each body: a check-back that comes
        # before the producer's own commit or rollback (a slow machine) agrees with it.
        self.checked.append(message.message_id)
        if message.body.decode() == "checked-back":
            self.event.set()
        if message.body.decode() == "rolled-back":
            return TransactionResolution.ROLLBACK
        return TransactionResolution.COMMIT


def scenario_transaction(endpoint, topic):
    """Commit, rollback, and an open transaction the broker checks back (committed)."""
    checker = Checker()
    producer = Producer(config(endpoint), (topic,), checker)
    producer.startup()
    consumer = start_simple(endpoint, "GID_" + topic, topic)

    def half(body):
        t = producer.begin_transaction()
        r = producer.send(message(topic, body), t)
        return t, r

    t1, r1 = half("committed")
    t1.commit()
    t2, r2 = half("rolled-back")
    t2.rollback()
    _, r3 = half("checked-back")  # left open: the broker asks the checker
    checked = checker.event.wait(WAIT)
    got = receive_until(consumer, 2)
    rest = consumer.receive(32, 15)
    consumer.shutdown()
    producer.shutdown()
    result(ids=[r1.message_id, r2.message_id, r3.message_id],
           transaction_ids=[r1.transaction_id, r2.transaction_id, r3.transaction_id],
           checked=checker.checked, checker_called=checked,
           received=[view(m) for m in got + rest])


def scenario_invisible(endpoint, topic):
    """Receive three; ack one, let one expire (it comes back with attempt 2), and push
    one's invisible time out before acking it with its new handle."""
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    for body in ("acked", "expires", "extended"):
        producer.send(message(topic, body))
    consumer = start_simple(endpoint, "GID_" + topic, topic)
    first = {m.body.decode(): m for m in receive_until(consumer, 3, invisible=10, ack=False)}
    consumer.ack(first["acked"])
    old_handle = first["extended"].receipt_handle
    consumer.change_invisible_duration(first["extended"], 30)
    new_handle = first["extended"].receipt_handle
    # The expired one comes back after its 10 s; the extended one must not.
    back = receive_until(consumer, 1, invisible=10, ack=False)
    consumer.ack(first["extended"])  # with its new handle
    for m in back:
        consumer.ack(m)
    after = consumer.receive(32, 10)
    consumer.shutdown()
    producer.shutdown()
    result(first=sorted(first), back=[view(m) for m in back], after=len(after),
           handle_changed=old_handle != new_handle)


class Listener(MessageListener):
    def __init__(self, want, fail_first):
        self.lock = threading.Lock()
        self.seen = []
        self.want = want
        self.fail_first = fail_first
        self.failed = set()
        self.done = threading.Event()

    def consume(self, message):
        body = message.body.decode()
        with self.lock:
            self.seen.append({"body": body, "attempt": message.delivery_attempt})
            if body in self.fail_first and body not in self.failed:
                self.failed.add(body)
                return ConsumeResult.FAILURE
            bodies = {s["body"] for s in self.seen}
            if len(bodies) >= self.want and self.failed == set(self.fail_first):
                done = [s for s in self.seen if s["body"] in self.fail_first and s["attempt"] >= 2]
                if len(done) == len(self.fail_first):
                    self.done.set()
        return ConsumeResult.SUCCESS


def scenario_push(endpoint, topic, count="10"):
    """A PushConsumer consumes; a message failed once is delivered again."""
    count = int(count)
    listener = Listener(count, ["push-0"])
    consumer = PushConsumer(config(endpoint), "GID_" + topic, listener, {topic: FilterExpression("*")})
    consumer.startup()
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    for i in range(count):
        producer.send(message(topic, f"push-{i}"))
    finished = listener.done.wait(WAIT)
    consumer.shutdown()
    producer.shutdown()
    result(finished=finished, seen=listener.seen)


def scenario_produce(endpoint, topic, count="10", prefix="grpc"):
    """Sends `count` messages (for a remoting consumer to read)."""
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    ids = [producer.send(message(topic, f"{prefix}-{i}", tag="TagA")).message_id for i in range(int(count))]
    producer.shutdown()
    result(ids=ids)


def scenario_consume(endpoint, topic, group, count="10"):
    """Receives and acks `count` messages (a remoting producer sent them)."""
    consumer = start_simple(endpoint, group, topic)
    got = receive_until(consumer, int(count))
    consumer.shutdown()
    result(received=[view(m) for m in got])


def scenario_hold(endpoint, topic, group):
    """A consumer and a producer that stay up until stdin closes, for the broker's
    connection listings to show them."""
    consumer = start_simple(endpoint, group, topic)
    producer = Producer(config(endpoint), (topic,))
    producer.startup()
    consumer.receive(1, 15)
    print("READY", flush=True)
    sys.stdin.read()
    consumer.shutdown()
    producer.shutdown()
    result(held=True)


def scenario_tls(endpoint, topic):
    """The client with TLS on (as the Java and Go clients default to) on the same port:
    the broker's self-signed certificate is fetched and trusted through gRPC's
    GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, since the Python client verifies against the
    default roots."""
    import os
    import ssl
    import tempfile
    host, port = endpoint.rsplit(":", 1)
    pem = ssl.get_server_certificate((host, int(port)))
    roots = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
    roots.write(pem)
    roots.close()
    os.environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = roots.name
    producer = Producer(config(endpoint), (topic,), tls_enable=True)
    producer.startup()
    sent = producer.send(message(topic, "over-tls")).message_id
    consumer = SimpleConsumer(config(endpoint), "GID_" + topic, {topic: FilterExpression("*")},
                              await_duration=5, tls_enable=True)
    consumer.startup()
    got = receive_until(consumer, 1)
    consumer.shutdown()
    producer.shutdown()
    os.unlink(roots.name)
    result(sent=sent, received=[view(m) for m in got], certificate=pem.startswith("-----BEGIN CERTIFICATE-----"))


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
