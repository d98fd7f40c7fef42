-- A shop half-way through its move to utf8mb4.
--
-- Migrated half: `products` went through `ALTER TABLE ... CONVERT TO CHARACTER SET utf8mb4`
-- while its latin1 columns held cp1251 (now mojibake such as "×àéíèê"), next to rows a
-- UTF-8 client wrote through a latin1 connection (double-encoded UTF-8); its SKUs are
-- ASCII hex tokens, left latin1.
CREATE TABLE products (
  id INT NOT NULL PRIMARY KEY,
  sku CHAR(8) CHARACTER SET latin1 NOT NULL,
  title VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  UNIQUE KEY u_sku (sku)
) ENGINE=InnoDB;

-- Not yet migrated: latin1 tables the old PHP code filled through a latin1 connection.
-- `categories` dates from the MySQL 5.x years (ROW_FORMAT=COMPACT): its unique index on a
-- VARCHAR(255) takes 255 bytes in latin1 but would need 1020 under utf8mb4, over the
-- 767-byte limit of a COMPACT index column. Names are cp1251; slugs are ASCII.
CREATE TABLE categories (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  slug VARCHAR(255) NOT NULL,
  UNIQUE KEY u_name (name),
  KEY k_slug (slug)
) ENGINE=InnoDB DEFAULT CHARSET=latin1 ROW_FORMAT=COMPACT;

-- Product photos as the PHP code stored them: file_get_contents() into a latin1 MEDIUMTEXT
-- (PNG and JPEG bytes in a text column), with a cp1251 caption and an ASCII MIME type.
CREATE TABLE product_images (
  id INT NOT NULL PRIMARY KEY,
  product_id INT NOT NULL,
  caption VARCHAR(200) NOT NULL,
  mime VARCHAR(32) NOT NULL,
  data MEDIUMTEXT NOT NULL,
  KEY k_product (product_id)
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
