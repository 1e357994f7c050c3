//! Apache RocketMQ's C++ client (rocketmq-client-cpp, as `librocketmq.so` in the PyPI
//! package `rocketmq` 0.4.4) against a real broker over the classic remoting protocol:
//! sync, oneway and orderly sends, and a push consumer reading them all with their
//! tags, keys and properties. The scenarios are `tests/python/cpp_client.py`; without
//! the package installed the test says so and passes without running.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use vostok_tests::python::{self, PyClient};
use vostok_tests::{Broker, BrokerOptions};

const T: Duration = Duration::from_secs(120);

#[test]
fn cpp_producer_and_push_consumer() {
    let Some(py) = python::interpreter(PyClient::Cpp) else {
        return;
    };
    let broker = Broker::start(BrokerOptions::default().set("mappedFileSizeCommitLog", 64 << 20));
    let sent = python::run(
        &py,
        "cpp_client.py",
        &["produce", &broker.namesrv, "CppTopic", "10"],
        T,
    );
    let ok = &sent["ok"];
    for kind in ["sync", "orderly"] {
        let results = sent[kind].as_array().unwrap();
        assert_eq!(results.len(), 10);
        assert!(results.iter().all(|r| &r["status"] == ok), "{kind}: {sent}");
    }
    let got = python::run(
        &py,
        "cpp_client.py",
        &["consume", &broker.namesrv, "CppTopic", "cpp-group", "30"],
        T,
    );
    assert_eq!(got["finished"], true, "{got}");
    let seen = got["seen"].as_array().unwrap();
    let bodies: BTreeSet<&str> = seen.iter().map(|m| m["body"].as_str().unwrap()).collect();
    for i in 0..10 {
        for kind in ["sync", "oneway", "orderly"] {
            assert!(
                bodies.contains(format!("{kind}-{i}").as_str()),
                "{kind}-{i} missing"
            );
        }
    }
    for m in seen
        .iter()
        .filter(|m| m["body"].as_str().unwrap().starts_with("sync-"))
    {
        let i = &m["body"].as_str().unwrap()["sync-".len()..];
        assert_eq!(m["keys"], format!("key-{i}"));
        assert_eq!(m["index"], i);
        assert_eq!(m["tags"], "TagA");
    }
    // Orderly sends with the same argument share a queue, in send order.
    let mut by_queue: BTreeMap<i64, Vec<(i64, usize)>> = BTreeMap::new();
    for m in seen
        .iter()
        .filter(|m| m["body"].as_str().unwrap().starts_with("orderly-"))
    {
        let i: usize = m["body"].as_str().unwrap()["orderly-".len()..]
            .parse()
            .unwrap();
        assert_eq!(m["tags"], "TagO");
        by_queue
            .entry(m["queue"].as_i64().unwrap())
            .or_default()
            .push((m["offset"].as_i64().unwrap(), i));
    }
    assert_eq!(
        by_queue.len(),
        2,
        "two sharding arguments, two queues: {by_queue:?}"
    );
    for list in by_queue.values_mut() {
        list.sort();
        let order: Vec<usize> = list.iter().map(|(_, i)| *i).collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "send order kept: {order:?}"
        );
        assert!(
            order.iter().all(|i| i % 2 == order[0] % 2),
            "one argument per queue"
        );
    }
}
