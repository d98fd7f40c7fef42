//! A legacy Russian PHP shop, as such sites were: every table latin1, created through a
//! latin1 connection with cp1251 bytes for every Cyrillic literal (column DEFAULTs and
//! COMMENTs, ENUM/SET members, a generated column, CHECKs, a view, a function, a procedure
//! with a latin1 parameter and variable, a trigger, an event), options holding nested
//! PHP-serialized arrays whose `s:N:` counts are cp1251 byte lengths. The control schema is
//! the same application born utf8mb4 from the same text.

use crate::common::retried;
use myrecode::codec::{self, Encoding};
use myrecode::db::connect::ConnectionConfig;
use sqlx::{MySqlConnection, Row};
use std::path::Path;

/// A PHP string in `enc`: `s:N:"…";`, N its byte length there.
fn php_s(enc: Encoding, text: &str) -> String {
    let n = codec::encode(enc, text).unwrap().len();
    format!("s:{n}:\"{text}\";")
}

/// The `i`th option's value, as PHP's serialize() writes it with the site in `enc`.
pub fn option_value(enc: Encoding, i: u64) -> String {
    let titles = [
        "Скидки недели",
        "Доставка по Москве",
        "Ёлочные игрушки",
        "Новинки — «хит»",
    ];
    let s = |t: &str| php_s(enc, t);
    match i % 4 {
        0 => format!(
            "a:3:{{{}{}{}a:2:{{i:0;{}i:1;{}}}{}i:{};}}",
            s("title"),
            s(titles[(i as usize / 4) % 4]),
            s("tags"),
            s("скидка"),
            s("акция; \"особая\" }"),
            s("count"),
            i
        ),
        1 => format!(
            "a:2:{{{}{}{}d:0.5;}}",
            s("город"),
            s(&format!("Москва, ул. Ленина, д. {i}")),
            s("rate")
        ),
        2 => format!(
            "O:8:\"stdClass\":1:{{{}{}}}",
            s("name"),
            s(&format!("Иванов И.И. №{i}"))
        ),
        _ => s(&format!("Привет, мир {i}")),
    }
}

/// The schema, its objects and rows, as the script a legacy site's dump would hold: text in
/// UTF-8 here, sent in `enc` (cp1251 bytes through a latin1 connection for the legacy site).
pub fn script(enc: Encoding, charset: &str, collation: &str, db: &str) -> Vec<u8> {
    let names = if enc == Encoding::Utf8 {
        "utf8mb4"
    } else {
        "latin1"
    };
    let mut s = format!(
        "SET NAMES {names};
ALTER DATABASE `{db}` CHARACTER SET {charset} COLLATE {collation};
CREATE TABLE options (
  option_id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  option_name VARCHAR(64) NOT NULL DEFAULT '',
  option_value LONGTEXT NOT NULL,
  autoload VARCHAR(20) NOT NULL DEFAULT 'yes',
  UNIQUE KEY option_name (option_name)
) ENGINE=InnoDB COMMENT='Настройки сайта';
CREATE TABLE customers (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL DEFAULT '' COMMENT 'ФИО',
  city VARCHAR(50) NOT NULL DEFAULT 'Москва' COMMENT 'Город доставки',
  phone VARCHAR(20) NOT NULL DEFAULT '',
  note VARCHAR(100) DEFAULT NULL,
  CONSTRAINT chk_city CHECK (city <> 'Неизвестно')
) ENGINE=InnoDB COMMENT='Покупатели';
CREATE TABLE orders (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  status ENUM('новый','оплачен','отменён') NOT NULL DEFAULT 'новый',
  tags SET('срочно','подарок') DEFAULT NULL,
  amount DECIMAL(10,2) NOT NULL DEFAULT 0,
  price_label VARCHAR(64) AS (CONCAT(amount, ' руб.')) VIRTUAL,
  comment VARCHAR(255) NOT NULL DEFAULT 'без комментария' CHECK (comment <> 'спам'),
  KEY customer_id (customer_id),
  CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE=InnoDB COMMENT='Заказы';
CREATE VIEW moscow_customers AS SELECT id, name FROM customers WHERE city = 'Москва';
CREATE VIEW paid_orders AS SELECT o.id, c.name, o.price_label FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'оплачен';
DELIMITER ;;
CREATE FUNCTION count_city(c VARCHAR(50)) RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM customers WHERE city = c);;
CREATE FUNCTION status_label(s VARCHAR(20)) RETURNS VARCHAR(40) DETERMINISTIC RETURN CONCAT('Статус: ', s);;
CREATE PROCEDURE add_order(IN p_customer INT, IN p_comment VARCHAR(255))
BEGIN
  DECLARE v_status VARCHAR(20) DEFAULT 'новый';
  INSERT INTO orders (customer_id, status, comment) VALUES (p_customer, v_status, IF(p_comment = '', 'без комментария', p_comment));
END;;
CREATE TRIGGER customers_bi BEFORE INSERT ON customers FOR EACH ROW BEGIN IF NEW.note IS NULL THEN SET NEW.note = 'новый клиент'; END IF; END;;
CREATE EVENT purge_spam ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 03:00:00' DISABLE COMMENT 'Чистка спама' DO DELETE FROM orders WHERE comment = 'спам';;
DELIMITER ;
"
    );
    let cities = [
        "Москва",
        "Санкт-Петербург",
        "Новосибирск",
        "Екатеринбург",
        "Казань",
    ];
    let names = [
        "Иванов Иван",
        "Петрова Мария",
        "Сидоров Пётр",
        "Кузнецова Анна",
    ];
    for i in 1..=60u64 {
        s.push_str(&format!(
            "INSERT INTO customers (name, city, phone) VALUES ('{} {i}', '{}', '+7 495 {i:07}');\n",
            names[(i % 4) as usize],
            cities[(i % 5) as usize]
        ));
    }
    let statuses = ["новый", "оплачен", "отменён"];
    for i in 1..=90u64 {
        s.push_str(&format!(
            "INSERT INTO orders (customer_id, status, tags, amount, comment) VALUES ({}, '{}', {}, {}.{:02}, '{}');\n",
            1 + i % 60,
            statuses[(i % 3) as usize],
            ["NULL", "'срочно'", "'срочно,подарок'"][(i % 3) as usize],
            100 + i * 7,
            i % 100,
            ["Позвонить заранее", "без комментария", "Оставить у двери"][(i % 3) as usize]
        ));
    }
    for i in 1..=40u64 {
        s.push_str(&format!(
            "INSERT INTO options (option_name, option_value) VALUES ('opt_{i}', '{}');\n",
            option_value(enc, i)
                .replace('\\', "\\\\")
                .replace('\'', "''")
        ));
    }
    codec::encode(enc, &s).unwrap()
}

