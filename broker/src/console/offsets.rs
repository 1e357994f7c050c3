//! `/offsets`: a group's offsets on one topic reset to a time (with its zone) or to
//! the end ("skip accumulated"), as `mqadmin resetOffsetByTime` and rocketmq-dashboard
//! do. The reset always asks first, naming how many messages each queue skips or
//! receives again; the broker commits the offsets itself and pushes them to the
//! group's online consumers.

use std::collections::BTreeMap;
use std::fmt::Write;

use vostok_observe::http::HttpRequest;
use vostok_remoting::support::time::{now_millis, LocalTime};

use super::html::{days_from_civil, esc, hidden, table, time, url, zone};
use super::Console;
use crate::ops::offset_reset::{self as op, QueueReset, ResetOffset, ResetTo};

/// A form's field by name, trimmed.
pub(crate) type Field<'a> = &'a (dyn Fn(&str) -> String + Sync);

/// The broker's zone now, in minutes east of UTC.
fn local_offset_minutes(ms: i64) -> i64 {
    LocalTime::of_millis(ms).map_or(0, |t| {
        let as_utc = days_from_civil(t.year, t.month, t.day) * 86_400_000
            + i64::from(t.hour * 3600 + t.minute * 60 + t.second) * 1000
            + i64::from(t.millis);
        (as_utc - ms).div_euclid(60_000)
    })
}

/// A zone as an operator writes it: `UTC`, `Z`, `GMT`, `UTC+05:30`, `+0530`, `-5`.
/// Minutes east of UTC.
pub(crate) fn parse_zone(s: &str) -> Option<i64> {
    let s = s.trim();
    let rest = ["UTC", "GMT", "Z"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s)
        .trim();
    if rest.is_empty() {
        return Some(0);
    }
    let (sign, digits) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() > 2 => digits.split_at(digits.len() - 2),
        None => (digits, "0"),
    };
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 18 && m < 60).then_some(sign * (h * 60 + m))
}

/// `yyyy-MM-ddTHH:mm[:ss]` (an HTML datetime-local input) in `zone`: ms since the
/// epoch.
pub(crate) fn parse_zoned(local: &str, zone: &str) -> Option<i64> {
    let offset = parse_zone(zone)?;
    let (date, clock) = local.trim().split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<u32>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let mut c = clock.splitn(3, ':').map(|p| p.parse::<u32>().ok());
    let (hour, minute) = (c.next()??, c.next()??);
    let second = c.next().map_or(Some(0), |s| s)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 59 {
        return None;
    }
    let days = days_from_civil(i32::try_from(year).ok()?, month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Some((seconds - offset * 60) * 1000)
}

/// `ms` in the broker's zone as a datetime-local value.
fn local_input(ms: i64) -> String {
    LocalTime::of_millis(ms).map_or_else(String::new, |t| {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        )
    })
}

/// `/offsets?group=G`: where the group stands on each topic; with the reset form for
/// an admin.
pub(crate) fn page(c: &Console, r: &HttpRequest, admin: bool) -> String {
    let group = r.param("group").unwrap_or_default();
    let b = &c.broker;
    let lag = crate::ops::lag::group_lag(
        &b.storage,
        &b.consumers,
        &b.pop,
        &crate::ops::lag::LagOf::all(&group),
    );
    let mut topics: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for q in &lag.queues {
        let t = topics.entry(q.topic.clone()).or_default();
        t.0 += 1;
        t.1 += q.lag;
    }
    let rows: Vec<Vec<String>> = topics
        .iter()
        .map(|(t, (queues, behind))| vec![esc(t), queues.to_string(), behind.to_string()])
        .collect();
    let mut out = format!(
        "<p>Group <a href=\"/group?name={}\">{}</a>.</p>",
        url(&group),
        esc(&group)
    );
    out.push_str(&table("offsets", &["Topic", "Queues", "Lag"], &rows));
    if !admin {
        return out;
    }
    let now = now_millis();
    let first = topics.keys().find(|t| !t.starts_with('%')).cloned();
    let _ = write!(
        out,
        "<h2>Reset offsets</h2><form method=\"post\" action=\"/offsets/reset\" id=\"reset-form\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">{}\
         <p><label>Topic <input name=\"topic\" id=\"reset-topic\" required value=\"{}\"></label></p>\
         <p><label>Time <input name=\"time\" id=\"reset-time\" type=\"datetime-local\" step=\"1\" value=\"{}\"></label> \
         <label>Zone <input name=\"zone\" id=\"reset-zone\" size=\"10\" value=\"{}\"></label></p>\
         <p><button type=\"submit\" name=\"mode\" value=\"time\" id=\"reset-to-time\">Reset to this time</button> \
         <button type=\"submit\" name=\"mode\" value=\"end\" id=\"skip-accumulated\">Skip accumulated</button></p></form>\
         <p class=\"note\">Reset to a time: the group next receives the first message stored at or after it, on every queue. Skip accumulated: the group moves to the end of every queue and receives only new messages. Both ask first, with the count per queue.</p>",
        esc(&c.token),
        hidden("group", &group),
        esc(first.as_deref().unwrap_or("")),
        esc(&local_input(now - 3_600_000)),
        esc(&zone(local_offset_minutes(now)))
    );
    out
}

