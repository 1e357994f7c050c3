//! Brokers leaving: by closing their connection, by going silent, by unregistering.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use vostok_namesrv::RouteInfoManager;
use vostok_remoting::protocol::response_code;

/// A condition for [`wait_until`]: `topic` has no route any more.
fn route_gone(
    routes: &Arc<RouteInfoManager>,
    topic: &'static str,
) -> impl FnMut() -> std::future::Ready<bool> {
    let routes = routes.clone();
    move || std::future::ready(routes.pickup_topic_route_data(topic).is_none())
}

#[tokio::test]
async fn a_closed_connection_drops_its_brokers_routes_at_once() {
    let ns = TestNamesrv::start().await;
    let (a_conn, b_conn, client) = (client(), client(), client());
    Broker::new("c", "a", 0, "a:1", &["Shared", "OnlyA"])
        .register(&a_conn, &ns.addr)
        .await;
    Broker::new("c", "b", 0, "b:1", &["Shared"])
        .register(&b_conn, &ns.addr)
        .await;
    let routes = ns.server.route_info().clone();

    a_conn.shutdown().await;
    wait_until("a's routes are gone", route_gone(&routes, "OnlyA")).await;
    let shared = route(&client, &ns.addr, "Shared").await.unwrap();
    assert_eq!(shared.queue_datas.len(), 1, "b still serves Shared");
    assert_eq!(shared.queue_datas[0].broker_name, "b");
    assert_eq!(
        route(&client, &ns.addr, "OnlyA").await.unwrap_err().code,
        response_code::TOPIC_NOT_EXIST
    );

    // The last broker of a topic leaving removes the topic.
    b_conn.shutdown().await;
    wait_until("Shared is gone", route_gone(&routes, "Shared")).await;
    assert!(routes.cluster_info().cluster_addr_table.is_empty());
    assert!(routes.live_brokers().is_empty());
}

#[tokio::test]
async fn a_client_connection_closing_touches_no_broker() {
    let ns = TestNamesrv::start().await;
    let (broker_conn, client) = (client(), client());
    Broker::new("c", "b", 0, "b:1", &["T"])
        .register(&broker_conn, &ns.addr)
        .await;
    route(&client, &ns.addr, "T").await.unwrap();
    assert_eq!(ns.server.connection_count(), 2);
    client.shutdown().await;
    wait_until("the server saw the client leave", || {
        std::future::ready(ns.server.connection_count() == 1)
    })
    .await;
    assert_eq!(ns.server.route_info().live_brokers().len(), 1);
    assert!(route(&broker_conn, &ns.addr, "T").await.is_ok());
}

#[tokio::test]
async fn a_broker_that_reconnected_survives_its_old_connection_closing() {
    let ns = TestNamesrv::start().await;
    let (old_conn, new_conn) = (client(), client());
    let broker = Broker::new("c", "b", 0, "b:1", &["T"]);
    broker.register(&old_conn, &ns.addr).await;
    let first = ns.server.route_info().live_brokers()[0].channel_id;
    broker.register(&new_conn, &ns.addr).await;
    let second = ns.server.route_info().live_brokers()[0].channel_id;
    assert_ne!(first, second);

    assert_eq!(ns.server.connection_count(), 2);
    old_conn.shutdown().await;
    wait_until("the server saw the old connection close", || {
        std::future::ready(ns.server.connection_count() == 1)
    })
    .await;
    assert!(route(&new_conn, &ns.addr, "T").await.is_ok());
    assert_eq!(ns.server.route_info().live_brokers()[0].channel_id, second);
}

#[tokio::test]
async fn a_silent_broker_expires_and_its_connection_is_closed() {
    let ns = TestNamesrv::start().await;
    let (conn, slave_conn, client) = (client(), client(), client());
    Broker::new("c", "b", 0, "b:1", &["T"])
        .register(&conn, &ns.addr)
        .await;
    let registered = Instant::now();
    let channel = conn.channel(&ns.addr).await.unwrap();

    // Not yet: 120 s have not passed.
    assert_eq!(
        ns.server
            .scan_not_active_brokers(registered + Duration::from_secs(100)),
        0
    );
    assert!(route(&client, &ns.addr, "T").await.is_ok());

    // A slave keeps registering; the master stays silent past 120 s.
    Broker::new("c", "b", 1, "s:1", &["T"])
        .register(&slave_conn, &ns.addr)
        .await;
    let live = ns.server.route_info().live_brokers();
    let master = live.iter().find(|b| b.broker_id == 0).unwrap();
    let slave = live.iter().find(|b| b.broker_id == 1).unwrap();
    // Exactly 120 s after the slave's registration: the slave is not past its
    // timeout, the master (registered earlier) is.
    assert!(master.last_update < slave.last_update);
    let sweep_at = slave.last_update + Duration::from_secs(120);
    assert_eq!(ns.server.scan_not_active_brokers(sweep_at), 1);

    // The expired master's connection is closed by the name server.
    tokio::time::timeout(T, channel.closed())
        .await
        .expect("connection closed");
    let route = route(&client, &ns.addr, "T").await.unwrap();
    assert_eq!(route.broker_datas[0].master_addr(), None);
    assert_eq!(route.broker_datas[0].select_addr(), Some("s:1"));
    // The slave now learns no master.
    let answer = Broker::new("c", "b", 1, "s:1", &["T"])
        .register(&slave_conn, &ns.addr)
        .await;
    assert_eq!(answer.master_addr, None);
}

#[tokio::test]
async fn the_periodic_sweep_runs_with_the_configured_timing() {
    let ns = TestNamesrv::start_with(|c| {
        c.scan_not_active_broker_interval = Duration::from_millis(20);
        c.broker_channel_expired_time = Duration::from_millis(200);
    })
    .await;
    let conn = client();
    Broker::new("c", "b", 0, "b:1", &["T"])
        .register(&conn, &ns.addr)
        .await;
    let routes = ns.server.route_info().clone();
    wait_until("the silent broker expires", route_gone(&routes, "T")).await;
    assert!(routes.live_brokers().is_empty());
}

#[tokio::test]
async fn a_broker_registered_timeout_overrides_the_default() {
    let ns = TestNamesrv::start().await;
    let conn = client();
    let broker = Broker::new("c", "b", 0, "b:1", &["T"]);
    let mut header = broker.header();
    header.heartbeat_timeout_millis = Some(10_000);
    let request = vostok_remoting::RemotingCommand::request_with_header(
        vostok_remoting::protocol::request_code::REGISTER_BROKER,
        &header,
    )
    .with_body(broker.body().encode());
    assert_eq!(
        call(&conn, &ns.addr, request).await.code,
        response_code::SUCCESS
    );
    let live = &ns.server.route_info().live_brokers()[0];
    assert_eq!(live.heartbeat_timeout, Duration::from_secs(10));
    assert_eq!(
        ns.server
            .scan_not_active_brokers(live.last_update + Duration::from_secs(11)),
        1
    );
}
