//! Many brokers registering while clients look routes up: no lost update, no torn
//! answer. KV puts from many connections all reach memory and disk.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use vostok_remoting::protocol::header::PutKvConfigRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

const BROKERS: usize = 20;
const TOPICS_PER_BROKER: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_registrations_and_lookups() {
    let ns = Arc::new(TestNamesrv::start().await);
    let done = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicUsize::new(0));

    let mut readers = Vec::new();
    for reader in 0..4 {
        let (ns, done, lookups) = (ns.clone(), done.clone(), lookups.clone());
        readers.push(tokio::spawn(async move {
            let client = client();
            let mut i = reader;
            while !done.load(Ordering::Acquire) {
                let topic = format!("T-{}-{}", i % BROKERS, i % TOPICS_PER_BROKER);
                for topic in [topic.as_str(), "Shared"] {
                    match route(&client, &ns.addr, topic).await {
                        Ok(route) => {
                            // Never a queue without its broker.
                            for qd in &route.queue_datas {
                                assert!(
                                    route.broker(&qd.broker_name).is_some(),
                                    "{topic}: torn route"
                                );
                            }
                        }
                        Err(e) => assert_eq!(e.code, response_code::TOPIC_NOT_EXIST),
                    }
                    lookups.fetch_add(1, Ordering::Relaxed);
                }
                i += 7;
            }
        }));
    }

    let mut writers = Vec::new();
    for b in 0..BROKERS {
        let ns = ns.clone();
        writers.push(tokio::spawn(async move {
            let conn = client();
            let mut topics: Vec<String> = (0..TOPICS_PER_BROKER)
                .map(|t| format!("T-{b}-{t}"))
                .collect();
            topics.push("Shared".into());
            let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
            let mut broker = Broker::new(
                "c",
                &format!("broker-{b}"),
                0,
                &format!("10.0.{b}.1:10911"),
                &refs,
            );
            // Three rounds, as the periodic registration does, each with a new
            // version and one more queue per topic.
            for round in 1..=3 {
                broker.version.counter = round;
                for topic in &mut broker.topics {
                    topic.write_queue_nums = round as i32;
                }
                broker.register(&conn, &ns.addr).await;
            }
            conn
        }));
    }
    let mut connections = Vec::new();
    for writer in writers {
        connections.push(writer.await.unwrap());
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.await.unwrap();
    }
    assert!(lookups.load(Ordering::Relaxed) > 0);

    let routes = ns.server.route_info();
    assert_eq!(routes.topic_count(), BROKERS * TOPICS_PER_BROKER + 1);
    assert_eq!(routes.live_brokers().len(), BROKERS);
    assert_eq!(routes.cluster_info().cluster_addr_table["c"].len(), BROKERS);
    let shared = routes.pickup_topic_route_data("Shared").unwrap();
    assert_eq!(shared.queue_datas.len(), BROKERS);
    assert_eq!(shared.broker_datas.len(), BROKERS);
    for b in 0..BROKERS {
        for t in 0..TOPICS_PER_BROKER {
            let route = routes
                .pickup_topic_route_data(&format!("T-{b}-{t}"))
                .unwrap();
            assert_eq!(route.queue_datas.len(), 1);
            assert_eq!(route.queue_datas[0].write_queue_nums, 3, "last round wins");
        }
    }
    drop(connections);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_kv_puts_all_reach_the_file() {
    let ns = TestNamesrv::start().await;
    let mut tasks = Vec::new();
    for task in 0..8 {
        let addr = ns.addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = client();
            for i in 0..25 {
                let request = RemotingCommand::request_with_header(
                    request_code::PUT_KV_CONFIG,
                    &PutKvConfigRequestHeader {
                        namespace: format!("ns{}", task % 2),
                        key: format!("k-{task}-{i}"),
                        value: format!("v-{task}-{i}"),
                    },
                );
                assert_eq!(
                    call(&client, &addr, request).await.code,
                    response_code::SUCCESS
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let TestNamesrv { server, dir, .. } = ns;
    server.shutdown().await;
    drop(server);
    // What is on disk, read back by a fresh name server.
    let config = config_in(&dir);
    let again = TestNamesrv::start_in(dir, config).await;
    let kv = again.server.kv_config();
    let total = kv.list("ns0").unwrap().len() + kv.list("ns1").unwrap().len();
    assert_eq!(total, 8 * 25);
    assert_eq!(kv.get("ns1", "k-7-24").as_deref(), Some("v-7-24"));
    again.server.shutdown().await;
}
