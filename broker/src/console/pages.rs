//! Overview pages: the broker in its cluster, topics, groups with their lag, and the
//! connected applications.

use std::fmt::Write;

use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;

use super::html::{duration, esc, form, hidden, size, table, time, url};
use super::others::{broker_cell, elsewhere, other_rows, own_cell};
use super::remote::{in_namespace, Others, Rows};
use super::viewer::Viewer;
use super::{svg, Console};

/// Every broker of every cluster (role, disk use, reachable or not), then this broker:
/// role, addresses, disk, tiered storage, replication.
pub(crate) fn cluster(c: &Console, view: Option<&super::ClusterView>) -> String {
    let b = &c.broker;
    let cfg = &b.config;
    let info = b.storage.store.runtime_info();
    let get = |k: &str| info.get(k).cloned().unwrap_or_default();
    let store = &b.storage.store;
    let max = store.max_phy_offset();
    let mut rows = vec![
        vec!["Cluster".into(), esc(&cfg.broker_cluster_name)],
        vec![
            "Broker".into(),
            format!("{} (id {})", esc(&cfg.broker_name), cfg.broker_id),
        ],
        vec!["Role".into(), cfg.broker_role.name().to_owned()],
        vec!["Address".into(), esc(&b.broker_addr.to_string())],
        vec!["Name servers".into(), esc(&b.namesrv.addrs.join("; "))],
        vec!["Started".into(), time(b.observed.boot_timestamp)],
        vec![
            "Store".into(),
            esc(&cfg.store.store_path_root_dir.display().to_string()),
        ],
        vec![
            "Disk used (commitlog volume)".into(),
            format!(
                "{:.1} %",
                get("commitLogDiskRatio").parse::<f64>().unwrap_or(0.0) * 100.0
            ),
        ],
        vec!["Commitlog kept".into(), size(max - store.min_phy_offset())],
        vec![
            "Flush behind".into(),
            size(max - store.flushed_phy_offset()),
        ],
        vec![
            "Dispatch behind".into(),
            size(max - store.dispatched_phy_offset()),
        ],
        vec![
            "Topics / groups".into(),
            format!(
                "{} / {}",
                b.storage.topics.topic_names().len(),
                b.consumers.subscriptions.group_names().len()
            ),
        ],
    ];
    if let Some(master) = b.roles.master_addr.read_locked().clone() {
        rows.push(vec!["Master".into(), esc(&master)]);
    }
    let mut out = String::from("<h2>Brokers</h2>");
    if let Some(view) = view {
        out.push_str(&super::cluster::render(view, &b.broker_addr.to_string()));
    }
    out.push_str("<h2>This broker</h2>");
    out.push_str(&table("broker", &["", ""], &rows));
    out.push_str(&super::tier::section(c));
    let slaves = store.ha_slaves();
    if !slaves.is_empty() {
        out.push_str("<h2>Slaves</h2>");
        let rows: Vec<Vec<String>> = slaves
            .iter()
            .map(|s| {
                vec![
                    esc(&s.addr.to_string()),
                    s.ack_offset.to_string(),
                    size(s.behind_bytes),
                    if s.in_sync { "in sync" } else { "behind" }.to_owned(),
                ]
            })
            .collect();
        out.push_str(&table(
            "slaves",
            &["Slave", "Acked offset", "Behind", "State"],
            &rows,
        ));
    }
    out.push_str("<div class=\"plots\">");
    out.push_str(&svg::plot(
        "Messages in, all topics",
        "msg/s",
        &c.history.rate_in(None),
    ));
    out.push_str(&svg::plot(
        "Messages out, all groups",
        "msg/s",
        &c.history.rate_out(None),
    ));
    out.push_str("</div><p class=\"note\">The topics, groups, clients and message pages show the rows of every broker group the name servers know, each with its broker; changes are made on the console of the broker that holds the row.</p>");
    out
}