/// Loads `script` into `db` with the mariadb client (as a dump is loaded).
pub fn load(cfg: &ConnectionConfig, db: &str, script: &[u8], dir: &Path) {
    let file = dir.join(format!("{db}.sql"));
    std::fs::write(&file, script).unwrap();
    myrecode::rehearse::dump::load(cfg, db, &file).unwrap_or_else(|e| panic!("{e:#}"));
}

/// A PHP-compatible unserialize check, independent of myrecode's own parser: consumes one
/// value of `b` from `at`, returning where it ends, or `None` where PHP's unserialize() fails.
pub fn unserialize(b: &[u8], at: usize) -> Option<usize> {
    let num_until = |from: usize, end: u8| -> Option<(i64, usize)> {
        let stop = from + b.get(from..)?.iter().position(|c| *c == end)?;
        let n = std::str::from_utf8(&b[from..stop]).ok()?.parse().ok()?;
        Some((n, stop + 1))
    };
    match (b.get(at)?, b.get(at + 1)?) {
        (b'N', b';') => Some(at + 2),
        (b'i' | b'b', b':') => num_until(at + 2, b';').map(|(_, e)| e),
        (b'd', b':') => Some(at + 2 + b[at + 2..].iter().position(|c| *c == b';')? + 1),
        (b's', b':') => {
            let (n, e) = num_until(at + 2, b':')?;
            let end = e + 1 + n as usize;
            (b.get(e) == Some(&b'"') && b.get(end..end + 2) == Some(b"\";")).then_some(end + 2)
        }
        (b'a', b':') => {
            let (n, mut e) = num_until(at + 2, b':')?;
            (b.get(e) == Some(&b'{')).then_some(())?;
            e += 1;
            for _ in 0..2 * n {
                e = unserialize(b, e)?;
            }
            (b.get(e) == Some(&b'}')).then_some(e + 1)
        }
        (b'O', b':') => {
            let (n, e) = num_until(at + 2, b':')?;
            let name_end = e + 1 + n as usize;
            (b.get(name_end..name_end + 2) == Some(b"\":")).then_some(())?;
            let (m, mut e) = num_until(name_end + 2, b':')?;
            (b.get(e) == Some(&b'{')).then_some(())?;
            e += 1;
            for _ in 0..2 * m {
                e = unserialize(b, e)?;
            }
            (b.get(e) == Some(&b'}')).then_some(e + 1)
        }
        _ => None,
    }
}

