#!/usr/bin/env python3
"""Writes the sample legacy databases' data.sql files in migrations-examples/.

Each value is written as a hex literal, so the bytes land in the server exactly as a
broken application once put them there (legacy bytes through a latin1 connection,
mojibake left by a naive ALTER ... CONVERT TO utf8mb4). Deterministic: run it again
and nothing changes. Uses only Python's own codecs (an independent implementation
from ours) and MySQL's latin1 definition (cp1252 with the five holes kept as C1).
Python has no TCVN3 codec, so the Vietnamese sample is encoded with the VN3 table of
tests/data/oracles (the one scripts/gen_corpus.py uses, not our Rust tables), toned
capitals written the way VN3 fonts typed them: base capital byte + toned lower-case byte.
"""
import os
import struct
import unicodedata
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "migrations-examples")
ORACLES = os.path.join(HERE, "..", "tests", "data", "oracles")


def mysql_latin1_decode(b: bytes) -> str:
    # MySQL's latin1 is cp1252 whose five undefined bytes map to the C1 controls.
    return "".join(bytes([x]).decode("cp1252") if x not in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else chr(x) for x in b)


def tcvn3_table() -> dict:
    """char -> byte of VN3, read from the committed oracle file (0xA0..0xFF; ASCII below)."""
    enc = {chr(b): b for b in range(0x80)}
    with open(os.path.join(ORACLES, "tcvn3-vn3-subset-DERIVED.txt"), encoding="utf-8") as f:
        for line in f:
            parts = line.split("\t")
            if line.startswith("0x") and parts[1].startswith("0x") and int(parts[1], 16):
                enc[chr(int(parts[1], 16))] = int(parts[0], 16)
    return enc


TCVN3 = tcvn3_table()


def tcvn3(text: str) -> bytes:
    out = bytearray()
    for ch in unicodedata.normalize("NFC", text):
        if ch in TCVN3:
            out.append(TCVN3[ch])
            continue
        # A toned capital has no VN3 byte: the base capital, then the toned small letter.
        low = ch.lower()
        base = unicodedata.normalize(
            "NFC", "".join(c for c in unicodedata.normalize("NFD", ch) if c not in "\u0300\u0301\u0303\u0309\u0323")
        )
        if ch != low and low in TCVN3 and base in TCVN3:
            out += bytes([TCVN3[base], TCVN3[low]])
            continue
        raise ValueError(f"{ch!r} has no TCVN3 byte (in {text!r})")
    return bytes(out)


def hx(b: bytes) -> str:
    return "X'" + b.hex() + "'" if b else "''"


FORUM_USERS = [
    ("ivanov", "Иванов Сергей Петрович", "cp1251", "С уважением, Сергей"),
    ("anna_k", "Кузнецова Анна Владимировна", "koi8_r", "Пишите в личку"),
    ("fedor", "Фёдоров Михаил Юрьевич", "cp1251", "Всё будет хорошо!"),
    ("dos_import", "Смирнова Ольга", "cp866", "Импорт из старой базы"),
    ("unix_mail", "Попов Дмитрий", "iso8859_5", "Отправлено с почтового шлюза"),
]

FORUM_COMMENTS = [
    ("Привет всем! Подскажите, где купить запчасти для стиральной машины?", "cp1251", "windows"),
    ("Спасибо за быстрый ответ, всё заработало после перезагрузки.", "koi8_r", "mail"),
    ("Не могу войти в личный кабинет: пишет, что пароль неверный.", "cp866", "dos"),
    ("Модератор удалил мою тему без объяснения причин.", "iso8859_5", "unix"),
    ("Куплю велосипед в хорошем состоянии, недорого.", "cp1251", "windows"),
    ("Кто-нибудь знает, когда откроется новая станция метро?", "koi8_r", "mail"),
    ("Сегодня вечером будет сильный ветер и дождь со снегом.", "cp866", "dos"),
    ("Подробности читайте в следующем выпуске нашей газеты.", "cp1251", "windows"),
]

SHOP_ITEMS = [
    # (title, how it was stored)
    ("Чайник электрический, 1,7 л", "cp1251>latin1"),
    ("Кофеварка капельная, чёрная", "utf-8>latin1"),
    ("Пылесос беспроводной с двумя насадками", "cp1251>latin1"),
    ("Утюг с отпаривателем", "utf-8>latin1"),
    ("Микроволновая печь, 20 литров", "utf-8"),
    ("Набор кастрюль из нержавеющей стали", "cp1251>latin1"),
    ("Blue T-shirt XL", "ascii"),
    ("Сковорода с антипригарным покрытием", "utf-8>latin1"),
]


# A Vietnamese shop's catalogue from the VN3-font years: the PHP pages were set in .VnTime,
# so browsers sent TCVN3 bytes, stored through a latin1 connection into latin1 columns.
# Products added after the admin pages moved to UTF-8 went into the same columns as UTF-8
# bytes; brand-only names are plain ASCII.
VN_CATEGORIES = [
    ("DT", "Điện thoại di động"),
    ("MT", "Máy tính xách tay"),
    ("GD", "Đồ gia dụng"),
    ("TT", "Thời trang nữ"),
    ("TP", "Thực phẩm đặc sản"),
    ("VP", "Sách và văn phòng phẩm"),
]

