//! END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39): docs/commands.md#transactions.

use crate::command_header;

command_header! {
    pub struct EndTransactionRequestHeader {
        producer_group: String = "producerGroup",
        /// Queue offset of the half message.
        tran_state_table_offset: i64 = "tranStateTableOffset",
        /// Commitlog offset of the half message.
        commit_log_offset: i64 = "commitLogOffset",
        /// A transaction type of the message sysFlag: 0 unknown, 8 commit, 12 rollback.
        commit_or_rollback: i32 = "commitOrRollback",
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        msg_id: String = "msgId",
        transaction_id: Option<String> = "transactionId",
        topic: Option<String> = "topic",
    }
}

command_header! {
    pub struct CheckTransactionStateRequestHeader {
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        offset_msg_id: Option<String> = "offsetMsgId",
        topic: Option<String> = "topic",
        broker_name: Option<String> = "bname",
    }
}
