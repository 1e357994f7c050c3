"""Scenarios run with Apache RocketMQ's C++ client (rocketmq-client-cpp, bundled as
`librocketmq.so` in the PyPI package `rocketmq` 0.4.4 behind its Python binding) against
a Vostok broker over the classic remoting protocol.

    python cpp_client.py SCENARIO NAMESRV TOPIC [ARG...]

Each scenario ends with one line `RESULT <json>` that tests/tests/cpp_client.rs checks.
Every wait is bounded.
"""

import json
import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer, SendStatus

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


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