VN_PRODUCTS = [
    # (category code, name, description, price in dong, how it was stored)
    ("GD", "Nồi cơm điện 1,8 lít", "Lòng nồi chống dính, giữ ấm suốt mười hai giờ, hợp với gia đình bốn người.", 690000, "tcvn3"),
    ("GD", "Quạt đứng ba tốc độ", "Cánh quạt lớn, chạy êm, có hẹn giờ tắt và điều khiển từ xa.", 450000, "tcvn3"),
    ("TT", "Áo dài lụa tơ tằm", "May đo theo số đo của khách, giao hàng trong vòng mười ngày.", 2500000, "tcvn3"),
    ("DT", "Điện thoại Nokia 1280", "Pin bền, loa to, bàn phím dễ bấm, thích hợp cho người lớn tuổi.", 390000, "tcvn3"),
    ("VP", "Từ điển Anh - Việt 75.000 từ", "Bìa cứng, in hai màu, có phần phiên âm quốc tế.", 120000, "tcvn3"),
    ("TP", "Cà phê Buôn Ma Thuột rang xay", "Hạt cà phê vối rang mộc, gói năm trăm gam, hương thơm đậm đà.", 95000, "tcvn3"),
    ("TP", "Nước mắm Phú Quốc 40 độ đạm", "Chai thủy tinh, ủ chượp trong thùng gỗ theo cách làm truyền thống.", 85000, "tcvn3"),
    ("MT", "Máy tính xách tay ThinkPad T61", "Đã qua sử dụng, bảo hành ba tháng, tặng kèm túi đựng.", 5200000, "tcvn3"),
    ("TP", "Bánh pía Sóc Trăng", "Nhân đậu xanh, sầu riêng và trứng muối; hộp bốn cái.", 60000, "tcvn3"),
    ("TT", "Nón lá Huế", "Nón bài thơ làm bằng lá cọ, vành tre chuốt tay, có quai lụa.", 70000, "tcvn3"),
    ("GD", "Ấm chén gốm Bát Tràng", "Men rạn cổ, vẽ tay hoa sen, bộ một ấm sáu chén.", 350000, "tcvn3"),
    ("VP", "Vở ô ly Hồng Hà", "Giấy trắng không lóa mắt, 96 trang, mua mười quyển được giảm giá.", 8000, "tcvn3"),
    ("DT", "Sony Ericsson K750i", None, 1800000, "ascii"),
    ("MT", "Dell Inspiron 1420", "Core 2 Duo T5450, RAM 2GB, HDD 160GB", 9900000, "ascii"),
    ("GD", "Bình giữ nhiệt inox 750 ml", "Giữ nóng sáu giờ, giữ lạnh mười hai giờ; nắp có khóa an toàn.", 180000, "utf-8"),
    ("TT", "Khăn choàng thổ cẩm Sa Pa", "Dệt tay bởi đồng bào H'Mông, mỗi chiếc một hoa văn riêng.", 150000, "utf-8"),
]

VN_STORES = [
    # (city, address, phone)
    ("Hà Nội", "Số 12 phố Hàng Bài, quận Hoàn Kiếm", "04 3825 1234"),
    ("Thành phố Hồ Chí Minh", "45 đường Lê Lợi, quận Một", "08 3829 5678"),
    ("Đà Nẵng", "78 đường Bạch Đằng, quận Hải Châu", "0511 382 2468"),
    ("Huế", "23 đường Lê Lợi, phường Vĩnh Ninh", "054 382 1357"),
    ("Cần Thơ", "9 đường Hai Bà Trưng, quận Ninh Kiều", "0710 381 9753"),
    ("Hải Phòng", "101 đường Lạch Tray, quận Ngô Quyền", "031 384 8642"),
]


def slug(text: str) -> str:
    """The ASCII URL slug a PHP site made from a name: tone marks and diacritics dropped."""
    plain = unicodedata.normalize("NFD", text.replace("Đ", "D").replace("đ", "d"))
    plain = "".join(c for c in plain if not unicodedata.combining(c)).lower()
    return "-".join("".join(c if c.isalnum() else " " for c in plain).split())


def vn_stored(text: str, how: str) -> bytes:
    if how == "tcvn3":
        return tcvn3(text)
    if how == "ascii":
        return text.encode("ascii")
    return text.encode("utf-8")


def stored_title(text: str, how: str) -> bytes:
    if how == "cp1251>latin1":
        return mysql_latin1_decode(text.encode("cp1251")).encode("utf-8")
    if how == "utf-8>latin1":
        return mysql_latin1_decode(text.encode("utf-8")).encode("utf-8")
    return text.encode("utf-8")


