//! The replicated metadata (RocketMQ `ReplicasInfoManager`, docs/controller.md#state):
//! per broker group its replicas, its master with the master epoch, and its
//! SyncStateSet with the SyncStateSet epoch. It changes only by [`Command`]s applied in
//! Raft log order, so every controller holds the same groups; a command carries the
//! leader's decision (who is elected) and the epochs it was decided on, and is refused
//! here when those epochs moved meanwhile. Pure: no I/O, no clock.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use vostok_remoting::protocol::response_code;

/// One broker of a group, as it registered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    /// Main (remoting) address, `ip:port`.
    pub addr: String,
    /// Replication address, `ip:port` (Vostok brokers send it; Java brokers do not).
    pub ha_addr: Option<String>,
    /// `brokerAddr;timestamp` of the APPLY_BROKER_ID that claimed the id.
    pub check_code: String,
}

/// One broker group (cluster, brokerName).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerGroup {
    pub cluster: String,
    pub broker_name: String,
    pub replicas: BTreeMap<i64, Replica>,
    pub master: Option<i64>,
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

impl BrokerGroup {
    pub fn master_addr(&self) -> Option<&str> {
        self.master
            .and_then(|m| self.replicas.get(&m))
            .map(|r| r.addr.as_str())
    }

    pub fn master_ha_addr(&self) -> Option<&str> {
        self.master
            .and_then(|m| self.replicas.get(&m))
            .and_then(|r| r.ha_addr.as_deref())
    }

    /// Never had a master: the first broker asking is elected (Apache
    /// `SyncStateInfo.isFirstTimeForElect`).
    pub fn first_election(&self) -> bool {
        self.master_epoch == 0
    }
}

/// A change to the metadata, as the Raft log carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// CONTROLLER_APPLY_BROKER_ID: claim `broker_id` in the group.
    ApplyBrokerId {
        cluster: String,
        broker_name: String,
        broker_id: i64,
        check_code: String,
    },
    /// CONTROLLER_REGISTER_BROKER: a broker with an id says where it is.
    RegisterBroker {
        broker_name: String,
        broker_id: i64,
        addr: String,
        ha_addr: Option<String>,
    },
    /// CONTROLLER_ALTER_SYNC_STATE_SET from the master of `master_epoch`.
    AlterSyncStateSet {
        broker_name: String,
        master_id: i64,
        master_epoch: i32,
        sync_state_set_epoch: i32,
        new_set: BTreeSet<i64>,
    },
    /// A new master (decided by the leader on `expected_epoch`); `None` leaves the
    /// group without one.
    ElectMaster {
        broker_name: String,
        new_master: Option<i64>,
        expected_epoch: i32,
    },
    /// CLEAN_BROKER_DATA: forget some replicas, or the whole group (`ids` = None).
    CleanBrokerData {
        broker_name: String,
        ids: Option<BTreeSet<i64>>,
    },
}

/// What applying a command gave: a response code, a remark, and the group after it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub code: i32,
    pub remark: Option<String>,
    pub group: Option<BrokerGroup>,
    /// ALTER_SYNC_STATE_SET's new epoch.
    pub new_sync_state_set_epoch: Option<i32>,
}

impl Outcome {
    fn ok(group: &BrokerGroup) -> Outcome {
        Outcome {
            code: response_code::SUCCESS,
            group: Some(group.clone()),
            ..Outcome::default()
        }
    }

    fn refused(code: i32, remark: impl Into<String>, group: Option<&BrokerGroup>) -> Outcome {
        Outcome {
            code,
            remark: Some(remark.into()),
            group: group.cloned(),
            ..Outcome::default()
        }
    }
}

/// All groups, by broker name (RocketMQ keys its table the same way).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicasInfo {
    pub groups: BTreeMap<String, BrokerGroup>,
}

impl ReplicasInfo {
    pub fn group(&self, broker_name: &str) -> Option<&BrokerGroup> {
        self.groups.get(broker_name)
    }

    /// CONTROLLER_GET_NEXT_BROKER_ID: one above the highest id given out (ids start at 1).
    pub fn next_broker_id(&self, broker_name: &str) -> i64 {
        self.group(broker_name)
            .and_then(|g| g.replicas.keys().next_back().copied())
            .map_or(1, |max| max + 1)
    }

    pub fn apply(&mut self, command: Command) -> Outcome {
        match command {
            Command::ApplyBrokerId {
                cluster,
                broker_name,
                broker_id,
                check_code,
            } => self.apply_broker_id(cluster, broker_name, broker_id, check_code),
            Command::RegisterBroker {
                broker_name,
                broker_id,
                addr,
                ha_addr,
            } => {
                let Some(group) = self.groups.get_mut(&broker_name) else {
                    return not_exist(&broker_name, broker_id);
                };
                let Some(replica) = group.replicas.get_mut(&broker_id) else {
                    return not_exist(&broker_name, broker_id);
                };
                replica.addr = addr;
                replica.ha_addr = ha_addr;
                Outcome::ok(group)
            }
            Command::AlterSyncStateSet {
                broker_name,
                master_id,
                master_epoch,
                sync_state_set_epoch,
                new_set,
            } => {
                let Some(group) = self.groups.get_mut(&broker_name) else {
                    return Outcome::refused(
                        response_code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                        format!("no broker group {broker_name}"),
                        None,
                    );
                };
                alter_sync_state_set(
                    group,
                    master_id,
                    master_epoch,
                    sync_state_set_epoch,
                    new_set,
                )
            }
            Command::ElectMaster {
                broker_name,
                new_master,
                expected_epoch,
            } => {
                let Some(group) = self.groups.get_mut(&broker_name) else {
                    return Outcome::refused(
                        response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
                        format!("no broker group {broker_name}"),
                        None,
                    );
                };
                elect(group, new_master, expected_epoch)
            }
            Command::CleanBrokerData { broker_name, ids } => {
                match ids {
                    None => {
                        self.groups.remove(&broker_name);
                    }
                    Some(ids) => {
                        if let Some(group) = self.groups.get_mut(&broker_name) {
                            group.replicas.retain(|id, _| !ids.contains(id));
                            group.sync_state_set.retain(|id| !ids.contains(id));
                            if group.master.is_some_and(|m| ids.contains(&m)) {
                                group.master = None;
                            }
                            if group.replicas.is_empty() {
                                self.groups.remove(&broker_name);
                            }
                        }
                    }
                }
                Outcome {
                    code: response_code::SUCCESS,
                    group: self.groups.get(&broker_name).cloned(),
                    ..Outcome::default()
                }
            }
        }
    }

