use super::*;

fn apply_id(info: &mut ReplicasInfo, id: i64) -> Outcome {
    info.apply(Command::ApplyBrokerId {
        cluster: "c".into(),
        broker_name: "b".into(),
        broker_id: id,
        check_code: format!("10.0.0.{id}:10911;1"),
    })
}

fn group_of_three() -> ReplicasInfo {
    let mut info = ReplicasInfo::default();
    for id in 1..=3 {
        assert_eq!(apply_id(&mut info, id).code, response_code::SUCCESS);
    }
    info
}

fn elect(info: &mut ReplicasInfo, id: i64, expected_epoch: i32) -> Outcome {
    info.apply(Command::ElectMaster {
        broker_name: "b".into(),
        new_master: Some(id),
        expected_epoch,
    })
}

fn alter(info: &mut ReplicasInfo, master: i64, epoch: i32, sss_epoch: i32, set: &[i64]) -> Outcome {
    info.apply(Command::AlterSyncStateSet {
        broker_name: "b".into(),
        master_id: master,
        master_epoch: epoch,
        sync_state_set_epoch: sss_epoch,
        new_set: set.iter().copied().collect(),
    })
}

#[test]
fn ids_are_given_once_and_reapplying_with_the_same_code_is_fine() {
    let mut info = ReplicasInfo::default();
    assert_eq!(info.next_broker_id("b"), 1);
    assert_eq!(apply_id(&mut info, 1).code, response_code::SUCCESS);
    assert_eq!(info.next_broker_id("b"), 2);
    // Same broker again (a retry): accepted.
    assert_eq!(apply_id(&mut info, 1).code, response_code::SUCCESS);
    // Another broker claiming id 1: refused.
    let other = info.apply(Command::ApplyBrokerId {
        cluster: "c".into(),
        broker_name: "b".into(),
        broker_id: 1,
        check_code: "10.0.0.9:10911;2".into(),
    });
    assert_eq!(other.code, response_code::CONTROLLER_BROKER_ID_INVALID);
    assert_eq!(
        apply_id(&mut info, 0).code,
        response_code::CONTROLLER_BROKER_ID_INVALID
    );
    assert_eq!(info.group("b").unwrap().replicas[&1].addr, "10.0.0.1:10911");
}

#[test]
fn register_needs_an_id_and_records_addresses() {
    let mut info = group_of_three();
    let out = info.apply(Command::RegisterBroker {
        broker_name: "b".into(),
        broker_id: 2,
        addr: "10.0.0.2:10911".into(),
        ha_addr: Some("10.0.0.2:10912".into()),
    });
    assert_eq!(out.code, response_code::SUCCESS);
    let unknown = info.apply(Command::RegisterBroker {
        broker_name: "b".into(),
        broker_id: 7,
        addr: "x:1".into(),
        ha_addr: None,
    });
    assert_eq!(
        unknown.code,
        response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST
    );
    elect(&mut info, 2, 0);
    assert_eq!(
        info.group("b").unwrap().master_ha_addr(),
        Some("10.0.0.2:10912")
    );
}

#[test]
fn an_election_bumps_both_epochs_and_restarts_the_sync_state_set() {
    let mut info = group_of_three();
    assert!(info.group("b").unwrap().first_election());
    let out = elect(&mut info, 1, 0);
    assert_eq!(out.code, response_code::SUCCESS);
    let g = info.group("b").unwrap();
    assert_eq!(
        (g.master, g.master_epoch, g.sync_state_set_epoch),
        (Some(1), 1, 1)
    );
    assert_eq!(g.sync_state_set, BTreeSet::from([1]));
    assert!(!g.first_election());
    // Decided on a stale epoch (a concurrent election won): refused, nothing changes.
    let stale = elect(&mut info, 2, 0);
    assert_eq!(stale.code, response_code::CONTROLLER_ELECT_MASTER_FAILED);
    assert_eq!(info.group("b").unwrap().master, Some(1));
    // Nobody electable: refused, the group keeps its state.
    let none = info.apply(Command::ElectMaster {
        broker_name: "b".into(),
        new_master: None,
        expected_epoch: 1,
    });
    assert_eq!(none.code, response_code::CONTROLLER_MASTER_NOT_AVAILABLE);
    let second = elect(&mut info, 3, 1);
    assert_eq!(second.code, response_code::SUCCESS);
    let g = info.group("b").unwrap();
    assert_eq!(
        (g.master, g.master_epoch, g.sync_state_set_epoch),
        (Some(3), 2, 2)
    );
}

#[test]
fn only_the_current_master_alters_the_sync_state_set() {
    let mut info = group_of_three();
    elect(&mut info, 1, 0);
    let out = alter(&mut info, 1, 1, 1, &[1, 2, 3]);
    assert_eq!(out.code, response_code::SUCCESS);
    assert_eq!(out.new_sync_state_set_epoch, Some(2));
    // Stale SyncStateSet epoch.
    let stale = alter(&mut info, 1, 1, 1, &[1, 2]);
    assert_eq!(
        stale.code,
        response_code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    );
    // Unchanged set.
    let same = alter(&mut info, 1, 1, 2, &[1, 2, 3]);
    assert_eq!(
        same.code,
        response_code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    );
    // Not holding the master, or an unknown replica.
    assert_eq!(
        alter(&mut info, 1, 1, 2, &[2, 3]).code,
        response_code::CONTROLLER_INVALID_MASTER
    );
    assert_eq!(
        alter(&mut info, 1, 1, 2, &[1, 9]).code,
        response_code::CONTROLLER_INVALID_REPLICAS
    );
    // A new master is elected: the old one is fenced by its epoch.
    elect(&mut info, 2, 1);
    let fenced = alter(&mut info, 1, 1, 3, &[1]);
    assert_eq!(fenced.code, response_code::CONTROLLER_FENCED_MASTER_EPOCH);
    let g = info.group("b").unwrap();
    assert_eq!(g.sync_state_set, BTreeSet::from([2]));
    assert_eq!(g.sync_state_set_epoch, 3);
}

#[test]
fn cleaning_removes_replicas_or_the_group() {
    let mut info = group_of_three();
    elect(&mut info, 1, 0);
    alter(&mut info, 1, 1, 1, &[1, 2]);
    info.apply(Command::CleanBrokerData {
        broker_name: "b".into(),
        ids: Some(BTreeSet::from([1])),
    });
    let g = info.group("b").unwrap();
    assert_eq!(g.master, None);
    assert_eq!(g.sync_state_set, BTreeSet::from([2]));
    assert_eq!(g.replicas.len(), 2);
    info.apply(Command::CleanBrokerData {
        broker_name: "b".into(),
        ids: None,
    });
    assert!(info.group("b").is_none());
}
