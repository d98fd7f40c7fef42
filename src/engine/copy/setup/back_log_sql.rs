//! The back log's table and triggers: from the cut-over's lock until `cleanup`, the keys the
//! application writes into a swapped table are logged, so `myrecode revert` can bring the
//! kept original up to date with every write made since the swap. Pure.
//!
//! Unlike the change log's, these triggers name no gate: they stay on the application's table
//! after the job, when the gate is gone.

use crate::bookkeeping::names::Names;
use crate::db::keyset::KeyColumn;
use crate::db::quote;
use crate::engine::copy::setup::sql::pack_expr;

/// The comment of a back log myrecode created: tells it from a table of the user's.
pub const BACK_LOG_COMMENT: &str = "myrecode back log";

/// DDL of the back log (as the change log: an order, and the packed key of each write).
pub fn back_log_ddl(schema: &str, n: &Names) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT={}",
        quote::table(schema, &n.back_log),
        quote::literal(BACK_LOG_COMMENT)
    )
}

/// DDL of the three triggers on `table` (the shadow, under the cut-over's lock) that log the
/// keys each insert, update (old and new key) and delete touches.
pub fn back_trigger_ddl(schema: &str, table: &str, n: &Names, key: &[KeyColumn]) -> [String; 3] {
    let t = quote::table(schema, table);
    let log = quote::table(schema, &n.back_log);
    let trg = |i: usize| quote::table(schema, &n.back_triggers[i]);
    [
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(0),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({}), ({})",
            trg(1),
            pack_expr("OLD", key),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER DELETE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(2),
            pack_expr("OLD", key)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::names::names;

    #[test]
    fn the_back_log_and_its_triggers_name_no_gate() {
        let n = names("po`sts");
        assert_eq!(
            back_log_ddl("s", &n),
            "CREATE TABLE IF NOT EXISTS `s`.`po``sts_myrecode_back` (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT='myrecode back log'"
        );
        let key = [KeyColumn::plain("id")];
        let [ins, upd, del] = back_trigger_ddl("s", &n.shadow, &n, &key);
        assert_eq!(
            ins,
            "CREATE TRIGGER `s`.`po``sts_myrecode_rvi` AFTER INSERT ON `s`.`po``sts_myrecode_new` FOR EACH ROW \
             INSERT INTO `s`.`po``sts_myrecode_back` (key_bytes) VALUES (CONCAT(CHAR((OCTET_LENGTH(CAST(NEW.`id` AS BINARY))) & 255, \
             ((OCTET_LENGTH(CAST(NEW.`id` AS BINARY))) >> 8) & 255, ((OCTET_LENGTH(CAST(NEW.`id` AS BINARY))) >> 16) & 255, \
             ((OCTET_LENGTH(CAST(NEW.`id` AS BINARY))) >> 24) & 255), CAST(NEW.`id` AS BINARY)))"
        );
        assert!(
            upd.contains("AFTER UPDATE") && upd.contains("OLD.`id`") && upd.contains("NEW.`id`")
        );
        assert!(del.contains("AFTER DELETE") && del.contains("OLD.`id`"));
        for t in [&ins, &upd, &del] {
            assert!(!t.contains("gate"), "{t}");
        }
    }
}
