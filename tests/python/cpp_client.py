"""Scenarios run with Apache RocketMQ's C++ client (rocketmq-client-cpp, bundled as
`librocketmq.so` in the PyPI package `rocketmq` 0.4.4 behind its Python binding) against
a Vostok broker over the classic remoting protocol.

    python cpp_client.py SCENARIO NAMESRV TOPIC [ARG...]

Each scenario ends with one line `RESULT <json>` that tests/tests/cpp_client.rs (or
tests/tests/tiered_storage_clients.rs) checks. Every wait is bounded.
"""

import ctypes
import json
import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer, SendStatus
from rocketmq.ffi import dll

WAIT = 60  # seconds


def result(**fields):
    print("RESULT " + json.dumps(fields), flush=True)


def message(topic, body, tag="TagA", key=None, props=None):
    m = Message(topic)
    m.set_body(body)
    m.set_tags(tag)
    if key:
        m.set_keys(key)
    for k, v in (props or {}).items():
        m.set_property(k, v)
    return m


def scenario_produce(namesrv, topic, count="10"):
    """Sync, oneway and orderly sends (orderly: a sharding key picks the queue)."""
    count = int(count)
    producer = Producer("PID_" + topic.replace("%", "_"))
    producer.set_namesrv_addr(namesrv)
    producer.start()
    sync = []
    for i in range(count):
        r = producer.send_sync(message(topic, f"sync-{i}", key=f"key-{i}", props={"index": str(i)}))
        sync.append({"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset})
    for i in range(count):
        producer.send_oneway(message(topic, f"oneway-{i}"))
    orderly = []
    for i in range(count):
        r = producer.send_orderly(message(topic, f"orderly-{i}", tag="TagO"), i % 2)
        orderly.append({"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset})
    producer.shutdown()
    result(sync=sync, orderly=orderly, ok=int(SendStatus.OK))


def scenario_consume(namesrv, topic, group, count="30"):
    """A push consumer reads until `count` distinct bodies came (or the bound)."""
    count = int(count)
    seen = []
    lock = threading.Lock()
    done = threading.Event()

    def on_message(msg):
        with lock:
            seen.append({
                "body": msg.body.decode(),
                "tags": msg.tags.decode() if isinstance(msg.tags, bytes) else msg.tags,
                "keys": msg.keys.decode() if isinstance(msg.keys, bytes) else msg.keys,
                "queue": msg.queue_id,
                "offset": msg.queue_offset,
                "index": (msg.get_property("index") or b"").decode()
                if isinstance(msg.get_property("index"), bytes) else msg.get_property("index"),
            })
            if len({s["body"] for s in seen}) >= count:
                done.set()
        # Returning normally is CONSUME_SUCCESS; raising, RECONSUME_LATER.

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message)
    consumer.start()
    finished = done.wait(WAIT)
    consumer.shutdown()
    result(finished=finished, seen=seen)


def consume_from_first_offset(consumer):
    """The binding has no setter for where a new group starts; the C++ client has
    (`DefaultMQPushConsumer::setConsumeFromWhere`, exported), and the binding's handle
    is that object. 4 is CONSUME_FROM_FIRST_OFFSET."""
    set_where = dll._ZN8rocketmq21DefaultMQPushConsumer19setConsumeFromWhereENS_16ConsumeFromWhereE
    set_where.argtypes = [ctypes.c_void_p, ctypes.c_int]
    set_where.restype = None
    get_where = dll._ZN8rocketmq21DefaultMQPushConsumer19getConsumeFromWhereEv
    get_where.argtypes = [ctypes.c_void_p]
    get_where.restype = ctypes.c_int
    set_where(consumer._handle, 4)
    assert get_where(consumer._handle) == 4


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def scenario_consume_first(namesrv, topic, group, count, props=""):
    """An orderly push consumer of a new group starting at the first offset reads until
    `count` distinct (queue, offset) came (or the bound), in the order delivered, with
    the bodies in hex and the properties named in `props` (comma-separated)."""
    count = int(count)
    names = [p for p in props.split(",") if p]
    seen = []
    positions = set()
    lock = threading.Lock()
    done = threading.Event()

    def on_message(msg):
        with lock:
            seen.append({
                "body_hex": msg.body.hex(),
                "tags": text(msg.tags),
                "keys": text(msg.keys),
                "queue": msg.queue_id,
                "offset": msg.queue_offset,
                "properties": {n: text(msg.get_property(n)) for n in names},
            })
            positions.add((msg.queue_id, msg.queue_offset))
            if len(positions) >= count:
                done.set()

    consumer = PushConsumer(group, orderly=True)
    consume_from_first_offset(consumer)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message)
    consumer.start()
    finished = done.wait(WAIT)
    consumer.shutdown()
    result(finished=finished, seen=seen)


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
