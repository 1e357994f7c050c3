//! Who becomes master (RocketMQ `DefaultElectPolicy`, docs/controller.md#election):
//! among the alive members of the SyncStateSet — every alive replica only with
//! `enableElectUncleanMaster` — the highest epoch wins, then the highest max
//! offset, then the lowest `brokerElectionPriority`, then the lowest id. Pure.

use super::heartbeat::LiveInfo;
use super::info::BrokerGroup;

/// A replica as the policy sees it: `None` = not alive.
pub type Liveness<'a> = &'a dyn Fn(i64) -> Option<LiveInfo>;

/// The new master of `group`, `None` when nobody qualifies. `designated`: an
/// operator's choice, elected only if it qualifies too.
pub fn elect(
    group: &BrokerGroup,
    alive: Liveness<'_>,
    unclean: bool,
    designated: Option<i64>,
) -> Option<i64> {
    let qualifies = |id: &i64| {
        group.replicas.contains_key(id)
            && alive(*id).is_some()
            && (unclean || group.sync_state_set.contains(id) || group.first_election())
    };
    if let Some(id) = designated {
        return qualifies(&id).then_some(id);
    }
    group
        .replicas
        .keys()
        .filter(|id| qualifies(id))
        .filter_map(|id| alive(*id).map(|info| (*id, info)))
        .max_by(|(a_id, a), (b_id, b)| {
            a.epoch
                .cmp(&b.epoch)
                .then(a.max_offset.cmp(&b.max_offset))
                .then(b.priority.cmp(&a.priority))
                .then(b_id.cmp(a_id))
        })
        .map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::replicas::info::Replica;

    fn group(sss: &[i64]) -> BrokerGroup {
        BrokerGroup {
            replicas: (1..=3).map(|id| (id, Replica::default())).collect(),
            master: Some(1),
            master_epoch: 3,
            sync_state_set: sss.iter().copied().collect::<BTreeSet<_>>(),
            sync_state_set_epoch: 5,
            ..BrokerGroup::default()
        }
    }

    fn live(table: &BTreeMap<i64, (i32, i64, i32)>) -> impl Fn(i64) -> Option<LiveInfo> + '_ {
        move |id| {
            table
                .get(&id)
                .map(|&(epoch, max_offset, priority)| LiveInfo {
                    epoch,
                    max_offset,
                    priority,
                    ..LiveInfo::default()
                })
        }
    }

    #[test]
    fn only_alive_in_sync_replicas_unless_unclean() {
        // 1 (master) is dead; 3 is alive but not in sync.
        let g = group(&[1, 2]);
        let table = BTreeMap::from([(2, (3, 100, 0)), (3, (3, 500, 0))]);
        assert_eq!(elect(&g, &live(&table), false, None), Some(2));
        assert_eq!(elect(&g, &live(&table), true, None), Some(3));
        let only3 = BTreeMap::from([(3, (3, 500, 0))]);
        assert_eq!(elect(&g, &live(&only3), false, None), None);
        assert_eq!(elect(&g, &live(&only3), true, None), Some(3));
    }

    #[test]
    fn epoch_then_offset_then_priority_then_id() {
        let g = group(&[1, 2, 3]);
        let by_epoch = BTreeMap::from([(2, (4, 100, 0)), (3, (3, 900, 0))]);
        assert_eq!(elect(&g, &live(&by_epoch), false, None), Some(2));
        let by_offset = BTreeMap::from([(2, (3, 100, 0)), (3, (3, 900, 0))]);
        assert_eq!(elect(&g, &live(&by_offset), false, None), Some(3));
        let by_priority = BTreeMap::from([(2, (3, 100, 5)), (3, (3, 100, 1))]);
        assert_eq!(elect(&g, &live(&by_priority), false, None), Some(3));
        let by_id = BTreeMap::from([(2, (3, 100, 1)), (3, (3, 100, 1))]);
        assert_eq!(elect(&g, &live(&by_id), false, None), Some(2));
    }

    #[test]
    fn a_designated_replica_must_qualify() {
        let g = group(&[1, 2]);
        let table = BTreeMap::from([(2, (3, 100, 0)), (3, (3, 500, 0))]);
        assert_eq!(elect(&g, &live(&table), false, Some(2)), Some(2));
        assert_eq!(elect(&g, &live(&table), false, Some(3)), None);
        assert_eq!(elect(&g, &live(&table), false, Some(1)), None);
    }

    #[test]
    fn the_first_election_takes_any_alive_replica() {
        let mut g = group(&[]);
        g.master = None;
        g.master_epoch = 0;
        let table = BTreeMap::from([(3, (0, 0, 0))]);
        assert_eq!(elect(&g, &live(&table), false, None), Some(3));
    }
}
