//! Route table logic with injected time: no sockets, no waiting.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use vostok_remoting::protocol::body::{DataVersion, TopicConfig};
use vostok_remoting::protocol::route::QueueData;
use vostok_remoting::protocol::topic::perm;

use super::*;

fn version(counter: i64) -> DataVersion {
    DataVersion {
        counter,
        state_version: 0,
        timestamp: 1_700_000_000_000,
    }
}

fn reg(cluster: &str, name: &str, id: i64, addr: &str, topics: &[&str]) -> BrokerRegistration {
    let mut r = BrokerRegistration {
        cluster_name: cluster.into(),
        broker_addr: addr.into(),
        broker_name: name.into(),
        broker_id: id,
        ha_server_addr: format!("{addr}-ha"),
        ..Default::default()
    };
    r.topic_config_wrapper.data_version = version(1);
    for t in topics {
        r.topic_config_wrapper
            .topic_config_table
            .insert((*t).to_owned(), TopicConfig::new(*t, 4));
    }
    r
}

fn with_version(mut r: BrokerRegistration, counter: i64) -> BrokerRegistration {
    r.topic_config_wrapper.data_version = version(counter);
    r
}

fn manager() -> RouteInfoManager {
    RouteInfoManager::new(RouteConfig::default())
}

impl RouteInfoManager {
    /// Table invariants every operation must keep.
    fn check_invariants(&self) {
        let t = self.read();
        for (topic, queues) in &t.topic_queue_table {
            assert!(!queues.is_empty(), "topic {topic} has no queues");
            for (name, qd) in queues {
                assert_eq!(*name, qd.broker_name);
                assert!(
                    t.broker_addr_table.contains_key(name),
                    "topic {topic} names unknown broker {name}"
                );
            }
        }
        for (name, data) in &t.broker_addr_table {
            assert_eq!(*name, data.broker_name);
            assert!(
                !data.broker_addrs.is_empty(),
                "broker {name} has no address"
            );
            let addrs: BTreeSet<&String> = data.broker_addrs.values().collect();
            assert_eq!(
                addrs.len(),
                data.broker_addrs.len(),
                "{name}: one address, two ids"
            );
            assert!(
                t.cluster_addr_table
                    .get(&data.cluster)
                    .is_some_and(|names| names.contains(name)),
                "broker {name} missing from cluster {}",
                data.cluster
            );
        }
        for (cluster, names) in &t.cluster_addr_table {
            assert!(!names.is_empty(), "empty cluster {cluster}");
            for name in names {
                assert!(
                    t.broker_addr_table
                        .get(name)
                        .is_some_and(|d| d.cluster == *cluster),
                    "cluster {cluster} lists {name} which is not its broker"
                );
            }
        }
    }
}

#[test]
fn a_master_registration_creates_the_route() {
    let m = manager();
    let now = Instant::now();
    let result = m.register_broker(reg("c1", "b", 0, "10.0.0.1:10911", &["T1", "T2"]), now);
    assert_eq!(result, RegisterBrokerResult::default());
    let route = m.pickup_topic_route_data("T1").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].write_queue_nums, 4);
    assert_eq!(route.broker_datas[0].master_addr(), Some("10.0.0.1:10911"));
    assert_eq!(route.broker_datas[0].cluster, "c1");
    assert!(route.filter_server_table.is_empty());
    assert!(m.pickup_topic_route_data("nope").is_none());
    assert_eq!(m.all_topic_list().topic_list.len(), 2);
    let live = m.live_brokers();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].last_update, now);
    assert_eq!(live[0].heartbeat_timeout, Duration::from_secs(120));
    assert_eq!(live[0].ha_server_addr, "10.0.0.1:10911-ha");
    m.check_invariants();
}

#[test]
fn a_slave_learns_its_master_and_the_route_lists_every_id() {
    let m = manager();
    let now = Instant::now();
    // A slave before its master: nothing to learn yet, and a 4.x slave's topics are
    // not read.
    let early = m.register_broker(reg("c", "b", 1, "s:1", &["FromSlave"]), now);
    assert_eq!(early.master_addr, None);
    assert!(m.pickup_topic_route_data("FromSlave").is_none());

    m.register_broker(reg("c", "b", 0, "m:1", &["T"]), now);
    let result = m.register_broker(reg("c", "b", 1, "s:1", &["T"]), now);
    assert_eq!(result.master_addr.as_deref(), Some("m:1"));
    assert_eq!(result.ha_server_addr.as_deref(), Some("m:1-ha"));
    let route = m.pickup_topic_route_data("T").unwrap();
    assert_eq!(route.broker_datas.len(), 1);
    let addrs = &route.broker_datas[0].broker_addrs;
    assert_eq!(addrs.get(&0).map(String::as_str), Some("m:1"));
    assert_eq!(addrs.get(&1).map(String::as_str), Some("s:1"));
    m.check_invariants();
}

