//! Clocks and local time.
//!
//! * [`now_millis`]: wall-clock milliseconds since the epoch, what RocketMQ stores in
//!   records (born and store timestamps), offsets files and timers.
//! * [`coarse_now_millis`]: the same wall clock as of the last timer tick, for checks
//!   made on every request against windows of minutes (a signed request's age).
//! * [`monotonic`]: Tokio's clock as a `std::time::Instant`. In production it is
//!   `Instant::now()`; in tests that pause Tokio's time it stands still or moves by
//!   hand, so expiry sweeps and the events they compare against agree on "now".
//! * [`uptime_millis`]: monotonic milliseconds since the process first asked, for
//!   per-connection bookkeeping (idle and activity times) that is only compared, never
//!   shown as a date.
//! * [`LocalTime`]: broken-down local time, for RocketMQ's local-time formats
//!   (`yyyyMMddHHmmss` consume timestamps, `yyyyMMddHHmmssSSS` index file names), the
//!   retention hour and the month bounds of message ids. The C library does the time
//!   zone work (`localtime_r`/`mktime`, honouring `TZ`), as the JVM does for Java.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the epoch (0 if the clock is before 1970).
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Wall-clock milliseconds since the epoch, as [`now_millis`] but read from the
/// kernel's coarse clock (`CLOCK_REALTIME_COARSE`: the time of the last timer tick, a
/// few milliseconds behind at most, without reading the hardware counter): for checks
/// against windows of seconds or minutes made on every request, such as the age of a
/// signed request. Falls back to [`now_millis`] where the clock is missing.
#[cfg(target_os = "linux")]
pub fn coarse_now_millis() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } != 0 || ts.tv_sec < 0 {
        return now_millis();
    }
    // `time_t` and `c_long` are 32 bits on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let (secs, nanos) = (ts.tv_sec as i64, ts.tv_nsec as i64);
    secs * 1000 + nanos / 1_000_000
}

/// [`now_millis`] where the coarse clock is not known.
#[cfg(not(target_os = "linux"))]
pub fn coarse_now_millis() -> i64 {
    now_millis()
}

/// Milliseconds since the epoch of a `SystemTime` (0 before 1970).
pub fn millis_of(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Tokio's clock as a std `Instant` (see the module docs). Outside a runtime with
/// paused time it is `Instant::now()`.
pub fn monotonic() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Milliseconds since the first call in this process, from the monotonic clock.
pub fn uptime_millis() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Broken-down local time of a millisecond timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i32,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

impl LocalTime {
    /// The local time of `ms` since the epoch; `None` only if the C library cannot
    /// represent it.
    pub fn of_millis(ms: i64) -> Option<LocalTime> {
        let secs = ms.div_euclid(1000) as libc::time_t;
        // SAFETY: localtime_r only writes the `tm` we own; a zeroed `tm` is valid.
        let tm = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            if libc::localtime_r(&secs, &mut tm).is_null() {
                return None;
            }
            tm
        };
        Some(LocalTime {
            year: tm.tm_year + 1900,
            month: (tm.tm_mon + 1) as u32,
            day: tm.tm_mday as u32,
            hour: tm.tm_hour as u32,
            minute: tm.tm_min as u32,
            second: tm.tm_sec as u32,
            millis: ms.rem_euclid(1000) as u32,
        })
    }

    /// Milliseconds since the epoch of this local time (fields out of range are
    /// normalised, as `mktime` does: month 13 is January of the next year).
    pub fn to_millis(&self) -> Option<i64> {
        // SAFETY: mktime only reads and normalises the `tm` we own.
        let secs = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            tm.tm_year = self.year - 1900;
            tm.tm_mon = self.month as i32 - 1;
            tm.tm_mday = self.day as i32;
            tm.tm_hour = self.hour as i32;
            tm.tm_min = self.minute as i32;
            tm.tm_sec = self.second as i32;
            tm.tm_isdst = -1;
            libc::mktime(&mut tm)
        };
        (secs != -1).then_some(secs as i64 * 1000 + self.millis as i64)
    }

    /// `yyyyMMddHHmmss`, RocketMQ's consume-timestamp form.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `yyyyMMddHHmmssSSS`, RocketMQ's index file names.
    pub fn compact_millis(&self) -> String {
        format!("{}{:03}", self.compact(), self.millis)
    }

    /// Parses `yyyyMMddHHmmss`.
    pub fn parse_compact(s: &str) -> Option<LocalTime> {
        if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n = |r: std::ops::Range<usize>| s[r].parse::<u32>().ok();
        Some(LocalTime {
            year: n(0..4)? as i32,
            month: n(4..6)?,
            day: n(6..8)?,
            hour: n(8..10)?,
            minute: n(10..12)?,
            second: n(12..14)?,
            millis: 0,
        })
    }
}

/// `yyyyMMddHHmmss` of `ms` in local time (`19700101000000` if unrepresentable).
pub fn format_compact(ms: i64) -> String {
    LocalTime::of_millis(ms).map_or_else(|| "19700101000000".into(), |t| t.compact())
}

/// Milliseconds since the epoch of a local `yyyyMMddHHmmss`.
pub fn parse_compact(s: &str) -> Option<i64> {
    LocalTime::parse_compact(s)?.to_millis()
}

/// Start and end (ms since the epoch) of the local-time month containing `ms`; a day
/// around `ms` if the C library cannot tell.
pub fn month_bounds(ms: i64) -> (i64, i64) {
    let bounds = LocalTime::of_millis(ms).and_then(|t| {
        let first = LocalTime {
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            millis: 0,
            ..t
        };
        let next = LocalTime {
            month: first.month + 1,
            ..first
        };
        Some((first.to_millis()?, next.to_millis()?))
    });
    bounds.unwrap_or_else(|| {
        let start = ms - ms.rem_euclid(86_400_000);
        (start, start + 86_400_000)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coarse clock is the wall clock of the last tick: never ahead of the fine
    /// one read after it, and far less than a second behind.
    #[test]
    fn the_coarse_clock_is_the_wall_clock() {
        for _ in 0..100 {
            let coarse = coarse_now_millis();
            let fine = now_millis();
            assert!(coarse <= fine && fine - coarse < 1000, "{coarse} {fine}");
        }
    }

    #[test]
    fn compact_forms_round_trip() {
        let now = now_millis() / 1000 * 1000;
        assert_eq!(parse_compact(&format_compact(now)), Some(now));
        assert!(parse_compact("2024").is_none());
        assert!(parse_compact("2024010100000x").is_none());
        let t = LocalTime::of_millis(now + 7).unwrap();
        assert_eq!(t.compact_millis(), format!("{}007", t.compact()));
    }

    #[test]
    fn month_bounds_hold_the_instant() {
        let now = now_millis();
        let (start, end) = month_bounds(now);
        assert!(start <= now && now < end);
        let first = LocalTime::of_millis(start).unwrap();
        assert_eq!((first.day, first.hour, first.minute), (1, 0, 0));
        assert!(end - start >= 28 * 86_400_000 - 3_600_000);
    }

    #[test]
    fn coarse_millis_never_goes_back() {
        let a = uptime_millis();
        assert!(uptime_millis() >= a);
    }
}
