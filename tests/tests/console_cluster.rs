//! The console's cluster page lists every broker of every cluster the name server
//! knows, with its role and disk use, and a broker that stopped answering (stopped
//! with SIGSTOP) as unreachable, the page answering all the same. Real `mqnamesrv` and two `mqbroker`
//! processes in two clusters; the page is read over HTTP.

use std::time::{Duration, Instant};

use vostok_tests::freeze::{freeze, thaw};
use vostok_tests::{http, Broker, BrokerOptions, Namesrv};

/// The row of the members table that names `addr`.
fn row<'a>(page: &'a str, addr: &str) -> Option<&'a str> {
    let table = page.split("<table id=\"members\">").nth(1)?;
    let table = table.split("</table>").next()?;
    table.split("<tr>").find(|r| r.contains(addr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_page_lists_every_broker() {
    let ns = Namesrv::start();
    let options = |name: &str, cluster: &str| BrokerOptions {
        namesrv: Some(ns.addr.clone()),
        broker_name: name.to_owned(),
        cluster: cluster.to_owned(),
        ..Default::default()
    };
    let a = Broker::start(options("console-a", "DefaultCluster").set("consoleEnable", true));
    let b = Broker::start(options("console-b", "OtherCluster"));
    let console = a.console_addr.clone().expect("console address printed");

    // The name server learns both registrations within a moment: ask until it has.
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let answer = http::get(&console, "/").await;
        let listed = answer.status == 200
            && row(&answer.body, &a.addr).is_some_and(|r| r.contains("this broker"))
            && row(&answer.body, &b.addr).is_some_and(|r| r.contains("reachable"));
        if listed {
            break answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "both brokers not listed in time:\n{}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let b_row = row(&page, &b.addr).expect("console-b row");
    for cell in ["OtherCluster", "console-b", "ASYNC_MASTER", " %"] {
        assert!(b_row.contains(cell), "{cell:?} missing in {b_row}");
    }
    let a_row = row(&page, &a.addr).expect("console-a row");
    assert!(a_row.contains("DefaultCluster"), "{a_row}");

    // console-b hangs (SIGSTOP: its connections stay open, so the name server keeps
    // listing it); the page still answers, saying it cannot be reached.
    freeze(b.process.pid());
    let answer = http::get(&console, "/").await;
    assert_eq!(answer.status, 200);
    let b_row = row(&answer.body, &b.addr).expect("console-b still listed");
    assert!(b_row.contains("unreachable"), "{b_row}");
    assert!(
        row(&answer.body, &a.addr).is_some_and(|r| r.contains("this broker")),
        "{}",
        answer.body
    );
    thaw(b.process.pid());
}
