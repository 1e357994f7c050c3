//! Broker administration: runtime info, config, delay offsets.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::{json, response_code, version};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::RemotingCommand;

use crate::state::Broker;

/// VIEW_BROKER_STATS_DATA (`statsName`, `statsKey`): a topic's puts or a group's gets
/// over the last minute, hour and day (`statsAll`). Apache answers SYSTEM_ERROR for a
/// key it never counted; a broker keeping no counters (neither the exporter nor the
/// console on) says so with REQUEST_CODE_NOT_SUPPORTED, and `statsAll` prints `-`.
pub(crate) fn view_broker_stats_data(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    if !broker.observed.metrics.is_enabled() {
        return RemotingCommand::response(
            response_code::REQUEST_CODE_NOT_SUPPORTED,
            "this broker keeps per-topic statistics only with metricsExporterType=PROM or consoleEnable=true".to_owned(),
        );
    }
    let field = |k: &str| request.ext_fields.get(k).unwrap_or("").to_owned();
    let (name, key) = (field("statsName"), field("statsKey"));
    let now = vostok_remoting::support::time::now_millis();
    match broker
        .observed
        .windows
        .view(&broker.observed.metrics, &name, &key, now)
    {
        Some(data) => RemotingCommand::success().with_body(json::to_vec(&data)),
        None => RemotingCommand::response(
            response_code::SYSTEM_ERROR,
            format!("The stats <{name}> <{key}> not exist"),
        ),
    }
}

pub(crate) fn get_broker_runtime_info(broker: &Broker) -> RemotingCommand {
    let mut table: BTreeMap<String, String> = broker.storage.store.runtime_info();
    table.extend(broker.health_info());
    let (put_tps, get_tps) = broker.observed.stats.tps();
    let now = vostok_remoting::support::time::now_millis();
    let mut put = |k: &str, v: String| {
        table.insert(k.to_owned(), v);
    };
    put("brokerVersionDesc", "V5_3_3".to_owned());
    put("brokerVersion", version::CURRENT_VERSION.to_string());
    put(
        "brokerImpl",
        format!("vostok {}", env!("CARGO_PKG_VERSION")),
    );
    put("bootTimestamp", broker.observed.boot_timestamp.to_string());
    put(
        "runtime",
        format_uptime(now - broker.observed.boot_timestamp),
    );
    put(
        "msgPutTotalTodayNow",
        broker
            .observed
            .stats
            .put
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    );
    put(
        "msgGetTotalTodayNow",
        broker
            .observed
            .stats
            .get
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    );
    put("putTps", format!("{put_tps:.2}"));
    put("getTransferedTps", format!("{get_tps:.2}"));
    put(
        "sendThreadPoolQueueSize",
        (broker.config.send_thread_pool_queue_capacity - broker.intake.permits.available_permits())
            .to_string(),
    );
    put(
        "sendThreadPoolQueueCapacity",
        broker.config.send_thread_pool_queue_capacity.to_string(),
    );
    put(
        "pullRequestsHeld",
        broker.consumers.long_polling.held_count().to_string(),
    );
    put(
        "timerPendingMessages",
        broker.deferred.timers.pending().to_string(),
    );
    let dedupe = &broker.intake.dedupe;
    let entries = dedupe.len();
    put("duplicationWindowEntries", entries.to_string());
    put(
        "duplicationWindowBytes",
        (entries * crate::state::dedupe::ENTRY_BYTES).to_string(),
    );
    put(
        "duplicationWindowDuplicates",
        dedupe.stats.duplicates.load(Ordering::Relaxed).to_string(),
    );
    put(
        "duplicationWindowEvictedEarly",
        dedupe
            .stats
            .evicted_early
            .load(Ordering::Relaxed)
            .to_string(),
    );
    put(
        "commitLogMinOffset",
        broker.storage.store.min_phy_offset().to_string(),
    );
    put(
        "commitLogMaxOffset",
        broker.storage.store.max_phy_offset().to_string(),
    );
    put(
        "commitLogMaxStoreTimestamp",
        broker.storage.store.last_store_timestamp().to_string(),
    );
    put_ha(broker, &mut put);
    RemotingCommand::success().with_body(json::to_vec(&KvTable { table }))
}

