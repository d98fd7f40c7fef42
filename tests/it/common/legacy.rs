//! Seeded legacy data: real text put into a server the way broken applications put it there.

use myrecode::codec::{self, Encoding};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use sqlx::Executor;

/// Russian values of the kinds a forum or shop holds: sentences, names, addresses.
pub const RUSSIAN: &[&str] = &[
    "Привет всем! Подскажите, где купить запчасти для стиральной машины?",
    "Москва, ул. Садовая-Кудринская, д. 11, кв. 4",
    "Иванов Сергей Петрович",
    "Спасибо за быстрый ответ, всё заработало после перезагрузки.",
    "Доставка по Санкт-Петербургу занимает два рабочих дня.",
    "Новосибирск, проспект Карла Маркса, 57",
    "Кузнецова Анна Владимировна",
    "Не могу войти в личный кабинет: пишет, что пароль неверный.",
    "Куплю велосипед в хорошем состоянии, недорого.",
    "Екатеринбург, ул. Малышева, дом 36, офис 210",
    "Отличный магазин, заказываю уже третий раз.",
    "Смирнова Ольга",
    "Модератор удалил мою тему без объяснения причин.",
    "Казань, ул. Баумана, 19",
    "Подробности читайте в следующем выпуске нашей газеты.",
    "Цена указана с учётом НДС и доставки до подъезда.",
    "Фёдоров Михаил Юрьевич",
    "Кто-нибудь знает, когда откроется новая станция метро?",
    "Ростов-на-Дону, Ворошиловский проспект, 12",
    "Сегодня вечером будет сильный ветер и дождь со снегом.",
];

/// Ukrainian values (KOI8-U and cp1251 carry them).
pub const UKRAINIAN: &[&str] = &[
    "Київ, вулиця Хрещатик, будинок 22",
    "Дякую за допомогу, все працює чудово!",
    "Шевченко Тарас Григорович",
    "Оплата карткою або готівкою при отриманні.",
    "Львів, площа Ринок, 1",
];

/// Vietnamese values written in TCVN3 by old Windows software.
pub const VIETNAMESE: &[&str] = &[
    "Hà Nội, phố Hàng Bài, số 25",
    "Cảm ơn bạn đã mua hàng tại cửa hàng của chúng tôi.",
    "Nguyễn Văn An",
    "Giao hàng miễn phí trong nội thành Thành phố Hồ Chí Minh.",
    "Áo sơ mi nam dài tay, màu trắng, cỡ lớn",
    "Trần Thị Bích Ngọc",
    "Sản phẩm được bảo hành mười hai tháng kể từ ngày mua.",
    "Đà Nẵng, đường Bạch Đằng, số 108",
    "Bàn làm việc bằng gỗ sồi tự nhiên",
    "Chúng tôi sẽ liên hệ lại với bạn trong thời gian sớm nhất.",
];

/// Bytes of `text` in `enc` (panics if a character has no byte there: the seed data is chosen to fit).
pub fn bytes(enc: Encoding, text: &str) -> Vec<u8> {
    codec::encode(enc, text).unwrap_or_else(|e| panic!("seed text {text:?} in {enc:?}: {e}"))
}

/// What a latin1 connection makes of legacy bytes when the column is later converted to UTF-8: `real>latin1` mojibake.
pub fn mojibake(real: Encoding, read_as: Encoding, text: &str) -> String {
    codec::decode(read_as, &bytes(real, text))
        .expect("every byte decodes in latin1/cp1251 for our seed")
}

/// Double-encoded UTF-8: UTF-8 bytes read as `read_as` and stored again as UTF-8.
pub fn double_utf8(read_as: Encoding, text: &str) -> String {
    codec::decode(read_as, text.as_bytes()).expect("decodes")
}

/// A PNG-like blob: signature, then a deterministic byte pattern.
pub fn png_blob(seed: u8) -> Vec<u8> {
    let mut v = vec![
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];
    let mut x: u32 = 0x9E37_79B9 ^ seed as u32;
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v
}

/// Inserts `(id, value)` rows into `table(id, col)`, values as raw bytes (a latin1 connection would send them so).
pub async fn insert_raw(cfg: &ConnectionConfig, table: &str, col: &str, rows: &[(i64, Vec<u8>)]) {
    insert(cfg, table, col, rows).await
}

/// Inserts `(id, text)` rows as UTF-8 text.
pub async fn insert_text(cfg: &ConnectionConfig, table: &str, col: &str, rows: &[(i64, String)]) {
    insert(cfg, table, col, rows).await
}

async fn insert<V>(cfg: &ConnectionConfig, table: &str, col: &str, rows: &[(i64, V)])
where
    V: Clone
        + Send
        + Sync
        + for<'q> sqlx::Encode<'q, sqlx::MySql>
        + sqlx::Type<sqlx::MySql>
        + 'static,
{
    let mut c = cfg.connect_one().await.expect("connect");
    let sql = format!(
        "INSERT INTO {} (`id`, {}) VALUES (?, ?)",
        quote::ident(table),
        quote::ident(col)
    );
    for (id, v) in rows {
        sqlx::query(&sql)
            .bind(id)
            .bind(v.clone())
            .execute(&mut c)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// `CHECKSUM TABLE` of each table, to prove a read-only step changed nothing.
pub async fn checksums(cfg: &ConnectionConfig, tables: &[&str]) -> Vec<String> {
    use sqlx::Row;
    let mut c = cfg.connect_one().await.expect("connect");
    let mut out = Vec::new();
    for t in tables {
        let row = sqlx::query(&format!("CHECKSUM TABLE {}", quote::ident(t)))
            .fetch_one(&mut c)
            .await
            .expect("checksum");
        let sum = row
            .try_get::<Option<u64>, _>(1)
            .map(|v| format!("{v:?}"))
            .or_else(|_| row.try_get::<Option<i64>, _>(1).map(|v| format!("{v:?}")))
            .expect("checksum value");
        out.push(format!("{t}={sum}"));
    }
    let _ = c.execute("DO 1").await;
    out
}