/// Every topic the viewer may read (of `namespace`, when given): queues, offsets, in
/// rate; create and delete for an admin. Then the other brokers' topics, as each
/// answered the viewer, with a link to their console instead of the delete button.
pub(crate) fn topics(
    c: &Console,
    viewer: &Viewer,
    namespace: Option<&str>,
    others: Option<&Others>,
) -> String {
    let b = &c.broker;
    let admin = viewer.is_admin();
    let mut names = b.storage.topics.topic_names();
    names.retain(|t| in_namespace(namespace, t) && (admin || viewer.reads_topic(t)));
    names.sort();
    let totals: std::collections::BTreeMap<String, u64> =
        b.observed.metrics.topic_in_totals().into_iter().collect();
    let rates = |t: &str| c.history.rate_in(Some(t)).last().map_or(0.0, |p| p.1);
    let own = own_cell(c);
    let mut rows: Vec<Vec<String>> = names
        .iter()
        .filter_map(|n| b.storage.topics.get(n))
        .map(|t| {
            let queues = t.read_queue_nums.max(t.write_queue_nums);
            let messages: i64 = (0..queues)
                .map(|q| {
                    b.storage.store.max_offset_in_queue(&t.topic_name, q)
                        - b.storage.store.min_offset_in_queue(&t.topic_name, q)
                })
                .sum();
            let delete = if !admin || topic::is_system_topic(&t.topic_name) {
                String::new()
            } else {
                form(
                    "/topics/delete",
                    &c.token,
                    &hidden("topic", &t.topic_name),
                    "Delete",
                )
            };
            vec![
                format!(
                    "<a href=\"/topic?name={}\">{}</a>",
                    url(&t.topic_name),
                    esc(&t.topic_name)
                ),
                own.clone(),
                format!("{}/{}", t.read_queue_nums, t.write_queue_nums),
                t.perm.to_string(),
                messages.to_string(),
                totals.get(&t.topic_name).copied().unwrap_or(0).to_string(),
                format!("{:.1}", rates(&t.topic_name)),
                delete,
            ]
        })
        .collect();
    let (theirs, mut out) = other_rows(others, 8, |a, found, rows| {
        let Rows::Topics(found) = found else { return };
        for t in found {
            let action = if topic::is_system_topic(&t.name) {
                String::new()
            } else {
                elsewhere(a, "/topics", &format!("manage on {}", a.peer.name))
            };
            rows.push(vec![
                elsewhere(a, &format!("/topic?name={}", url(&t.name)), &t.name),
                broker_cell(&a.peer.name, &a.peer.addr, a.console.as_deref()),
                format!("{}/{}", t.read_queues, t.write_queues),
                t.perm.to_string(),
                t.messages.map_or_else(|| "-".to_owned(), |m| m.to_string()),
                "-".to_owned(),
                "-".to_owned(),
                action,
            ]);
        }
    });
    rows.extend(theirs);
    out.push_str(&table(
        "topics",
        &[
            "Topic",
            "Broker",
            "Queues (r/w)",
            "Perm",
            "Messages kept",
            "In since start",
            "In msg/s",
            "",
        ],
        &rows,
    ));
    if admin {
        out.push_str("<h2>Create a topic on this broker</h2>");
        out.push_str(&form(
            "/topics/create",
            &c.token,
            "<label>Name <input name=\"topic\" required></label> <label>Queues <input name=\"queues\" type=\"number\" value=\"8\" min=\"1\" max=\"1024\"></label> ",
            "Create",
        ));
    }
    out
}

