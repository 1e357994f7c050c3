//! Message `sysFlag` bits (docs/message.md#message-sysflag).

pub const COMPRESSED_FLAG: i32 = 0x1;
pub const MULTI_TAGS_FLAG: i32 = 0x2;
pub const TRANSACTION_NOT_TYPE: i32 = 0;
pub const TRANSACTION_PREPARED_TYPE: i32 = 0x1 << 2;
pub const TRANSACTION_COMMIT_TYPE: i32 = 0x2 << 2;
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0x3 << 2;
pub const TRANSACTION_MASK: i32 = 0xC;
pub const BORNHOST_V6_FLAG: i32 = 0x1 << 4;
pub const STOREHOSTADDRESS_V6_FLAG: i32 = 0x1 << 5;
pub const NEED_UNWRAP_FLAG: i32 = 0x1 << 6;
pub const INNER_BATCH_FLAG: i32 = 0x1 << 7;
/// Compression type bits (5.x); 0 with [`COMPRESSED_FLAG`] means zlib.
pub const COMPRESSION_TYPE_MASK: i32 = 0x7 << 8;
pub const COMPRESSION_LZ4: i32 = 0x1 << 8;
pub const COMPRESSION_ZSTD: i32 = 0x2 << 8;
pub const COMPRESSION_ZLIB: i32 = 0x3 << 8;

pub fn transaction_type(sys_flag: i32) -> i32 {
    sys_flag & TRANSACTION_MASK
}

pub fn reset_transaction_type(sys_flag: i32, kind: i32) -> i32 {
    (sys_flag & !TRANSACTION_MASK) | kind
}

/// Which codec a compressed body uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Zlib,
    Lz4,
    Zstd,
}

/// The compression of a body, if any, from its sysFlag.
pub fn compression(sys_flag: i32) -> Option<Compression> {
    if sys_flag & COMPRESSED_FLAG == 0 {
        return None;
    }
    Some(match sys_flag & COMPRESSION_TYPE_MASK {
        COMPRESSION_LZ4 => Compression::Lz4,
        COMPRESSION_ZSTD => Compression::Zstd,
        _ => Compression::Zlib,
    })
}

/// The sysFlag bits announcing `compression`.
pub fn compression_bits(compression: Compression) -> i32 {
    COMPRESSED_FLAG
        | match compression {
            Compression::Zlib => COMPRESSION_ZLIB,
            Compression::Lz4 => COMPRESSION_LZ4,
            Compression::Zstd => COMPRESSION_ZSTD,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_bits_read_back() {
        for c in [Compression::Zlib, Compression::Lz4, Compression::Zstd] {
            assert_eq!(compression(compression_bits(c)), Some(c));
        }
        assert_eq!(compression(COMPRESSED_FLAG), Some(Compression::Zlib), "4.x");
        assert_eq!(
            compression(COMPRESSION_LZ4),
            None,
            "type bits without the flag"
        );
        assert_eq!(
            reset_transaction_type(0x107, TRANSACTION_COMMIT_TYPE),
            0x10b
        );
    }
}