#[test]
fn two_clusters() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("east", "a", 0, "a:1", &["Shared", "OnlyA"]), now);
    m.register_broker(reg("west", "b", 0, "b:1", &["Shared", "OnlyB"]), now);
    let route = m.pickup_topic_route_data("Shared").unwrap();
    let names: Vec<&str> = route
        .queue_datas
        .iter()
        .map(|q| q.broker_name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let clusters: Vec<&str> = route
        .broker_datas
        .iter()
        .map(|b| b.cluster.as_str())
        .collect();
    assert_eq!(clusters, ["east", "west"]);
    let info = m.cluster_info();
    assert_eq!(
        info.cluster_addr_table["east"],
        BTreeSet::from(["a".to_owned()])
    );
    assert_eq!(info.broker_addr_table.len(), 2);
    let east: Vec<String> = m.topics_by_cluster("east").topic_list.into_iter().collect();
    assert_eq!(east, ["OnlyA", "Shared"]);
    assert!(m.topics_by_cluster("nowhere").topic_list.is_empty());
    let system = m.system_topic_list();
    assert_eq!(
        system.topic_list,
        BTreeSet::from(["east", "west", "a", "b"].map(str::to_owned))
    );
    assert_eq!(system.broker_addr.as_deref(), Some("a:1"));
    // Deleting from one cluster keeps the other's queues.
    assert!(m.delete_topic("Shared", Some("east")));
    assert_eq!(
        m.pickup_topic_route_data("Shared")
            .unwrap()
            .queue_datas
            .len(),
        1
    );
    assert!(!m.delete_topic("Shared", Some("nowhere")));
    assert!(m.delete_topic("Shared", None));
    assert!(m.pickup_topic_route_data("Shared").is_none());
    m.check_invariants();
}

#[test]
fn topics_are_reread_only_when_the_data_version_changes_or_a_topic_is_missing() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("c", "b", 0, "m:1", &["T"]), now);
    // Same DataVersion, different perm: ignored, as the broker says nothing changed.
    let mut same = reg("c", "b", 0, "m:1", &["T", "New"]);
    same.topic_config_wrapper
        .topic_config_table
        .get_mut("T")
        .unwrap()
        .perm = perm::READ;
    m.register_broker(same.clone(), now);
    assert_eq!(
        m.pickup_topic_route_data("T").unwrap().queue_datas[0].perm,
        6
    );
    // ... but a topic the table does not list under this broker is added (5.x).
    assert!(m.pickup_topic_route_data("New").is_some());
    // A new DataVersion re-reads everything.
    m.register_broker(with_version(same, 2), now);
    assert_eq!(
        m.pickup_topic_route_data("T").unwrap().queue_datas[0].perm,
        perm::READ
    );
    assert!(m.is_broker_topic_config_changed("c", "m:1", &version(1)));
    assert!(!m.is_broker_topic_config_changed("c", "m:1", &version(2)));
    assert!(m.is_broker_topic_config_changed("c", "unknown:1", &version(2)));
}

#[test]
fn delete_topic_with_broker_registration_drops_unreported_topics() {
    let m = RouteInfoManager::new(RouteConfig {
        delete_topic_with_broker_registration: true,
        ..Default::default()
    });
    let now = Instant::now();
    m.register_broker(reg("c", "a", 0, "a:1", &["Keep", "Drop"]), now);
    m.register_broker(reg("c", "b", 0, "b:1", &["Drop"]), now);
    m.register_broker(with_version(reg("c", "a", 0, "a:1", &["Keep"]), 2), now);
    let drop = m.pickup_topic_route_data("Drop").unwrap();
    assert_eq!(drop.queue_datas.len(), 1, "only b still serves it");
    assert_eq!(drop.queue_datas[0].broker_name, "b");
    m.check_invariants();
}

#[test]
fn a_promoted_slave_replaces_its_old_id() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("c", "b", 0, "m:1", &["T"]), now);
    m.register_broker(reg("c", "b", 1, "s:1", &["T"]), now);
    m.unregister_broker("c", "m:1", "b");
    m.register_broker(reg("c", "b", 0, "s:1", &["T"]), now);
    let data = m.broker_data("b").unwrap();
    assert_eq!(data.broker_addrs.len(), 1);
    assert_eq!(data.master_addr(), Some("s:1"));
    m.check_invariants();
}

