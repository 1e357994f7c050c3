//! The tier's read cache: blocks of segment data and queue indexes, least recently
//! used first out once the budget (`tieredStoreReadCacheMaxSize`) is exceeded.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::SegmentIndex;

#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum CacheKey {
    Block(i64, u64),
    Index(i64),
}

#[derive(Clone)]
pub(super) enum Cached {
    Block(Bytes),
    Index(Arc<SegmentIndex>),
}

/// The read cache: least recently used entries go first once `max` bytes are held.
#[derive(Default)]
pub(super) struct Cache {
    entries: HashMap<CacheKey, (Cached, u64, u64)>,
    pub(super) bytes: u64,
    tick: u64,
}

impl Cache {
    pub(super) fn get(&mut self, key: &CacheKey) -> Option<Cached> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(key).map(|(v, _, t)| {
            *t = tick;
            v.clone()
        })
    }

    pub(super) fn put(&mut self, key: CacheKey, value: Cached, weight: u64, max: u64) {
        self.tick += 1;
        if let Some((_, w, _)) = self.entries.insert(key, (value, weight, self.tick)) {
            self.bytes -= w;
        }
        self.bytes += weight;
        while self.bytes > max && self.entries.len() > 1 {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, _, t))| *t)
                .map(|(k, _)| k.clone());
            match oldest.and_then(|k| self.entries.remove(&k)) {
                Some((_, w, _)) => self.bytes -= w,
                None => break,
            }
        }
    }

    pub(super) fn forget(&mut self, base: i64) {
        let bytes = &mut self.bytes;
        self.entries.retain(|k, (_, w, _)| {
            let keep = !matches!(k, CacheKey::Block(b, _) | CacheKey::Index(b) if *b == base);
            if !keep {
                *bytes -= *w;
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_drops_the_least_recently_used_first() {
        let mut c = Cache::default();
        let b = |n: usize| Cached::Block(Bytes::from(vec![0u8; n]));
        c.put(CacheKey::Block(0, 0), b(40), 40, 100);
        c.put(CacheKey::Block(0, 1), b(40), 40, 100);
        assert!(c.get(&CacheKey::Block(0, 0)).is_some());
        c.put(CacheKey::Block(0, 2), b(40), 40, 100);
        assert!(
            c.get(&CacheKey::Block(0, 1)).is_none(),
            "least recently used"
        );
        assert!(c.get(&CacheKey::Block(0, 0)).is_some());
        assert_eq!(c.bytes, 80);
        c.forget(0);
        assert_eq!(c.bytes, 0);
    }
}
