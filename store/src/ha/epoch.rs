//! The epoch file (Apache `EpochFileCache` over `CheckpointFile`, docs/controller.md#epoch-file):
//! which master epoch wrote which part of the commitlog. `<storePathRootDir>/epochFileCheckpoint`,
//! text, as Apache writes it:
//!
//! ```text
//! <number of entries>
//! <CRC32 of the entry lines, as a signed int>
//! <epoch>-<startOffset>      one line per entry, oldest first
//! ```
//!
//! Written crash-safe with a `.bak` of the previous version. A new master appends
//! `(its epoch, its max offset)`; a replica compares its entries with its master's
//! to find the last offset both logs share ([`consistent_point`]).

use std::io;
use std::path::{Path, PathBuf};

use vostok_remoting::support::config_file;

/// Where the epoch file lives in a store.
pub fn epoch_file_path(store_root: &Path) -> PathBuf {
    store_root.join("epochFileCheckpoint")
}

/// The entries of one broker: `(epoch, startOffset)`, ascending in both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochFile {
    path: PathBuf,
    entries: Vec<(i32, i64)>,
}

fn encode(entries: &[(i32, i64)]) -> Vec<u8> {
    let lines: String = entries.iter().map(|(e, s)| format!("{e}-{s}\n")).collect();
    let crc = crc32fast::hash(lines.as_bytes()) as i32;
    format!("{}\n{crc}\n{lines}", entries.len()).into_bytes()
}

fn decode(bytes: &[u8]) -> Option<Vec<(i32, i64)>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    let count: usize = lines.next()?.trim().parse().ok()?;
    let crc: i64 = lines.next()?.trim().parse().ok()?;
    let body: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if body.len() != count {
        return None;
    }
    let joined: String = body.iter().map(|l| format!("{l}\n")).collect();
    if crc != 0 && crc32fast::hash(joined.as_bytes()) as i32 as i64 != crc {
        return None;
    }
    body.iter()
        .map(|l| {
            let (e, s) = l.trim().split_once('-')?;
            Some((e.parse().ok()?, s.parse().ok()?))
        })
        .collect()
}

impl EpochFile {
    /// Loads the file (or its `.bak`); a missing file is an empty history.
    pub fn load(path: PathBuf) -> EpochFile {
        let entries = config_file::load(&path, decode).unwrap_or_default();
        EpochFile { path, entries }
    }

    pub fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(0, |e| e.0)
    }

    fn persist(&self) -> io::Result<()> {
        config_file::persist(&self.path, &encode(&self.entries))
    }

    /// A master of `epoch` starts writing at `start`. An older or equal epoch is
    /// ignored; an epoch that wrote nothing (same start) is replaced.
    pub fn append(&mut self, epoch: i32, start: i64) -> io::Result<()> {
        if let Some(&(last, last_start)) = self.entries.last() {
            if epoch <= last {
                return Ok(());
            }
            if start < last_start {
                return Err(io::Error::other(format!(
                    "epoch {epoch} would start at {start}, before epoch {last} at {last_start}"
                )));
            }
            if start == last_start {
                self.entries.pop();
            }
        }
        self.entries.push((epoch, start));
        self.persist()
    }

    /// Drops the entries starting past `max_offset` (data this log does not hold).
    pub fn truncate_suffix(&mut self, max_offset: i64) -> io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|(_, s)| *s <= max_offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// Takes the master's history for the part of the log this replica holds.
    pub fn adopt(&mut self, master: &[(i32, i64)], max_offset: i64) -> io::Result<()> {
        let entries: Vec<_> = master
            .iter()
            .copied()
            .filter(|(_, s)| *s <= max_offset)
            .collect();
        if entries != self.entries {
            self.entries = entries;
            self.persist()?;
        }
        Ok(())
    }
}

/// The end of the longest prefix two logs share (Apache `findConsistentPoint`):
/// the newest epoch both have with the same start offset, up to where the shorter
/// of the two ends it. `None` when they share no epoch.
pub fn consistent_point(
    local: &[(i32, i64)],
    local_max: i64,
    master: &[(i32, i64)],
    master_max: i64,
) -> Option<i64> {
    let end_of =
        |entries: &[(i32, i64)], i: usize, max: i64| entries.get(i + 1).map_or(max, |next| next.1);
    for (i, &(epoch, start)) in local.iter().enumerate().rev() {
        let Some(j) = master.iter().position(|e| e.0 == epoch) else {
            continue;
        };
        if master[j].1 != start {
            continue;
        }
        return Some(end_of(local, i, local_max).min(end_of(master, j, master_max)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_apache_format_and_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = epoch_file_path(dir.path());
        let mut f = EpochFile::load(path.clone());
        assert_eq!(f.last_epoch(), 0);
        f.append(1, 0).unwrap();
        f.append(2, 4096).unwrap();
        f.append(2, 9999).unwrap(); // same epoch again: ignored
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = "1-0\n2-4096\n";
        let crc = crc32fast::hash(lines.as_bytes()) as i32;
        assert_eq!(text, format!("2\n{crc}\n{lines}"));
        assert_eq!(
            EpochFile::load(path.clone()).entries(),
            &[(1, 0), (2, 4096)]
        );
        // An epoch that wrote nothing is replaced by the next one.
        f.append(3, 4096).unwrap();
        assert_eq!(f.entries(), &[(1, 0), (3, 4096)]);
        assert!(f.append(4, 100).is_err());
        f.truncate_suffix(4000).unwrap();
        assert_eq!(EpochFile::load(path).entries(), &[(1, 0)]);
        assert!(decode(b"1\n5\n1-0\n").is_none(), "bad CRC");
        assert_eq!(
            decode(b"1\n0\n1-0\n"),
            Some(vec![(1, 0)]),
            "CRC 0 is unchecked"
        );
    }

    #[test]
    fn consistent_point_is_where_the_shared_epoch_ends_first() {
        // The old master A wrote epoch 1 up to 1000; B took over at 800 (it had 800).
        let a = [(1, 0)];
        let b = [(1, 0), (2, 800)];
        assert_eq!(consistent_point(&a, 1000, &b, 1500), Some(800));
        // A replica that is behind keeps everything it has.
        assert_eq!(consistent_point(&a, 500, &b, 1500), Some(500));
        // Same history: nothing to cut.
        assert_eq!(consistent_point(&b, 1500, &b, 1500), Some(1500));
        // The replica saw epoch 2 start elsewhere (a fork): fall back to epoch 1.
        let c = [(1, 0), (2, 900)];
        assert_eq!(consistent_point(&c, 1200, &b, 1500), Some(800));
        // No shared epoch at all.
        assert_eq!(consistent_point(&[(5, 0)], 10, &b, 1500), None);
    }
}