/// GET_BROKER_EPOCH_CACHE (controller mode, docs/controller.md#epoch-file): this
/// broker's epoch history with each epoch's end offset, and its max offset.
pub(crate) fn get_broker_epoch_cache(broker: &Broker) -> RemotingCommand {
    use vostok_remoting::protocol::body::{EpochEntry, EpochEntryCache};
    use vostok_remoting::support::sync::MutexExt;
    let entries = broker.roles.replicas.epochs.locked().entries().to_vec();
    let max = broker.storage.store.max_phy_offset();
    let epoch_list = entries
        .iter()
        .enumerate()
        .map(|(i, &(epoch, start))| EpochEntry {
            epoch,
            start_offset: start,
            end_offset: entries.get(i + 1).map_or(max, |n| n.1),
        })
        .collect();
    let cache = EpochEntryCache {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_name: broker.config.broker_name.clone(),
        broker_id: broker.roles.replicas.broker_id(),
        epoch_list,
        max_offset: max,
    };
    RemotingCommand::success().with_body(json::to_vec(&cache))
}

/// Replication state: a master's slaves (`haSlaves`: `addr:ackOffset:behindBytes:inSync`
/// separated by `;`), a slave's master link; read by `mqadmin clusterList`.
fn put_ha(broker: &Broker, put: &mut impl FnMut(&str, String)) {
    let role = if !broker.config.controller.enable {
        broker.config.broker_role.name()
    } else if broker.is_master() {
        "SYNC_MASTER"
    } else {
        "SLAVE"
    };
    put("brokerRole", role.to_owned());
    for (key, histogram) in broker.storage.store.ha_delay_histograms() {
        put(key, histogram);
    }
    if broker.config.controller.enable {
        let (sss, sss_epoch) = broker.roles.replicas.sync_state_set();
        put(
            "controllerBrokerId",
            broker.roles.replicas.broker_id().to_string(),
        );
        put(
            "masterEpoch",
            broker.roles.replicas.master_epoch().to_string(),
        );
        put(
            "syncStateSet",
            sss.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
        );
        put("syncStateSetEpoch", sss_epoch.to_string());
        put(
            "notifiedMasterEpoch",
            broker.roles.replicas.notified_epoch().to_string(),
        );
        put(
            "masterServicesRunning",
            broker
                .roles
                .replicas
                .master_services
                .is_running()
                .to_string(),
        );
    }
    if broker.is_master() {
        let slaves = broker.storage.store.ha_slaves();
        put("haConnectionCount", slaves.len().to_string());
        put(
            "haInSyncSlaveNums",
            slaves.iter().filter(|s| s.in_sync).count().to_string(),
        );
        put(
            "haPush2SlaveMaxOffset",
            broker.storage.store.ha_push2slave_offset().to_string(),
        );
        put(
            "haWaitingPuts",
            broker.storage.store.ha_waiting_puts().to_string(),
        );
        let list: Vec<String> = slaves
            .iter()
            .map(|s| {
                format!(
                    "{}:{}:{}:{}",
                    s.addr, s.ack_offset, s.behind_bytes, s.in_sync
                )
            })
            .collect();
        put("haSlaves", list.join(";"));
    } else {
        let link = broker.storage.store.ha_master_link();
        put("haMasterAddress", link.master_addr.unwrap_or_default());
        put("haConnected", link.connected.to_string());
        put("haLastReadTimestamp", link.last_read_ms.to_string());
        put(
            "masterAddr",
            broker
                .roles
                .master_addr
                .read_locked()
                .clone()
                .unwrap_or_default(),
        );
    }
}

fn format_uptime(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

pub(crate) fn get_broker_config(broker: &Broker) -> RemotingCommand {
    let pairs = broker.runtime.effective(&broker.config).to_properties();
    let text = vostok_remoting::support::properties::render(&pairs);
    let version = json::to_vec(&broker.storage.topics.data_version());
    let mut response = RemotingCommand::success().with_body(text.into_bytes());
    response
        .ext_fields
        .insert("version", String::from_utf8_lossy(&version));
    response
}

/// GET_ALL_DELAY_OFFSET: `config/delayOffset.json` content.
pub(crate) fn get_all_delay_offset(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.deferred.delay_offsets.encode())
}