/// The reset a form asks for.
fn request(f: Field<'_>) -> Result<ResetOffset, String> {
    let (group, topic) = (f("group"), f("topic"));
    if group.is_empty() || topic.is_empty() {
        return Err("give a group and a topic".to_owned());
    }
    let to = match f("mode").as_str() {
        "end" => ResetTo::End,
        _ => {
            let zone = f("zone");
            let at = parse_zoned(&f("time"), if zone.is_empty() { "UTC" } else { &zone })
                .ok_or_else(|| {
                    format!(
                        "cannot read the time {:?} in zone {zone:?} (yyyy-MM-ddTHH:mm:ss, zone like UTC+05:30)",
                        f("time")
                    )
                })?;
            ResetTo::Time(at)
        }
    };
    Ok(ResetOffset {
        group,
        topic,
        to,
        force: true,
    })
}

fn target(to: ResetTo) -> String {
    match to {
        ResetTo::End => "the end of every queue (skip accumulated)".to_owned(),
        ResetTo::Time(ms) => time(ms),
    }
}

/// The confirmation: title, and what the reset skips and replays, per queue. HTML.
pub(crate) fn loss(c: &Console, f: Field<'_>) -> (String, String) {
    let title = "Reset offsets?".to_owned();
    let reset = match request(f) {
        Ok(reset) => reset,
        Err(e) => return (title, esc(&e)),
    };
    let queues = match op::plan(&c.broker.storage, &c.broker.consumers, &reset) {
        Ok(queues) => queues,
        Err(refusal) => return (title, esc(&refusal.remark)),
    };
    let skipped: i64 = queues.iter().map(QueueReset::skipped).sum();
    let replayed: i64 = queues.iter().map(QueueReset::replayed).sum();
    let online = c
        .broker
        .consumers
        .clients
        .consumer_channels(&reset.group)
        .len();
    let mut out = format!(
        "Reset group <strong>{}</strong> on topic <strong>{}</strong> to {}: it skips <strong id=\"loss-skipped\">{skipped}</strong> messages and receives <strong id=\"loss-replayed\">{replayed}</strong> again. {}",
        esc(&reset.group),
        esc(&reset.topic),
        esc(&target(reset.to)),
        if online == 0 {
            "No consumer of the group is online: it starts from these offsets.".to_owned()
        } else {
            format!("{online} online consumers get the new offsets at once.")
        }
    );
    let rows: Vec<Vec<String>> = queues
        .iter()
        .map(|q| {
            vec![
                q.queue_id.to_string(),
                q.committed.map_or_else(|| "-".into(), |o| o.to_string()),
                q.offset.to_string(),
                q.max.to_string(),
                q.skipped().to_string(),
                q.replayed().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(
        "reset-plan",
        &[
            "Queue",
            "Committed",
            "New offset",
            "Queue end",
            "Skipped",
            "Received again",
        ],
        &rows,
    ));
    (title, out)
}

/// The page the reset's forms come back to.
pub(crate) fn back(f: Field<'_>) -> String {
    format!("/offsets?group={}", url(&f("group")))
}

/// POST `/offsets/reset`, confirmed.
pub(crate) fn reset(c: &Console, f: Field<'_>) -> Result<String, String> {
    let reset = request(f)?;
    let queues = op::plan(&c.broker.storage, &c.broker.consumers, &reset).map_err(|r| r.remark)?;
    op::apply(
        &c.broker.consumers,
        &c.broker.config.broker_name,
        &reset,
        &queues,
    );
    let skipped: i64 = queues.iter().map(QueueReset::skipped).sum();
    let replayed: i64 = queues.iter().map(QueueReset::replayed).sum();
    Ok(format!(
        "offsets of {} on {} reset to {} on {} queues: {skipped} messages skipped, {replayed} received again",
        reset.group,
        reset.topic,
        target(reset.to),
        queues.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_in_their_zone() {
        assert_eq!(parse_zone("UTC"), Some(0));
        assert_eq!(parse_zone("UTC+05:30"), Some(330));
        assert_eq!(parse_zone("+0530"), Some(330));
        assert_eq!(parse_zone("GMT-5"), Some(-300));
        assert_eq!(parse_zone("Mars"), None);
        assert_eq!(parse_zone("+25:00"), None);
        // 2026-12-04 23:10:05 UTC.
        let at = 1_796_425_805_000;
        assert_eq!(parse_zoned("2026-12-04T23:10:05", "UTC"), Some(at));
        assert_eq!(parse_zoned("2026-12-05T04:40:05", "UTC+05:30"), Some(at));
        assert_eq!(parse_zoned("2026-12-04T18:10:05", "-05:00"), Some(at));
        assert_eq!(parse_zoned("2026-12-04T23:10", "UTC"), Some(at - 5000));
        assert_eq!(parse_zoned("2026-13-04T23:10", "UTC"), None);
        assert_eq!(parse_zoned("yesterday", "UTC"), None);
    }
}
