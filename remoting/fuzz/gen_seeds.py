#!/usr/bin/env python3
"""Writes the seed corpora of the decoder targets (seeds/<target>/): small valid inputs
laid out as docs/wire.md, docs/message.md and docs/bodies.md describe them, plus the
lenient JSON forms Java clients send. Run from remoting/fuzz: python3 gen_seeds.py"""

import json
import os
import struct
import zlib


def write(target, name, data):
    os.makedirs(os.path.join("seeds", target), exist_ok=True)
    with open(os.path.join("seeds", target, name), "wb") as f:
        f.write(data)


def props(*pairs):
    return "".join(f"{k}\x01{v}\x02" for k, v in pairs)


def json_header(code, opaque, flag=0, remark=None, ext=None):
    h = {"code": code, "flag": flag, "language": "RUST", "opaque": opaque,
         "serializeTypeCurrentRPC": "JSON", "version": 479}
    if ext:
        h["extFields"] = ext
    if remark is not None:
        h["remark"] = remark
    return json.dumps(h, separators=(",", ":"), ensure_ascii=False).encode()


def binary_header(code, opaque, flag=0, remark=None, ext=None):
    out = struct.pack(">hbhii", code, 12, 479, opaque, flag)
    r = (remark or "").encode()
    out += struct.pack(">i", len(r)) + r
    m = b""
    for k, v in (ext or {}).items():
        k, v = k.encode(), v.encode()
        m += struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
    return out + struct.pack(">i", len(m)) + m


def frame(header, kind, body=b""):
    return struct.pack(">iI", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


SEND_EXT = {"a": "TBW102", "b": "TopicTest", "e": "3",
            "i": props(("TAGS", "TagA"), ("KEYS", "k1 k2"))}
COMMANDS = [
    dict(code=105, opaque=1),
    dict(code=310, opaque=2, ext=SEND_EXT),
    dict(code=1, opaque=3, flag=1, remark='SYSTEM_ERROR: "quoted" \\ é'),
    dict(code=34, opaque=4, flag=2),
]
BODIES = [b"", b"hello", b"", bytes(64)]


def frames_and_headers():
    all_frames = b""
    for i, (c, body) in enumerate(zip(COMMANDS, BODIES)):
        j, b = json_header(**c), binary_header(**c)
        write("json_header", f"command-{i}", j)
        write("binary_header", f"command-{i}", b)
        # Limit word 0xFFFF (a 64 KiB + 64 frame limit), reads of 7 bytes.
        write("frame", f"json-{i}", b"\xff\xff\x06" + frame(j, 0, body))
        write("frame", f"binary-{i}", b"\xff\xff\x06" + frame(b, 1, body))
        all_frames += frame(j, 0, body)
        # The mixed target reads frames as they come off the wire.
        write("decode", f"json-{i}", frame(j, 0, body))
        write("decode", f"binary-{i}", frame(b, 1, body))
    write("frame", "many-frames", b"\x10\x00\xff" + all_frames)
    write("frame", "cut-short", b"\x10\x00\x00" + all_frames[:-3])
    write("json_header", "java", json.dumps({
        "code": 310, "extFields": {"a": "g", "b": "T", "c": "0", "d": "4", "e": "0",
                                   "i": props(("KEYS", "k")), "k": "false"},
        "flag": 0, "language": "JAVA", "opaque": 7, "version": "453"},
        separators=(",", ":")).encode())
    write("json_header", "ordinal",
          b'{"code":34,"language":0,"opaque":"8","flag":2,"remark":null,"x":[1,{"y":true}]} ')


def properties():
    write("properties", "normal", props(("TAGS", "TagA"), ("KEYS", "k1 k2"),
                                        ("UNIQ_KEY", "7F0000010001")).encode())
    write("properties", "no-trailing-separator", b"TAGS\x01a\x02KEYS\x01b")
    write("properties", "duplicates-and-empty", b"A\x011\x02\x01x\x02A\x012\x02B\x01\x02")
    write("properties", "lines", b"TAGS=a\nKEYS=k1 k2\nDELAY=3\n")


def block(flag, body, p):
    p = p.encode()
    return struct.pack(">iiiii", 22 + len(body) + len(p), 0, 0, flag, len(body)) + body + \
        struct.pack(">h", len(p)) + p


def batches():
    one = block(0, b"body-1", props(("TAGS", "a")))
    three = one + block(4, b"", "") + block(0, bytes(100), props(("KEYS", "k"), ("WAIT", "true")))
    write("batch", "one", one)
    write("batch", "three", three)
    write("batch", "truncated", three[:-5])


def topic(name, queues):
    return {"attributes": {}, "order": False, "perm": 6, "readQueueNums": queues,
            "topicFilterType": "SINGLE_TAG", "topicName": name, "topicSysFlag": 0,
            "writeQueueNums": queues}


def register_bodies():
    version = {"counter": 3, "stateVersion": 0, "timestamp": 1700000000000}
    topics = [("TopicTest", 4), ("%RETRY%group", 1), ("SELF_TEST_TOPIC", 1)]
    body = {"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": version, "topicConfigTable": {n: topic(n, q) for n, q in topics}}}
    write("register_body", "json", b"\x00" + json.dumps(body, separators=(",", ":")).encode())

    def text(b):
        return struct.pack(">i", len(b)) + b
    raw = text(json.dumps(version, separators=(",", ":")).encode())
    raw += struct.pack(">i", len(topics))
    for n, q in topics:
        raw += text(f"{n} {q} {q} 6 SINGLE_TAG {{}}".encode())
    raw += text(b"[]") + struct.pack(">i", 0)
    write("register_body", "compressed-inflated", b"\x01" + raw)
    write("register_body", "compressed-raw", b"\x09" + zlib.compress(raw))
    write("register_body", "java-bare-keys", b"\x02" + b'{filterServerList:[],topicConfigSerializeWrapper:{dataVersion:{counter:1,timestamp:1700000000000},topicConfigTable:{"T":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}}}}')


def heartbeats():
    write("heartbeat", "java", json.dumps({
        "clientID": "10.0.0.1@1234",
        "consumerDataSet": [{
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
            "groupName": "g", "messageModel": "CLUSTERING", "unitMode": False,
            "subscriptionDataSet": [{
                "classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                "subString": "a || b", "subVersion": 1700000000000, "tagsSet": ["a", "b"],
                "topic": "T"}]}],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}], "withoutSub": False},
        separators=(",", ":")).encode())
    write("heartbeat", "producer-only",
          b'{clientID:"c",producerDataSet:[{groupName:"p"}],heartbeatFingerprint:12}')
    write("heartbeat", "sql92",
          b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"expressionType":"SQL92","subString":"a > 1","subVersion":"5","topic":"T"}]}]}')


if __name__ == "__main__":
    frames_and_headers()
    properties()
    batches()
    register_bodies()
    heartbeats()