/// One topic: queues with offsets, in rate over the hour.
pub(crate) fn topic(c: &Console, viewer: &Viewer, name: &str) -> String {
    let b = &c.broker;
    let Some(t) = b.storage.topics.get(name) else {
        return format!("<p class=\"warn\">No topic {} here.</p>", esc(name));
    };
    let rows: Vec<Vec<String>> = (0..t.read_queue_nums.max(t.write_queue_nums))
        .map(|q| {
            let (min, max) = (
                b.storage.store.min_offset_in_queue(name, q),
                b.storage.store.max_offset_in_queue(name, q),
            );
            vec![
                q.to_string(),
                min.to_string(),
                max.to_string(),
                time(
                    b.storage
                        .store
                        .message_store_timestamp(name, q, max - 1)
                        .unwrap_or(0),
                ),
                format!(
                    "<a href=\"/browse?topic={}&amp;queue={q}\">browse</a>",
                    url(name)
                ),
            ]
        })
        .collect();
    let mut out = table(
        "queues",
        &["Queue", "Min offset", "Max offset", "Last stored", ""],
        &rows,
    );
    let mut links = Vec::new();
    if viewer.is_admin() {
        links.push(format!(
            "<a href=\"/topic/edit?name={}\" id=\"edit-topic\">Change permission or queues</a>",
            url(name)
        ));
    }
    if viewer.may_send(name) {
        links.push(format!(
            "<a href=\"/send?topic={}\" id=\"send-test\">Send a test message</a>",
            url(name)
        ));
    }
    if !links.is_empty() {
        let _ = write!(out, "<p>{}</p>", links.join(" · "));
    }
    let groups: Vec<String> = crate::ops::message_status::groups_of_topic(&b.consumers, name)
        .into_iter()
        .filter(|g| viewer.reads_group(g))
        .map(|g| format!("<a href=\"/group?name={}\">{}</a>", url(&g), esc(&g)))
        .collect();
    let _ = write!(
        out,
        "<p>Consumed by: {}</p>",
        if groups.is_empty() {
            "no group".to_owned()
        } else {
            groups.join(", ")
        }
    );
    out.push_str(&svg::plot(
        &format!("Messages in, {name}"),
        "msg/s",
        &c.history.rate_in(Some(name)),
    ));
    out
}

/// Every group the viewer may read: lag in messages and time, DLQ, clients; then the
/// other brokers' groups, as each answered the viewer.
pub(crate) fn groups(
    c: &Console,
    viewer: &Viewer,
    namespace: Option<&str>,
    others: Option<&Others>,
) -> String {
    let b = &c.broker;
    let now = now_millis();
    let own = own_cell(c);
    // The broker's own groups (revive, transaction check) are not the operator's.
    let mut rows: Vec<Vec<String>> = crate::ops::lag::known_groups(&b.consumers)
        .into_iter()
        .filter(|g| {
            !g.starts_with("CID_RMQ_SYS_") && in_namespace(namespace, g) && viewer.reads_group(g)
        })
        .map(|g| {
            let lag = crate::ops::lag::group_lag(
                &b.storage,
                &b.consumers,
                &b.pop,
                &crate::ops::lag::LagOf::all(&g),
            );
            let behind: i64 = lag.queues.iter().map(|q| q.lag).sum();
            let ms = lag
                .queues
                .iter()
                .map(|q| q.latency_ms(now))
                .max()
                .unwrap_or(0);
            let clients = b
                .consumers
                .clients
                .consumer_group(&g)
                .map_or(0, |i| i.channels.len());
            vec![
                format!("<a href=\"/group?name={}\">{}</a>", url(&g), esc(&g)),
                own.clone(),
                behind.to_string(),
                duration(ms),
                lag.dlq_messages.to_string(),
                clients.to_string(),
            ]
        })
        .collect();
    let dash = || "-".to_owned();
    let (theirs, mut out) = other_rows(others, 6, |a, found, rows| {
        let Rows::Groups(found) = found else { return };
        for g in found {
            rows.push(vec![
                elsewhere(a, &format!("/group?name={}", url(&g.name)), &g.name),
                broker_cell(&a.peer.name, &a.peer.addr, a.console.as_deref()),
                g.lag.map_or_else(dash, |(m, _)| m.to_string()),
                g.lag.map_or_else(dash, |(_, ms)| duration(ms)),
                g.dlq.map_or_else(dash, |d| d.to_string()),
                g.clients.map_or_else(dash, |n| n.to_string()),
            ]);
        }
    });
    rows.extend(theirs);
    out.push_str(&table(
        "groups",
        &[
            "Group",
            "Broker",
            "Lag (messages)",
            "Lag (time)",
            "DLQ",
            "Clients",
        ],
        &rows,
    ));
    if viewer.is_admin() {
        out.push_str("<p><a href=\"/subscription\" id=\"create-group\">Create a group</a></p>");
    }
    out
}