#[test]
fn a_registration_with_an_older_state_version_is_ignored() {
    let m = manager();
    let now = Instant::now();
    let mut newer = reg("c", "b", 0, "new:1", &["T"]);
    newer.topic_config_wrapper.data_version.state_version = 5;
    m.register_broker(newer, now);
    let mut older = reg("c", "b", 0, "old:1", &["T"]);
    older.topic_config_wrapper.data_version.state_version = 3;
    assert!(m.register_broker(older, now).stale);
    assert_eq!(m.broker_data("b").unwrap().master_addr(), Some("new:1"));
    assert_eq!(m.live_brokers().len(), 1);
}

#[test]
fn slaves_keep_the_broker_name_when_the_master_leaves() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("c", "b", 0, "m:1", &["T"]), now);
    m.register_broker(reg("c", "b", 1, "s:1", &["T"]), now);
    assert!(m.unregister_broker("c", "m:1", "b"));
    let route = m.pickup_topic_route_data("T").unwrap();
    assert_eq!(route.broker_datas[0].master_addr(), None);
    assert_eq!(route.broker_datas[0].select_addr(), Some("s:1"));
    assert!(
        route.write_queues().is_empty(),
        "no master: producers skip it"
    );
    assert_eq!(route.read_queues().len(), 4, "consumers can still read");
    // The slave's re-registration learns no master.
    assert_eq!(
        m.register_broker(reg("c", "b", 1, "s:1", &["T"]), now)
            .master_addr,
        None
    );
    assert!(m.unregister_broker("c", "s:1", "b"));
    assert!(m.pickup_topic_route_data("T").is_none());
    assert!(m.cluster_info().cluster_addr_table.is_empty());
    assert!(!m.unregister_broker("c", "s:1", "b"), "already gone");
    m.check_invariants();
}

#[test]
fn silent_brokers_expire_after_their_timeout() {
    let m = manager();
    let t0 = Instant::now();
    m.register_broker(reg("c", "a", 0, "a:1", &["T"]), t0);
    let mut quick = reg("c", "b", 0, "b:1", &["T"]);
    quick.heartbeat_timeout = Some(Duration::from_secs(10));
    m.register_broker(quick, t0);

    assert!(m
        .scan_not_active_brokers(t0 + Duration::from_secs(10))
        .is_empty());
    let expired = m.scan_not_active_brokers(t0 + Duration::from_millis(10_001));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].broker_name, "b");
    assert_eq!(expired[0].silent_for, Duration::from_millis(10_001));

    // A heartbeat restarts a's clock.
    assert!(m.update_broker_info_update_timestamp("c", "a:1", t0 + Duration::from_secs(60)));
    assert!(!m.update_broker_info_update_timestamp("c", "zz:1", t0));
    assert!(m
        .scan_not_active_brokers(t0 + Duration::from_secs(180))
        .is_empty());
    assert_eq!(
        m.scan_not_active_brokers(t0 + Duration::from_secs(181))
            .len(),
        1
    );
    assert!(m.pickup_topic_route_data("T").is_none());
    // A `now` before the last update (a caller's stale clock) expires nothing.
    m.register_broker(
        reg("c", "a", 0, "a:1", &["T"]),
        t0 + Duration::from_secs(500),
    );
    assert!(m.scan_not_active_brokers(t0).is_empty());
    m.check_invariants();
}

#[test]
fn write_permission_can_be_wiped_and_restored() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("c", "a", 0, "a:1", &["T1", "T2"]), now);
    m.register_broker(reg("c", "b", 0, "b:1", &["T1"]), now);
    assert_eq!(m.wipe_write_perm_of_broker("a"), 2);
    let route = m.pickup_topic_route_data("T1").unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    assert_eq!(route.queue_datas[1].perm, perm::READ | perm::WRITE);
    assert_eq!(route.write_queues().len(), 4, "only b is writable");
    assert_eq!(m.add_write_perm_of_broker("a"), 2);
    assert_eq!(
        m.pickup_topic_route_data("T2").unwrap().queue_datas[0].perm,
        6
    );
    assert_eq!(m.wipe_write_perm_of_broker("nobody"), 0);
}

#[test]
fn acting_master_for_5x_brokers() {
    let m = RouteInfoManager::new(RouteConfig {
        support_acting_master: true,
        ..Default::default()
    });
    let now = Instant::now();
    let acting = |mut r: BrokerRegistration| {
        r.enable_acting_master = Some(true);
        r
    };
    m.register_broker(acting(reg("c", "b", 0, "m:1", &["T"])), now);
    m.register_broker(acting(reg("c", "b", 1, "s:1", &["T"])), now);
    m.unregister_broker("c", "m:1", "b");
    // The master left: write permission is wiped, and the lowest slave, now the
    // prime slave, registers its topics read-only.
    assert_eq!(
        m.pickup_topic_route_data("T").unwrap().queue_datas[0].perm,
        perm::READ
    );
    m.register_broker(
        with_version(acting(reg("c", "b", 1, "s:1", &["T", "U"])), 2),
        now,
    );
    let route = m.pickup_topic_route_data("U").unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    // Clients see the acting master as id 0.
    assert_eq!(route.broker_datas[0].master_addr(), Some("s:1"));
    assert!(route.broker_datas[0].enable_acting_master);
    // The stored table is unchanged.
    assert_eq!(m.broker_data("b").unwrap().master_addr(), None);
}