/// Every option value as stored (bytes).
pub async fn options(c: &mut MySqlConnection) -> Vec<(String, Vec<u8>)> {
    sqlx::query("SELECT option_name, CAST(option_value AS BINARY) FROM options ORDER BY option_id")
        .fetch_all(c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// `SHOW CREATE` text with charset and collation names taken out (what the migration may
/// change), and the per-server AUTO_INCREMENT counter.
pub fn without_charsets(create: &str) -> String {
    let words: Vec<&str> = create.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].to_ascii_uppercase();
        let (skip, keep) = match w.as_str() {
            "CHARACTER"
                if words.get(i + 1).map(|x| x.to_ascii_uppercase()) == Some("SET".into()) =>
            {
                (3, false)
            }
            "CHARSET" | "COLLATE" => (2, false),
            "DEFAULT"
                if words
                    .get(i + 1)
                    .map(|x| x.to_ascii_uppercase())
                    .is_some_and(|x| x.starts_with("CHARSET") || x == "CHARACTER") =>
            {
                (1, false)
            }
            _ if w.starts_with("CHARSET=")
                || w.starts_with("COLLATE=")
                || w.starts_with("AUTO_INCREMENT=") =>
            {
                (1, false)
            }
            _ => (1, true),
        };
        if keep {
            out.push(words[i].to_string());
        } else if let Some(last) = words.get(i + skip - 1) {
            // `COLLATE x)` ends a parameter list: the name goes, the `)` stays.
            let tail: String = last
                .chars()
                .rev()
                .take_while(|c| matches!(c, ')' | ',' | ';'))
                .collect();
            if !tail.is_empty() {
                match out.last_mut() {
                    Some(prev) => prev.push_str(&tail.chars().rev().collect::<String>()),
                    None => out.push(tail),
                }
            }
        }
        i += skip;
    }
    out.join(" ")
}

/// The shop's writer, on the migrated schema and the control alike: customers signing up
/// (their city from the DEFAULT, their note from the trigger), orders changing status and
/// comment, options saved again by PHP (serialize() with the site's byte counts), orders
/// deleted. Before its table is swapped the legacy site sends cp1251 bytes; once a table
/// refuses them (it is utf8mb4), UTF-8, as the application switched over does.
#[derive(Debug, Default)]
pub struct Writer {
    x: u64,
    /// Statements run on both schemas.
    pub statements: u64,
    /// Tables found swapped, in the order the writer switched.
    pub switched: Vec<&'static str>,
    /// Retries after a deadlock, a lock wait or the rename's instant.
    pub retries: u64,
}

impl Writer {
    fn next(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }

    /// One statement on both schemas; their outcomes must agree.
    pub async fn step(
        &mut self,
        app: &mut MySqlConnection,
        control: &mut MySqlConnection,
        schema: &str,
    ) {
        if self.x == 0 {
            self.x = 0x9E37_79B9_7F4A_7C15;
        }
        let r = self.next();
        let n = self.statements;
        let (table, sql, text, id): (&'static str, &str, String, u64) = match r % 4 {
            0 => (
                "customers",
                "INSERT INTO customers (name) VALUES (?)",
                format!("Покупатель номер {n}"),
                0,
            ),
            1 => (
                "orders",
                "UPDATE orders SET comment = ? WHERE id = ?",
                format!("Перезвонить в {} часов", n % 24),
                1 + r % 90,
            ),
            2 => (
                "options",
                "UPDATE options SET option_value = ? WHERE option_id = ?",
                String::new(),
                1 + r % 40,
            ),
            _ => (
                "orders",
                "DELETE FROM orders WHERE id = ?",
                String::new(),
                1 + r % 90,
            ),
        };
        let bind = |enc: Encoding| -> Vec<u8> {
            if table == "options" {
                codec::encode(enc, &option_value(enc, n)).unwrap()
            } else {
                codec::encode(enc, &text).unwrap()
            }
        };
        async fn run(
            c: &mut MySqlConnection,
            sql: &str,
            value: Vec<u8>,
            id: u64,
        ) -> Result<u64, sqlx::Error> {
            let has_text = sql.contains("SET option_value")
                || sql.contains("SET comment")
                || sql.starts_with("INSERT");
            let mut q = sqlx::query(sql);
            if has_text {
                q = q.bind(value);
            }
            if id > 0 {
                q = q.bind(id);
            }
            q.execute(c).await.map(|d| d.rows_affected())
        }
        let since = std::time::Instant::now();
        let migrated = loop {
            let legacy = !self.switched.contains(&table);
            let value = if legacy {
                bind(Encoding::Windows1251)
            } else {
                bind(Encoding::Utf8)
            };
            match run(&mut *app, sql, value, id).await {
                Err(_) if legacy && charset_of(app, schema, table).await == "utf8mb4" => {
                    self.switched.push(table);
                }
                Err(e) if retried(&e, &[1412], since) => {
                    self.retries += 1;
                    sqlx::Connection::clear_cached_statements(&mut *app)
                        .await
                        .unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                other => break other,
            }
        };
        let controlled = run(&mut *control, sql, bind(Encoding::Utf8), id).await;
        match (&migrated, &controlled) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{sql} {id}: rows affected differ"),
            (Err(_), Err(_)) => {}
            _ => panic!("{sql} {id}: migrated {migrated:?}, control {controlled:?}"),
        }
        self.statements += 1;
    }
}

/// The table's text columns' charset (the first one's).
pub async fn charset_of(c: &mut MySqlConnection, schema: &str, table: &str) -> String {
    sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
         AND CHARACTER_SET_NAME IS NOT NULL AND COLUMN_NAME IN ('name', 'comment', 'option_value')",
    )
    .bind(schema)
    .bind(table)
    .fetch_one(c)
    .await
    .unwrap()
}