SHOP_CATEGORIES = [
    # (name, slug): names typed on cp1251 pages, stored through a latin1 connection
    ("Мелкая бытовая техника", "small-appliances"),
    ("Посуда и кухонные принадлежности", "cookware"),
    ("Уборка дома", "cleaning"),
    ("Одежда", "clothing"),
]

SHOP_IMAGES = [
    # (product id, caption in cp1251, format)
    (1, "Чайник, вид спереди", "png"),
    (3, "Пылесос с насадками", "jpeg"),
    (6, "Кастрюли в подарочной упаковке", "png"),
    (8, "Сковорода, вид сверху", "jpeg"),
]


def png(seed: int) -> bytes:
    """A real 4x4 RGB PNG (zlib level 0, so the bytes never depend on the zlib version)."""
    w = h = 4
    rows = b"".join(b"\x00" + bytes((seed * 37 + (y * w + x) * 53 + c * 101) % 256 for x in range(w) for c in range(3)) for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b"")


def jpeg(seed: int) -> bytes:
    """JPEG framing as a camera writes it (SOI, JFIF APP0, a quantisation table, EOI) around
    deterministic bytes: not a picture a viewer decodes, but the bytes a scan meets."""
    app0 = b"JFIF\x00\x01\x01\x00\x00\x48\x00\x48\x00\x00"
    dqt = b"\x00" + bytes((seed * 13 + i * 7) % 99 + 1 for i in range(64))
    body = bytes((seed * 59 + i * 131) % 256 for i in range(96)).replace(b"\xff", b"\xff\x00")
    return (
        b"\xff\xd8"
        + b"\xff\xe0" + struct.pack(">H", len(app0) + 2) + app0
        + b"\xff\xdb" + struct.pack(">H", len(dqt) + 2) + dqt
        + body
        + b"\xff\xd9"
    )


def write(path: str, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("-- Generated by scripts/gen_examples.py; do not edit by hand.\n")
        for line in lines:
            f.write(line + "\n")


def main():
    lines = []
    for i, (login, name, enc, sig) in enumerate(FORUM_USERS, 1):
        token = ("%032x" % (0x5EED * i * 7919))[-32:]
        lines.append(
            "INSERT INTO users (id, login, display_name, signature, api_token) VALUES "
            f"({i}, '{login}', {hx(name.encode(enc))}, {hx(sig.encode(enc))}, '{token}');"
        )
    for i, (text, enc, source) in enumerate(FORUM_COMMENTS, 1):
        lines.append(
            "INSERT INTO comments (topic_id, seq, user_id, body, source) VALUES "
            f"({1 + i % 3}, {i}, {1 + i % 5}, {hx(text.encode(enc))}, '{source}');"
        )
    write(os.path.join(OUT, "russian_forum", "data.sql"), lines)

    lines = []
    for i, (title, how) in enumerate(SHOP_ITEMS, 1):
        sku = "%08X" % (0xC0FFEE * i % 0xFFFFFFFF)
        lines.append(
            "INSERT INTO products (id, sku, title) VALUES "
            f"({i}, '{sku}', {hx(stored_title(title, how))});"
        )
    for i, (name, slug_) in enumerate(SHOP_CATEGORIES, 1):
        lines.append(
            f"INSERT INTO categories (id, name, slug) VALUES ({i}, {hx(name.encode('cp1251'))}, '{slug_}');"
        )
    for i, (product, caption, fmt) in enumerate(SHOP_IMAGES, 1):
        data = png(i) if fmt == "png" else jpeg(i)
        lines.append(
            "INSERT INTO product_images (id, product_id, caption, mime, data) VALUES "
            f"({i}, {product}, {hx(caption.encode('cp1251'))}, 'image/{fmt}', {hx(data)});"
        )
    write(os.path.join(OUT, "half_migrated_shop", "data.sql"), lines)

    lines = []
    for i, (code, name) in enumerate(VN_CATEGORIES, 1):
        lines.append(f"INSERT INTO danh_muc (id, code, name) VALUES ({i}, '{code}', {hx(tcvn3(name))});")
    codes = [c for c, _ in VN_CATEGORIES]
    for i, (code, name, desc, price, how) in enumerate(VN_PRODUCTS, 1):
        sku = f"VN-{code}-{i:04d}"
        lines.append(
            "INSERT INTO san_pham (id, sku, category_id, name, slug, description, price_vnd) VALUES "
            f"({i}, '{sku}', {codes.index(code) + 1}, {hx(vn_stored(name, how))}, '{slug(name)}', "
            f"{hx(vn_stored(desc, how)) if desc else 'NULL'}, {price});"
        )
    for i, (city, address, phone) in enumerate(VN_STORES, 1):
        lines.append(
            "INSERT INTO cua_hang (id, city, address, phone) VALUES "
            f"({i}, {hx(tcvn3(city))}, {hx(tcvn3(address))}, '{phone}');"
        )
    write(os.path.join(OUT, "vietnamese_catalogue", "data.sql"), lines)


if __name__ == "__main__":
    main()
