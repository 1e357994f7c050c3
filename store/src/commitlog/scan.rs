//! Checking what starts at a commitlog position (RocketMQ `checkMessageAndReturnSize`),
//! shared by recovery, the dispatcher and raw appends.

use vostok_remoting::protocol::message::record::{
    record_len, RecordKind, RecordView, BLANK_MAGIC, MAGIC_V1, MAGIC_V2,
};

use super::END_FILE_MIN_BLANK_LEN;

pub(crate) enum Scanned<'a> {
    /// A complete, consistent record.
    Message(RecordView<'a>),
    /// The end-of-file blank: the file's data ends here.
    Blank,
    /// The bytes so far are a valid beginning; more are needed.
    Partial,
    /// Not a record: a torn write, zeros or garbage.
    Invalid(String),
}

/// The body CRC does not cover topic and properties. A write torn at a page
/// boundary leaves zeros, which no valid topic or property string contains (the put
/// path refuses them), so zeros there mean the record is incomplete.
fn has_torn_text(view: &RecordView<'_>) -> bool {
    view.topic().is_empty() || view.topic().contains('\0') || view.properties().contains('\0')
}

/// Examines `buf`, the bytes available from in-file position `pos` of the file that
/// starts at `base`. A record must carry its own offset in PHYSICALOFFSET and leave
/// room for a blank before the end of the file, as every writer ensures.
pub(crate) fn scan(
    buf: &[u8],
    base: i64,
    pos: usize,
    file_size: usize,
    verify_crc: bool,
) -> Scanned<'_> {
    let remaining = file_size - pos;
    if buf.len() < 8 {
        return Scanned::Partial;
    }
    let total = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let magic = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if magic == BLANK_MAGIC {
        return if total as i64 == remaining as i64 {
            Scanned::Blank
        } else {
            Scanned::Invalid(format!(
                "blank says {total} bytes remain, the file has {remaining}"
            ))
        };
    }
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return Scanned::Invalid(format!("bad magic {magic:#x}"));
    }
    let total = match usize::try_from(total) {
        Ok(t) if t >= record_len(0, 0, 0, 0) && t + END_FILE_MIN_BLANK_LEN <= remaining => t,
        _ => return Scanned::Invalid(format!("bad total size {total}")),
    };
    if buf.len() < total {
        return Scanned::Partial;
    }
    match RecordView::parse(&buf[..total], verify_crc) {
        Ok(RecordKind::Message(view)) => {
            let expected = base + pos as i64;
            if has_torn_text(&view) {
                Scanned::Invalid("NUL bytes in topic or properties (torn write)".into())
            } else if view.physical_offset() != expected {
                Scanned::Invalid(format!(
                    "PHYSICALOFFSET {} where {expected} was expected",
                    view.physical_offset()
                ))
            } else {
                Scanned::Message(view)
            }
        }
        Ok(RecordKind::Blank) => Scanned::Invalid("unexpected blank".into()),
        Err(e) => Scanned::Invalid(e.to_string()),
    }
}
