//! Crash-safe JSON files (`kvConfig.json`).
//!
//! Writing: the new content goes to `<file>.tmp` and is fsynced; the current file is
//! renamed to `<file>.bak`; the temporary file is renamed into place; the directory
//! is fsynced so that both renames survive a crash. Every step is atomic, so after a
//! crash at any point either the file or its backup holds a complete version.
//!
//! Loading: the file, else (missing, empty or unparsable) its backup. A file that is
//! corrupt with no usable backup is an error rather than an empty table: starting
//! with the operator's settings silently gone is worse than not starting.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use tracing::warn;

use crate::error::NamesrvError;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `<file>.bak`: the previous version.
pub fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// Replaces `path` with `bytes`, keeping the previous version as `<file>.bak`.
/// Blocking: call it off the async reactor.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), NamesrvError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(|e| NamesrvError::io("create directory", &dir, e))?;
    let tmp = with_suffix(path, ".tmp");
    {
        let mut file = fs::File::create(&tmp).map_err(|e| NamesrvError::io("create", &tmp, e))?;
        file.write_all(bytes)
            .map_err(|e| NamesrvError::io("write", &tmp, e))?;
        file.sync_all()
            .map_err(|e| NamesrvError::io("fsync", &tmp, e))?;
    }
    let bak = backup_path(path);
    match fs::rename(path, &bak) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(NamesrvError::io("back up", path, e)),
    }
    fs::rename(&tmp, path).map_err(|e| NamesrvError::io("rename into place", path, e))?;
    sync_dir(&dir)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), NamesrvError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| NamesrvError::io("fsync directory", dir, e))
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), NamesrvError> {
    // Directories cannot be opened for fsync here; the renames are still atomic.
    Ok(())
}

/// Why one candidate file gave nothing.
enum Attempt<T> {
    Parsed(T),
    Missing,
    Empty,
    Corrupt(vostok_remoting::DecodeError),
}

fn attempt<T: DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<Attempt<T>, NamesrvError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Attempt::Missing),
        Err(e) => return Err(NamesrvError::io("read", path, e)),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Attempt::Empty);
    }
    Ok(
        match vostok_remoting::protocol::json::from_slice(what, &bytes) {
            Ok(value) => Attempt::Parsed(value),
            Err(e) => Attempt::Corrupt(e),
        },
    )
}

/// Loads `path`, falling back to its backup; `None` when neither holds anything.
/// Blocking: call it off the async reactor.
pub fn load<T: DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<Option<T>, NamesrvError> {
    let main = attempt(path, what)?;
    let main_error = match main {
        Attempt::Parsed(value) => return Ok(Some(value)),
        Attempt::Missing | Attempt::Empty => None,
        Attempt::Corrupt(e) => Some(e),
    };
    let bak = backup_path(path);
    match attempt(&bak, what)? {
        Attempt::Parsed(value) => {
            warn!(path = %path.display(), backup = %bak.display(), error = ?main_error.as_ref().map(ToString::to_string), "file unusable; loaded its backup");
            Ok(Some(value))
        }
        Attempt::Missing | Attempt::Empty => match main_error {
            None => Ok(None),
            Some(source) => Err(NamesrvError::Corrupt {
                path: path.to_path_buf(),
                source,
            }),
        },
        Attempt::Corrupt(bak_error) => Err(NamesrvError::Corrupt {
            path: path.to_path_buf(),
            source: main_error.unwrap_or(bak_error),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Table = BTreeMap<String, String>;

    fn table(k: &str, v: &str) -> Table {
        [(k.to_owned(), v.to_owned())].into()
    }

    #[test]
    fn writes_replace_and_keep_the_previous_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("kv.json");
        assert!(load::<Table>(&path, "kv").unwrap().is_none());
        write(&path, br#"{"a":"1"}"#).unwrap();
        write(&path, br#"{"a":"2"}"#).unwrap();
        assert_eq!(load::<Table>(&path, "kv").unwrap(), Some(table("a", "2")));
        assert_eq!(fs::read(backup_path(&path)).unwrap(), br#"{"a":"1"}"#);
        assert!(!with_suffix(&path, ".tmp").exists());
    }

    #[test]
    fn falls_back_to_the_backup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.json");
        write(&path, br#"{"a":"1"}"#).unwrap();
        write(&path, br#"{"a":"2"}"#).unwrap();
        // A crash between the two renames leaves only the backup.
        fs::remove_file(&path).unwrap();
        assert_eq!(load::<Table>(&path, "kv").unwrap(), Some(table("a", "1")));
        // A torn or empty file also falls back.
        fs::write(&path, b"{\"a\":").unwrap();
        assert_eq!(load::<Table>(&path, "kv").unwrap(), Some(table("a", "1")));
        fs::write(&path, b"").unwrap();
        assert_eq!(load::<Table>(&path, "kv").unwrap(), Some(table("a", "1")));
    }

    #[test]
    fn corrupt_without_backup_is_an_error_but_empty_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.json");
        fs::write(&path, b"not json").unwrap();
        let err = load::<Table>(&path, "kv").unwrap_err();
        assert!(matches!(err, NamesrvError::Corrupt { .. }), "{err}");
        fs::write(&path, b"  \n").unwrap();
        assert!(load::<Table>(&path, "kv").unwrap().is_none());
        fs::write(backup_path(&path), b"garbage").unwrap();
        fs::write(&path, b"also garbage").unwrap();
        assert!(load::<Table>(&path, "kv").is_err());
    }
}
