//! The MySQL and MariaDB error numbers myrecode acts on, named in one place.

/// `ER_CON_COUNT_ERROR`: too many connections.
pub const TOO_MANY_CONNECTIONS: u16 = 1040;
/// `ER_DBACCESS_DENIED_ERROR`: the user may not use that database.
pub const DB_ACCESS_DENIED: u16 = 1044;
/// `ER_ACCESS_DENIED_ERROR`: wrong user name or password.
pub const ACCESS_DENIED: u16 = 1045;
/// `ER_BAD_DB_ERROR`: unknown database.
pub const BAD_DB: u16 = 1049;
/// `ER_SERVER_SHUTDOWN`: the server is shutting down.
pub const SERVER_SHUTDOWN: u16 = 1053;
/// `ER_PARSE_ERROR`: a statement this server does not know.
pub const PARSE_ERROR: u16 = 1064;
/// `ER_DUP_FIELDNAME`: a column of that name exists already.
pub const DUP_FIELDNAME: u16 = 1060;
/// `ER_DUP_ENTRY`: a unique index would hold two equal keys.
pub const DUP_ENTRY: u16 = 1062;
/// A value longer than its column allows, under strict mode (`Data too long for column`).
pub const DATA_TOO_LONG: u16 = 1406;
/// `ER_TOO_LONG_KEY`: an index key longer than the engine allows.
pub const TOO_LONG_KEY: u16 = 1071;
/// `ER_TOO_BIG_ROWSIZE`: the row's declared size passes the limit.
pub const TOO_BIG_ROWSIZE: u16 = 1118;
/// `ER_HOST_NOT_PRIVILEGED`: the client host may not connect.
pub const HOST_NOT_PRIVILEGED: u16 = 1130;
/// `ER_TABLEACCESS_DENIED_ERROR`: a privilege on the table is missing (`TRIGGER`, say).
pub const TABLE_ACCESS_DENIED: u16 = 1142;
/// `ER_COLUMNACCESS_DENIED_ERROR`: a privilege on the column is missing.
pub const COLUMN_ACCESS_DENIED: u16 = 1143;
/// `ER_KEY_NOT_FOUND`: a row the index names is not there (a MyISAM index out of step).
pub const KEY_NOT_FOUND: u16 = 1032;
/// `ER_NOT_KEYFILE`: an index file the server cannot use.
pub const NOT_KEYFILE: u16 = 1034;
/// `HA_ERR_CRASHED` as MariaDB passes a storage engine's error on: "Index for table '…' is
/// corrupt; try to repair it" (a MyISAM index a crash left out of step, met by a write).
pub const INDEX_CORRUPT: u16 = 126;
/// Every error that says a MyISAM or Aria table needs a repair: its index out of step with its
/// rows ([`KEY_NOT_FOUND`], [`NOT_KEYFILE`], [`INDEX_CORRUPT`]), or marked crashed
/// ([`CRASHED_ON_USAGE`], which the server repairs only when it opens the table again).
pub const NEEDS_REPAIR: &[u16] = &[KEY_NOT_FOUND, NOT_KEYFILE, INDEX_CORRUPT, CRASHED_ON_USAGE];
/// `ER_NO_SUCH_TABLE`.
pub const NO_SUCH_TABLE: u16 = 1146;
/// `ER_UNKNOWN_SYSTEM_VARIABLE`: a variable this server does not have (MariaDB's on MySQL).
pub const UNKNOWN_SYSTEM_VARIABLE: u16 = 1193;
/// `ER_CRASHED_ON_USAGE`: a MyISAM or Aria table marked crashed, to be repaired.
pub const CRASHED_ON_USAGE: u16 = 1194;
/// `ER_LOCK_WAIT_TIMEOUT`: a row or metadata lock wait timed out.
pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// `ER_LOCK_DEADLOCK`: chosen as a deadlock's victim.
pub const LOCK_DEADLOCK: u16 = 1213;
/// `ER_INDEX_COLUMN_TOO_LONG`: one key part longer than the row format allows.
pub const INDEX_COLUMN_TOO_LONG: u16 = 1709;
/// MariaDB's `ER_CONNECTION_KILLED`.
pub const CONNECTION_KILLED: u16 = 1927;
/// `CR_SERVER_GONE_ERROR` (client): the server has gone away.
pub const SERVER_GONE: u16 = 2006;
/// `CR_SERVER_LOST` (client): lost the connection during a query.
pub const SERVER_LOST: u16 = 2013;
/// MySQL 8's `ER_CLIENT_INTERACTION_TIMEOUT`: disconnected by the server.
pub const CLIENT_INTERACTION_TIMEOUT: u16 = 4031;

/// `ER_TRUNCATED_WRONG_VALUE_FOR_FIELD`: in strict mode, a string the column's charset cannot
/// hold ("Incorrect string value").
pub const WRONG_STRING_VALUE: u16 = 1366;
/// MariaDB's `ER_CANNOT_CONVERT_CHARACTER`: in strict mode, a character `CONVERT` cannot map.
pub const CANNOT_CONVERT_CHARACTER: u16 = 1977;
/// MySQL 8's `ER_CANNOT_CONVERT_STRING`: in strict mode, a string `CONVERT` cannot map.
pub const CANNOT_CONVERT_STRING: u16 = 3854;

/// Errors that say the server refused to convert a value between charsets.
pub const REFUSED_CONVERSION: &[u16] = &[
    WRONG_STRING_VALUE,
    CANNOT_CONVERT_CHARACTER,
    CANNOT_CONVERT_STRING,
];

/// Errors that say the target definitions make an index or the row too large.
pub const TOO_LARGE: &[u16] = &[TOO_LONG_KEY, INDEX_COLUMN_TOO_LONG, TOO_BIG_ROWSIZE];

/// The server's error number of `err`, if the server answered with one.
pub fn of(err: &sqlx::Error) -> Option<u16> {
    err.as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .map(|m| m.number())
}
