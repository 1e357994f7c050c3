//! The SDK examples of `client/examples`, run as a user runs them against a real
//! broker. They are built as this crate's binaries from the same source files.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vostok_tests::{Broker, BrokerOptions};

/// Runs `program` until it exits, with every stdout line; fails after `limit`.
fn run_to_end(mut command: Command, limit: Duration) -> Vec<String> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + limit;
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("still running after {limit:?}; it printed: {lines:#?}");
            }
        }
    }
    let status = child.wait().expect("the example ends");
    assert!(status.success(), "{status}; it printed: {lines:#?}");
    lines
}

#[test]
fn the_transaction_example_says_what_it_waits_for_and_ends_at_the_check_back() {
    // Check-backs every second for transactions older than a second, so that the wait
    // the example announces is short here.
    let broker = Broker::start(
        BrokerOptions::default()
            .set("transactionTimeOut", 1000)
            .set("transactionCheckInterval", 1000),
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_vostok-example-transaction"));
    command.args([broker.namesrv.as_str(), "ExampleTxTopic"]);
    let lines = run_to_end(command, Duration::from_secs(60));
    let waiting = lines
        .iter()
        .position(|l| l.contains("waiting for the broker to check back"))
        .unwrap_or_else(|| panic!("no word about the wait: {lines:#?}"));
    assert!(
        lines[waiting].contains("transactionCheckInterval"),
        "names the setting that decides how long: {}",
        lines[waiting]
    );
    let checked = lines
        .iter()
        .position(|l| l.starts_with("the broker checks back on"))
        .unwrap_or_else(|| panic!("no check-back: {lines:#?}"));
    assert!(waiting < checked, "{lines:#?}");
}

#[test]
fn the_amqp_exchange_example_routes_each_kind_to_its_queues() {
    let broker = Broker::start(BrokerOptions::default());
    for (kind, topic, queues) in [
        (
            "topic",
            "ExampleTopicExchange",
            [
                "queue eu-orders (bound with orders.*.eu): orders.created.eu, orders.paid.eu",
                "queue all-orders (bound with orders.#): orders.created.eu, orders.created.eu.late, orders.created.us, orders.paid.eu",
            ],
        ),
        (
            "direct",
            "ExampleDirectExchange",
            [
                "queue paid-eu (bound with orders.paid.eu): orders.paid.eu",
                "queue created-us (bound with orders.created.us): orders.created.us",
            ],
        ),
        (
            "fanout",
            "ExampleFanoutExchange",
            [
                "queue audit (bound with everything): invoices.created.eu, orders.created.eu, orders.created.eu.late, orders.created.us, orders.paid.eu",
                "queue search (bound with everything): invoices.created.eu, orders.created.eu, orders.created.eu.late, orders.created.us, orders.paid.eu",
            ],
        ),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vostok-example-amqp_exchange"));
        command.args([broker.namesrv.as_str(), kind, topic]);
        let lines = run_to_end(command, Duration::from_secs(60));
        for queue in queues {
            assert!(lines.iter().any(|l| l == queue), "{queue:?} in {lines:#?}");
        }
    }
}
