//! Text output: column-aligned tables whose header starts with `#` (as RocketMQ's
//! `mqadmin` prints them; no cell holds a space, so scripts can split on whitespace)
//! and UTC timestamps.

/// A table printed with each column as wide as its widest cell.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// `columns` are the header cells, `#` included.
    pub fn new(columns: &[&str]) -> Self {
        Table {
            header: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; an empty cell prints as `-`.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| if c.is_empty() { "-".to_owned() } else { c })
                .collect(),
        );
    }

    /// The table, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0; columns];
        for line in std::iter::once(&self.header).chain(&self.rows) {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            let mut text = String::new();
            for (cell, w) in line.iter().zip(&widths) {
                text.push_str(cell);
                for _ in cell.chars().count()..*w + 2 {
                    text.push(' ');
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Milliseconds since the epoch as `2024-05-01T10:00:00.123Z`; 0 or less as `-`.
pub fn format_millis(ms: i64) -> String {
    if ms <= 0 {
        return "-".to_owned();
    }
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01: shift the epoch to
/// 0000-03-01 so that leap days end each 4/100/400-year cycle, then split into eras
/// of 146,097 days.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_split_on_whitespace() {
        let mut t = Table::new(&["#Broker Name", "#QID", "#Max Offset"]);
        t.row(vec!["broker-a".into(), "0".into(), "12".into()]);
        t.row(vec!["b".into(), "10".into(), String::new()]);
        let text = t.render();
        assert_eq!(
            text,
            "#Broker Name  #QID  #Max Offset\nbroker-a      0     12\nb             10    -\n"
        );
        let cells: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(cells, ["b", "10", "-"]);
    }

    #[test]
    fn timestamps_in_utc() {
        assert_eq!(format_millis(0), "-");
        assert_eq!(format_millis(1), "1970-01-01T00:00:00.001Z");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_millis(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(format_millis(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }
}