    fn apply_broker_id(
        &mut self,
        cluster: String,
        broker_name: String,
        broker_id: i64,
        check_code: String,
    ) -> Outcome {
        if broker_id <= 0 {
            return Outcome::refused(
                response_code::CONTROLLER_BROKER_ID_INVALID,
                format!("broker id {broker_id} is not positive"),
                None,
            );
        }
        let group = self
            .groups
            .entry(broker_name.clone())
            .or_insert_with(|| BrokerGroup {
                cluster,
                broker_name,
                ..BrokerGroup::default()
            });
        match group.replicas.get(&broker_id) {
            Some(r) if r.check_code == check_code => Outcome::ok(group),
            Some(_) => Outcome::refused(
                response_code::CONTROLLER_BROKER_ID_INVALID,
                format!("broker id {broker_id} belongs to another broker"),
                Some(group),
            ),
            None => {
                let addr = check_code.split(';').next().unwrap_or_default().to_owned();
                group.replicas.insert(
                    broker_id,
                    Replica {
                        addr,
                        ha_addr: None,
                        check_code,
                    },
                );
                Outcome::ok(group)
            }
        }
    }
}

fn not_exist(broker_name: &str, broker_id: i64) -> Outcome {
    Outcome::refused(
        response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
        format!("broker {broker_name} id {broker_id} has no id from this controller"),
        None,
    )
}

/// RocketMQ `ReplicasInfoManager.alterSyncStateSet`'s checks, in its order.
fn alter_sync_state_set(
    group: &mut BrokerGroup,
    master_id: i64,
    master_epoch: i32,
    sync_state_set_epoch: i32,
    new_set: BTreeSet<i64>,
) -> Outcome {
    if group.master != Some(master_id) || group.master_epoch != master_epoch {
        return Outcome::refused(
            response_code::CONTROLLER_FENCED_MASTER_EPOCH,
            format!(
                "master {master_id} of epoch {master_epoch} is not the master (now {:?} of epoch {})",
                group.master, group.master_epoch
            ),
            Some(group),
        );
    }
    if group.sync_state_set_epoch != sync_state_set_epoch {
        return Outcome::refused(
            response_code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            format!(
                "SyncStateSet epoch {sync_state_set_epoch} is stale (now {})",
                group.sync_state_set_epoch
            ),
            Some(group),
        );
    }
    if new_set == group.sync_state_set {
        return Outcome::refused(
            response_code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "the SyncStateSet is unchanged",
            Some(group),
        );
    }
    if let Some(id) = new_set.iter().find(|id| !group.replicas.contains_key(id)) {
        return Outcome::refused(
            response_code::CONTROLLER_INVALID_REPLICAS,
            format!("replica {id} is not registered"),
            Some(group),
        );
    }
    if !new_set.contains(&master_id) {
        return Outcome::refused(
            response_code::CONTROLLER_INVALID_MASTER,
            "the new SyncStateSet must hold the master",
            Some(group),
        );
    }
    group.sync_state_set = new_set;
    group.sync_state_set_epoch += 1;
    Outcome {
        new_sync_state_set_epoch: Some(group.sync_state_set_epoch),
        ..Outcome::ok(group)
    }
}

fn elect(group: &mut BrokerGroup, new_master: Option<i64>, expected_epoch: i32) -> Outcome {
    if group.master_epoch != expected_epoch {
        return Outcome::refused(
            response_code::CONTROLLER_ELECT_MASTER_FAILED,
            format!(
                "decided on master epoch {expected_epoch}, now {}",
                group.master_epoch
            ),
            Some(group),
        );
    }
    let Some(id) = new_master else {
        return Outcome::refused(
            response_code::CONTROLLER_MASTER_NOT_AVAILABLE,
            "no replica can be elected",
            Some(group),
        );
    };
    if !group.replicas.contains_key(&id) {
        return Outcome::refused(
            response_code::CONTROLLER_INVALID_REPLICAS,
            format!("replica {id} is not registered"),
            Some(group),
        );
    }
    // A new master starts alone in its SyncStateSet; it adds the replicas that
    // catch up with it (docs/controller.md#election).
    group.master = Some(id);
    group.master_epoch += 1;
    group.sync_state_set = BTreeSet::from([id]);
    group.sync_state_set_epoch += 1;
    Outcome::ok(group)
}

#[cfg(test)]
#[path = "info_tests.rs"]
mod tests;
