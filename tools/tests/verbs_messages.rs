//! The verbs that send and read messages against a real broker: `sendMessage`,
//! `queryMsgByUniqueKey`, `queryMsgByOffset`, `printMsg`, `printMsgByQueue`,
//! `consumeMessage`, `allocateMQ`, `checkMsgSendRT`, `clusterRT`, in text and `--json`.

mod common;

use common::{eventually, json, mqadmin, ok, start_broker};

/// `(broker, qid, status, msg id)` of sendMessage's result row.
fn sent_row(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("#Broker Name"), "{text}");
    lines[1].split_whitespace().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_and_read_verbs() {
    let (broker, _dir) = start_broker("verbs-m", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();
    ok(
        ns,
        &[
            "updateTopic",
            "-t",
            "MsgVerbs",
            "-b",
            &addr,
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .await;
    eventually("route", || async {
        mqadmin(ns, &["topicRoute", "-t", "MsgVerbs"])
            .await
            .status
            .success()
            .then_some(())
    })
    .await;

    // sendMessage to queue 1, then two more with other tags to queue 0.
    let text = ok(
        ns,
        &[
            "sendMessage",
            "-t",
            "MsgVerbs",
            "-p",
            "hello one",
            "-k",
            "key-1",
            "-c",
            "TagA",
            "-b",
            "verbs-m",
            "-i",
            "1",
        ],
    )
    .await;
    let row = sent_row(&text);
    assert_eq!(row[..3], ["verbs-m", "1", "SEND_OK"], "{text}");
    let msg_id = row[3].clone();
    for (body, tag) in [("two", "TagB"), ("three", "TagA")] {
        let v = json(
            ns,
            &[
                "sendMessage",
                "-t",
                "MsgVerbs",
                "-p",
                body,
                "-c",
                tag,
                "-b",
                "verbs-m",
                "-i",
                "0",
            ],
        )
        .await;
        assert_eq!(v["sendStatus"], "SEND_OK");
        assert_eq!(v["queueId"], 0);
    }

    // queryMsgByUniqueKey finds the first one through the index.
    let text = eventually("indexed", || async {
        let out = mqadmin(
            ns,
            &["queryMsgByUniqueKey", "-t", "MsgVerbs", "-i", &msg_id],
        )
        .await;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .await;
    assert!(
        text.contains(&format!("{:<20}{msg_id}\n", "Message ID")),
        "{text}"
    );
    assert!(text.contains(&format!("{:<20}[key-1]\n", "Keys")), "{text}");
    let v = json(
        ns,
        &["queryMsgByUniqueKey", "-t", "MsgVerbs", "-i", &msg_id, "-a"],
    )
    .await;
    assert_eq!(v[0]["body"], "hello one");
    assert_eq!(v[0]["queueId"], 1);

    // queryMsgByOffset: queue 0, offset 1 is "three".
    let text = ok(
        ns,
        &[
            "queryMsgByOffset",
            "-t",
            "MsgVerbs",
            "-b",
            "verbs-m",
            "-i",
            "0",
            "-o",
            "1",
        ],
    )
    .await;
    assert!(text.contains(&format!("{:<20}[TagA]\n", "Tags")), "{text}");
    assert!(
        text.contains(&format!("{:<20}1\n", "Queue Offset")),
        "{text}"
    );
    let v = json(
        ns,
        &[
            "queryMsgByOffset",
            "-t",
            "MsgVerbs",
            "-b",
            "verbs-m",
            "-i",
            "0",
            "-o",
            "0",
        ],
    )
    .await;
    assert_eq!(v["body"], "two");
    assert!(!mqadmin(
        ns,
        &[
            "queryMsgByOffset",
            "-t",
            "MsgVerbs",
            "-b",
            "verbs-m",
            "-i",
            "0",
            "-o",
            "9"
        ]
    )
    .await
    .status
    .success());

    // printMsg: both queues, the TagA filter, bodies.
    let text = ok(ns, &["printMsg", "-t", "MsgVerbs", "-s", "TagA"]).await;
    assert!(
        text.contains("minOffset=0, maxOffset=2, MessageQueue [topic=MsgVerbs, brokerName=verbs-m, queueId=0]"),
        "{text}"
    );
    let bodies: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("MSGID: "))
        .map(|l| l.rsplit("BODY: ").next().unwrap())
        .collect();
    assert_eq!(bodies, ["three", "hello one"], "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("-----") && l.len() == 56)
            .count(),
        2,
        "{text}"
    );
    let v = json(ns, &["printMsg", "-t", "MsgVerbs"]).await;
    assert_eq!(v.as_array().unwrap().len(), 3);

    // printMsgByQueue: counts by tag.
    let text = ok(
        ns,
        &[
            "printMsgByQueue",
            "-t",
            "MsgVerbs",
            "-a",
            "verbs-m",
            "-i",
            "0",
            "-f",
            "true",
        ],
    )
    .await;
    assert_eq!(
        text,
        format!(
            "Tag: {:<30} Count: 1\nTag: {:<30} Count: 1\n",
            "TagA", "TagB"
        )
    );
    let v = json(
        ns,
        &[
            "printMsgByQueue",
            "-t",
            "MsgVerbs",
            "-a",
            "verbs-m",
            "-i",
            "0",
            "-p",
            "true",
        ],
    )
    .await;
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);

    // consumeMessage: at most -c messages.
    let text = ok(ns, &["consumeMessage", "-t", "MsgVerbs", "-c", "2"]).await;
    assert_eq!(text.matches("MSGID: ").count(), 2, "{text}");
    assert!(text.contains("Consume ok"), "{text}");
    let v = json(
        ns,
        &[
            "consumeMessage",
            "-t",
            "MsgVerbs",
            "-b",
            "verbs-m",
            "-i",
            "0",
            "-o",
            "1",
        ],
    )
    .await;
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["body"], "three");

    // allocateMQ: two ids share the two queues.
    let text = ok(ns, &["allocateMQ", "-t", "MsgVerbs", "-i", "a,b"]).await;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["result"]["a"][0]["queueId"], 0, "{text}");
    assert_eq!(v["result"]["b"][0]["queueId"], 1, "{text}");

    // checkMsgSendRT: one row per send, round robin, and the mean.
    let text = ok(
        ns,
        &["checkMsgSendRT", "-t", "MsgVerbs", "-a", "4", "-s", "16"],
    )
    .await;
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("Avg RT"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(
        rows.iter().all(|r| r[0] == "verbs-m" && r[2] == "true"),
        "{text}"
    );
    assert_ne!(
        rows[0][1], rows[1][1],
        "round robin over the queues: {text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("Avg RT: "),
        "{text}"
    );

    // clusterRT: one round to the broker-name topic.
    let v = json(ns, &["clusterRT", "-a", "3", "-c", "DefaultCluster"]).await;
    assert_eq!(v[0]["brokerName"], "verbs-m");
    assert_eq!(v[0]["successCount"], 3);
    let text = ok(ns, &["clusterRT", "-a", "2", "--rounds", "1"]).await;
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["DefaultCluster", "verbs-m"], "{text}");
    assert_eq!(row[3..], ["2", "0"], "{text}");

    broker.shutdown().await;
}