#[test]
fn single_topic_registration_needs_known_brokers() {
    let m = manager();
    m.register_broker(reg("c", "b", 0, "b:1", &[]), Instant::now());
    let qd = |name: &str| QueueData {
        broker_name: name.into(),
        perm: 6,
        read_queue_nums: 2,
        topic_sys_flag: FLAG_UNIT,
        write_queue_nums: 2,
    };
    assert!(!m.register_topic("T", vec![qd("b"), qd("ghost")]));
    assert!(m.pickup_topic_route_data("T").is_none());
    assert!(m.register_topic("T", vec![qd("b")]));
    assert_eq!(
        m.pickup_topic_route_data("T").unwrap().queue_datas[0].read_queue_nums,
        2
    );
    assert!(m.unit_topics().topic_list.contains("T"));
    assert!(m.has_unit_sub_topics().topic_list.is_empty());
    m.check_invariants();
}

#[test]
fn a_broker_name_that_moves_cluster_is_listed_once() {
    let m = manager();
    let now = Instant::now();
    m.register_broker(reg("old", "b", 0, "b:1", &["T"]), now);
    m.register_broker(reg("new", "b", 0, "b:1", &["T"]), now);
    let info = m.cluster_info();
    assert_eq!(info.cluster_addr_table.keys().collect::<Vec<_>>(), ["new"]);
    assert_eq!(info.broker_addr_table["b"].cluster, "new");
    m.check_invariants();
}

#[derive(Debug, Clone)]
enum Op {
    Register {
        cluster: u8,
        name: u8,
        id: i64,
        addr: u8,
        topics: u8,
        version: i64,
        acting: Option<bool>,
    },
    Unregister {
        cluster: u8,
        name: u8,
        addr: u8,
    },
    Advance(u64),
    DeleteTopic {
        topic: u8,
        cluster: Option<u8>,
    },
    Wipe(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2u8, 0..3u8, 0..3i64, 0..4u8, any::<u8>(), 0..3i64, proptest::option::of(any::<bool>()))
            .prop_map(|(cluster, name, id, addr, topics, version, acting)| Op::Register {
                cluster, name, id, addr, topics, version, acting,
            }),
        2 => (0..2u8, 0..3u8, 0..4u8).prop_map(|(cluster, name, addr)| Op::Unregister { cluster, name, addr }),
        1 => (0..200u64).prop_map(Op::Advance),
        1 => (0..4u8, proptest::option::of(0..2u8)).prop_map(|(topic, cluster)| Op::DeleteTopic { topic, cluster }),
        1 => (0..3u8).prop_map(Op::Wipe),
    ]
}

proptest! {
    #[test]
    fn invariants_hold_under_any_sequence(ops in proptest::collection::vec(op(), 1..40)) {
        let m = manager();
        let mut now = Instant::now();
        for op in ops {
            match op {
                Op::Register { cluster, name, id, addr, topics, version, acting } => {
                    let topic_names: Vec<String> =
                        (0..4).filter(|i| topics & (1 << i) != 0).map(|i| format!("T{i}")).collect();
                    let refs: Vec<&str> = topic_names.iter().map(String::as_str).collect();
                    let mut r = reg(&format!("c{cluster}"), &format!("b{name}"), id, &format!("a{addr}"), &refs);
                    r.topic_config_wrapper.data_version = super::tests::version(version);
                    r.enable_acting_master = acting;
                    m.register_broker(r, now);
                }
                Op::Unregister { cluster, name, addr } => {
                    m.unregister_broker(&format!("c{cluster}"), &format!("a{addr}"), &format!("b{name}"));
                }
                Op::Advance(secs) => {
                    now += Duration::from_secs(secs);
                    m.scan_not_active_brokers(now);
                }
                Op::DeleteTopic { topic, cluster } => {
                    let cluster = cluster.map(|c| format!("c{c}"));
                    m.delete_topic(&format!("T{topic}"), cluster.as_deref());
                }
                Op::Wipe(name) => {
                    m.wipe_write_perm_of_broker(&format!("b{name}"));
                }
            }
            m.check_invariants();
            for topic in m.all_topic_list().topic_list {
                prop_assert!(m.pickup_topic_route_data(&topic).is_some(), "listed topic {} has no route", topic);
            }
        }
    }
}