/// One group: per-queue progress, clients, lag over the hour.
pub(crate) fn group(c: &Console, name: &str) -> String {
    let b = &c.broker;
    let now = now_millis();
    let lag = crate::ops::lag::group_lag(
        &b.storage,
        &b.consumers,
        &b.pop,
        &crate::ops::lag::LagOf::all(name),
    );
    let rows: Vec<Vec<String>> = lag
        .queues
        .iter()
        .map(|q| {
            vec![
                esc(&q.topic),
                q.queue_id.to_string(),
                q.broker_offset.to_string(),
                q.consumer_offset
                    .map_or_else(|| "-".into(), |o| o.to_string()),
                q.lag.to_string(),
                duration(q.latency_ms(now)),
                q.inflight.to_string(),
                format!(
                    "<a href=\"/browse?topic={}&amp;group={}&amp;queue={}\">browse</a>",
                    url(&q.topic),
                    url(name),
                    q.queue_id
                ),
            ]
        })
        .collect();
    let total: i64 = lag.queues.iter().map(|q| q.lag).sum();
    let mut out = format!(
        "<p>Behind: <strong id=\"lag-total\">{total}</strong> messages; DLQ: <span id=\"dlq\">{}</span> (<a href=\"/dlq?group={}\" id=\"dlq-page\">dead letters</a>)</p>",
        lag.dlq_messages,
        url(name)
    );
    let _ = write!(
        out,
        "<p><a href=\"/offsets?group={0}\" id=\"reset-offsets\">Reset offsets</a> · <a href=\"/subscription?name={0}\" id=\"group-settings\">Settings</a></p>",
        url(name)
    );
    out.push_str(&table(
        "progress",
        &[
            "Topic",
            "Queue",
            "Broker offset",
            "Consumer offset",
            "Lag",
            "Behind",
            "In flight",
            "",
        ],
        &rows,
    ));
    let clients: Vec<Vec<String>> = b
        .consumers
        .clients
        .connected_clients()
        .into_iter()
        .filter(|x| x.role == "consumer" && x.group == name)
        .map(|x| {
            vec![
                esc(&x.client_id),
                esc(&x.addr),
                esc(&x.language),
                x.version.to_string(),
                duration(x.last_heartbeat_ms_ago),
            ]
        })
        .collect();
    out.push_str("<h2>Clients</h2>");
    out.push_str(&table(
        "clients",
        &[
            "Client id",
            "Address",
            "Language",
            "Version",
            "Last heartbeat",
        ],
        &clients,
    ));
    let (messages, seconds) = c.history.lag(name);
    out.push_str("<div class=\"plots\">");
    out.push_str(&svg::plot("Lag, messages", "msgs", &messages));
    out.push_str(&svg::plot("Lag, seconds behind", "s", &seconds));
    out.push_str(&svg::plot(
        "Messages out",
        "msg/s",
        &c.history.rate_out(Some(name)),
    ));
    out.push_str("</div>");
    out
}

/// Connected producers and consumers; then the consumers online on the other
/// brokers.
pub(crate) fn clients(c: &Console, others: Option<&Others>) -> String {
    let own = own_cell(c);
    let mut rows: Vec<Vec<String>> = c
        .broker
        .consumers
        .clients
        .connected_clients()
        .into_iter()
        .map(|x| {
            vec![
                x.role,
                own.clone(),
                esc(&x.group),
                esc(&x.client_id),
                esc(&x.addr),
                esc(&x.language),
                x.version.to_string(),
                x.consume_type,
                duration(x.last_heartbeat_ms_ago),
            ]
        })
        .collect();
    let (theirs, mut out) = other_rows(others, 9, |a, found, rows| {
        let Rows::Clients(found) = found else { return };
        for x in found {
            rows.push(vec![
                "consumer".to_owned(),
                broker_cell(&a.peer.name, &a.peer.addr, a.console.as_deref()),
                esc(&x.group),
                esc(&x.client_id),
                esc(&x.addr),
                esc(&x.language),
                x.version.to_string(),
                esc(&x.consume_type),
                "-".to_owned(),
            ]);
        }
    });
    rows.extend(theirs);
    out.push_str(&table(
        "connected",
        &[
            "Role",
            "Broker",
            "Group",
            "Client id",
            "Address",
            "Language",
            "Version",
            "Consume",
            "Last heartbeat",
        ],
        &rows,
    ));
    out
}
